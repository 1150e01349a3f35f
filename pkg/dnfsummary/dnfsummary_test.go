package dnfsummary

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// versions are the DNF releases the testdata was captured from (see testdata/README.md).
var versions = []string{"4.14", "4.23"}

func mv(a Action, name, evr, repo string) Move {
	return Move{Name: name, Arch: "noarch", EVR: evr, Repo: repo, Action: a}
}

const (
	longName = "ds-a-rather-long-package-name-to-force-wrapping"
	longEVR  = "1.0.0.20240101.gitabcdef0123456789-1.a.long.release.string"
	longRepo = "a-very-long-repository-id-for-wrapping"
	shortEVR = "12.3.4.5.6.7.8.9.10.11.12.13-1.2.3.4.5.6.7.8"
)

var (
	longMoves = []Move{
		mv(ActionInstall, longName, longEVR, longRepo),
		mv(ActionInstall, "ds-short", shortEVR, longRepo),
		mv(ActionInstall, "ds-plain", "1.0-1", "dsmain"),
	}
	toolMoves = []Move{
		mv(ActionInstall, "ds-tool", "1.0-1", "dsmain"),
		mv(ActionInstall, "ds-helper", "1.0-1", "dsmain"),
	}
	appDepMoves = []Move{
		mv(ActionInstall, "ds-app", "1.0-1", "dsmain"),
		mv(ActionInstall, "ds-lib", "1.0-1", "dsmain"),
	}
	upgradeMoves = []Move{
		mv(ActionUpgrade, "ds-app", "2.0-1", "dsmain"),
		mv(ActionUpgrade, "ds-lib", "2.0-1", "dsmain"),
	}
	downgradeMoves = []Move{
		mv(ActionDowngrade, "ds-app", "1.0-1", "dsmain"),
		mv(ActionDowngrade, "ds-lib", "1.0-1", "dsmain"),
	}
	obsoleteMoves = []Move{
		mv(ActionInstall, "ds-new", "2.0-1", "dsmain"),
		mv(ActionObsolete, "ds-old", "1.0-1", ""),
	}
)

// captured lists every testdata case, by the name after the version prefix, with what
// Parse must make of DNF's standard output.
var captured = []struct {
	name    string
	want    []Move
	err     error  // sentinel the error must wrap
	errText string // and a part of its message
	only    string // a DNF version, when the case was captured from that one only
}{
	{name: "install_plain", want: []Move{mv(ActionInstall, "ds-plain", "1.0-1", "dsmain")}},
	{name: "install_dep", want: appDepMoves},
	{name: "install_dep_tty80_color", want: appDepMoves},
	{name: "install_weak", want: toolMoves},
	{name: "install_weak_c_utf8", want: toolMoves},
	{name: "install_n", want: toolMoves},
	{name: "install_epoch", want: []Move{mv(ActionInstall, "ds-epoch", "3:1.5-2", "dsmain")}},
	{name: "install_long", want: longMoves},
	{name: "install_long_tty80", want: longMoves},
	{name: "install_long_tty60", want: longMoves},
	{name: "commandline", want: []Move{mv(ActionInstall, "ds-plain", "1.0-1", "@commandline")}},
	{name: "upgrade_forced", want: upgradeMoves},
	{name: "upgrade_dep", want: upgradeMoves},
	{name: "upgrade_mixed", want: []Move{
		mv(ActionInstall, "ds-tool", "1.0-1", "dsmain"),
		mv(ActionUpgrade, "ds-app", "2.0-1", "dsmain"),
		mv(ActionUpgrade, "ds-lib", "2.0-1", "dsmain"),
		mv(ActionInstall, "ds-helper", "1.0-1", "dsmain"),
	}},
	{name: "downgrade_set", want: downgradeMoves},
	{name: "downgrade_forced", want: downgradeMoves},
	{name: "downgrade_epoch", want: []Move{mv(ActionDowngrade, "ds-epoch", "3:1.4-1", "dsmain")}},
	{name: "remove_dependents", want: []Move{
		mv(ActionRemove, "ds-lib", "2.0-1", "@dsmain"),
		mv(ActionRemove, "ds-app", "2.0-1", "@dsmain"),
	}},
	{name: "remove_unused", want: []Move{
		mv(ActionRemove, "ds-app", "2.0-1", "@dsmain"),
		mv(ActionRemove, "ds-lib", "2.0-1", "@dsmain"),
	}},
	{name: "erase_conflict_allowerasing", want: []Move{
		mv(ActionUpgrade, "ds-conflict", "2.0-1", "dsmain"),
		mv(ActionRemove, "ds-plain", "1.0-1", "@dsmain"),
	}},
	{name: "reinstall", want: []Move{mv(ActionReinstall, "ds-plain", "1.0-1", "dsmain")}},
	{name: "obsolete", want: obsoleteMoves},
	{name: "skip_broken_upgrade", want: obsoleteMoves},
	{name: "skip_broken_install", want: toolMoves},
	{name: "skip_conflicts", want: nil},
	{name: "group", want: []Move{
		mv(ActionInstall, "ds-plain", "1.0-1", "dsmain"),
		mv(ActionInstall, "ds-tool", "1.0-1", "dsmain"),
		mv(ActionInstall, "ds-helper", "1.0-1", "dsmain"),
	}, only: "4.14"}, // DNF 4.23 in the trixie image crashes (SIGSEGV) on group install
	{name: "noop", want: nil},
	{name: "remove_absent", want: nil},
	{name: "unavailable", err: ErrNoSummary, errText: `"No match for argument: ds-nope-0:1.0-1.noarch"`},
	{name: "unavailable_n", err: ErrNoSummary, errText: `"No match for argument: ds-nope"`},
	{name: "conflict_error", err: ErrNoSummary, errText: "try to add '--allowerasing'"},
	{name: "erase_conflict", err: ErrNoSummary, errText: "try to add '--allowerasing'"},
	{name: "quiet", err: ErrNoSummary, errText: "-q"},
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(b)
}

func TestParseCaptured(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range captured {
		for _, v := range versions {
			if c.only != "" && c.only != v {
				continue
			}
			file := "dnf-" + v + "_" + c.name + ".txt"
			covered[file] = true
			t.Run(file, func(t *testing.T) {
				got, err := Parse(readTestdata(t, file))
				if c.err != nil {
					require.ErrorIs(t, err, c.err)
					assert.Contains(t, err.Error(), c.errText)
					assert.Nil(t, got)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, c.want, got)
			})
		}
	}
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	for _, f := range files {
		assert.True(t, covered[filepath.Base(f)], "%s has no expectation in captured", f)
	}
}

// TestParseWithStderr feeds standard error after standard output, as a caller holding
// combined output would: the result must not change, except that DNF's own error line
// explains a missing table.
func TestParseWithStderr(t *testing.T) {
	for _, c := range captured {
		for _, v := range versions {
			base := "dnf-" + v + "_" + c.name
			stderr, err := os.ReadFile(filepath.Join("testdata", base+".stderr"))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			require.NoError(t, err)
			t.Run(base, func(t *testing.T) {
				got, err := Parse(readTestdata(t, base+".txt") + string(stderr))
				if c.err != nil {
					require.ErrorIs(t, err, c.err)
					if strings.HasPrefix(string(stderr), "Error:") {
						assert.Contains(t, err.Error(), `DNF said "Error: `)
					}
					return
				}
				require.NoError(t, err)
				assert.Equal(t, c.want, got)
			})
		}
	}
}

// table builds DNF 4 output around body rows for the synthetic cases below.
func table(body, summary string) string {
	rule := strings.Repeat("=", 80)
	return "Dependencies resolved.\n" + rule + "\n" +
		" Package           Architecture      Version            Repository         Size\n" +
		rule + "\n" + body + "\nTransaction Summary\n" + rule + "\n" + summary +
		"\nTotal size: 5.9 k\n"
}

func TestParseShapes(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Move
	}{
		{"module sections are not moves",
			table("Installing group/module packages:\n"+
				" nodejs            x86_64            1:18.19.0-1.module  appstream          12 M\n"+
				"Installing module profiles:\n nodejs/common\n"+
				"Enabling module streams:\n nodejs                               18\n",
				"Install  1 Package\n"),
			[]Move{{Name: "nodejs", Arch: "x86_64", EVR: "1:18.19.0-1.module", Repo: "appstream", Action: ActionInstall}}},
		{"size in bytes and several replaced packages",
			table("Upgrading:\n"+
				" a.b               noarch            2.0-1              r                   512\n"+
				"     replacing  old.one.noarch 1.0-1\n"+
				"     replacing  old-two.x86_64 2:1.0-1.el9\n",
				"Upgrade  1 Package\n"),
			[]Move{mv(ActionUpgrade, "a.b", "2.0-1", "r"),
				mv(ActionObsolete, "old.one", "1.0-1", ""),
				{Name: "old-two", Arch: "x86_64", EVR: "2:1.0-1.el9", Action: ActionObsolete}}},
		{"broken dependencies advice heading and skip-only table",
			"Dependencies resolved.\n" + table("Skipping packages with conflicts:\n"+
				"(add '--best' to command line to force their upgrade):\n"+
				" x                 noarch            2.0-1              r                  1.0 M\n",
				"Skip  1 Package\n") + "Nothing to do.\nComplete!\n",
			nil},
		{"summary at the end of input",
			strings.TrimSuffix(table("Removing:\n x  noarch  1-1  @System  0\n", "Remove  1 Package"), "\nTotal size: 5.9 k\n"),
			[]Move{mv(ActionRemove, "x", "1-1", "@System")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	row := " ds-plain          noarch            1.0-1              dsmain            5.9 k\n"
	good := table("Installing:\n"+row, "Install  1 Package\n")
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "no DNF transaction summary"},
		{"dnf error appended", "Error: \n Problem: conflicting requests\n", `DNF said "Error: Problem: conflicting requests"`},
		{"translated heading", strings.Replace(good, "Installing:", "Installation :", 1), `line 5 "Installation :": not a known DNF 4 section heading`},
		{"translated header", strings.Replace(good, " Package ", " Paquet  ", 1), `line 3 " Paquet  `},
		{"unknown heading", strings.Replace(good, "Installing:", "Frobbing:", 1), "not a known DNF 4 section heading"},
		{"heading without colon", strings.Replace(good, "Installing:", "Installing", 1), "not a known DNF 4 section heading"},
		{"row before heading", strings.Replace(good, "Installing:\n", "", 1), "row before any section heading"},
		{"missing size", strings.Replace(good, "5.9 k", "", 1), "row has 4 fields"},
		{"extra field", strings.Replace(good, "5.9 k", "5.9 k x", 1), "row has 7 fields"},
		{"bad unit", strings.Replace(good, "5.9 k", "5.9 q", 1), `size unit "q"`},
		{"fractional bytes", strings.Replace(good, "5.9 k", "5.9", 1), `size "5.9" is not a number of bytes`},
		{"bad size", strings.Replace(good, "5.9 k", "x k", 1), `size "x" is not a number`},
		{"bad arch", strings.Replace(good, "noarch", "no-arch", 1), `architecture "no-arch"`},
		{"bad evr", strings.Replace(good, "1.0-1 ", "1.0   ", 1), `version "1.0" is not`},
		{"count mismatch", strings.Replace(good, "Install  1 Package", "Install  2 Packages", 1), "the table lists 1 such packages"},
		{"count missing", strings.Replace(good, "Install  1 Package", "Upgrade  1 Package", 1), "the table lists 0"},
		{"no count", strings.Replace(good, "Install  1 Package\n", "", 1), "no Install count for the 1"},
		{"unknown count", strings.Replace(good, "Install  1 Package", "Frob  1 Package", 1), "not a summary count"},
		{"repeated count", strings.Replace(good, "Install  1 Package", "Install  1 Package\nInstall  1 Package", 1), "second count for Install"},
		{"no summary rule", strings.Replace(good, "Transaction Summary\n"+strings.Repeat("=", 80), "Transaction Summary\n", 1), "not followed by a rule"},
		{"truncated", good[:strings.Index(good, "Transaction Summary")], "no \"Transaction Summary\" after the table"},
		{"truncated header", "Dependencies resolved.\n=====\n Package Arch\n", "table header does not end with a rule"},
		{"continuation without row", table("Installing:\n   noarch  1.0-1  dsmain  5.9 k\n", "Install  1 Package\n"), "indented line that continues no row"},
		{"replacing without row", table("Installing:\n     replacing  a.noarch 1-1\n", ""), `"replacing" line without a package row`},
		{"replacing after skipped", table("Skipping packages with broken dependencies:\n"+row+"     replacing  a.noarch 1-1\n", "Skip  1 Package\n"), `"replacing" line without`},
		{"replacing without arch", table("Installing:\n"+row+"     replacing  a 1-1\n", "Install  1 Package\n"), `"a" has no architecture`},
		{"replacing bad fields", table("Installing:\n"+row+"     replacing  a.noarch  1-1\n", "Install  1 Package\n"), "replacing  NAME.ARCH EVR"},
		{"empty line in table", strings.Replace(good, "Installing:\n", "\nInstalling:\n", 1), "empty line inside the table"},
		{"spaces in table", strings.Replace(good, "Installing:\n", "Installing:\n   \n", 1), "line of spaces"},
		{"control character", strings.Replace(good, "dsmain ", "ds\tmain", 1), "control character"},
		{"unknown escape", strings.Replace(good, "ds-plain", "\x1b]0;x\x07ds-plain", 1), "unknown escape sequence"},
		{"escape at end", strings.Replace(good, "5.9 k", "5.9 k\x1b", 1), "unknown escape sequence"},
		{"advice without conflicts heading", strings.Replace(good, "Installing:\n", "Installing:\n(add '--best' to command line to force their upgrade):\n", 1), "not a known DNF 4 section heading"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.in)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.True(t, errors.Is(err, ErrFormat) || errors.Is(err, ErrNoSummary), "%v wraps neither sentinel", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestActionKnown(t *testing.T) {
	for _, a := range []Action{ActionInstall, ActionUpgrade, ActionDowngrade, ActionRemove, ActionReinstall, ActionObsolete} {
		assert.True(t, a.Known(), a)
	}
	assert.False(t, Action("").Known())
	assert.False(t, Action("skip").Known())
}

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(f, err)
	for _, file := range files {
		out := readTestdata(f, filepath.Base(file))
		f.Add(out)
		if stderr, err := os.ReadFile(strings.TrimSuffix(file, ".txt") + ".stderr"); err == nil {
			f.Add(out + string(stderr))
		}
	}
	f.Fuzz(func(t *testing.T, out string) {
		moves, err := Parse(out)
		if err != nil {
			if moves != nil {
				t.Fatalf("moves %v returned with error %v", moves, err)
			}
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrNoSummary) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		for _, m := range moves {
			if m.Name == "" || !m.Action.Known() {
				t.Fatalf("bad move %+v", m)
			}
		}
	})
}
