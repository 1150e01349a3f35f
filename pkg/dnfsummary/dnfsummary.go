// Package dnfsummary reads the transaction table DNF 4 prints before it asks for
// confirmation, so that a check mode can run DNF with --assumeno and report which packages
// the transaction would install, upgrade, downgrade, reinstall or remove without changing
// anything.
//
// The table is read, not guessed at: a line this package cannot account for is an error
// that names it. The parser knows the English wording only, so callers must run DNF in the
// C locale (LANG=C or LC_ALL=C.UTF-8; both leave the messages untranslated). It was written
// against the output of DNF 4.14 and 4.23; DNF 5 prints a different table, which it does
// not read.
package dnfsummary

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// sectionKind says what the rows under a heading are.
type sectionKind int

const (
	sectionPackages sectionKind = iota // rows are Moves
	sectionSkipped                     // rows are packages DNF leaves alone
	sectionOther                       // rows are groups or modules, not packages
)

type section struct {
	kind   sectionKind
	action Action
}

// sections maps DNF 4's headings (without the colon) to what their rows mean. The group
// and module sections repeat, in other terms, changes whose packages are listed in package
// sections, so their rows are skipped rather than read.
var sections = map[string]section{
	"Installing":                       {sectionPackages, ActionInstall},
	"Installing group/module packages": {sectionPackages, ActionInstall},
	"Installing group packages":        {sectionPackages, ActionInstall},
	"Installing dependencies":          {sectionPackages, ActionInstall},
	"Installing weak dependencies":     {sectionPackages, ActionInstall},
	"Upgrading":                        {sectionPackages, ActionUpgrade},
	"Reinstalling":                     {sectionPackages, ActionReinstall},
	"Removing":                         {sectionPackages, ActionRemove},
	"Removing dependent packages":      {sectionPackages, ActionRemove},
	"Removing unused dependencies":     {sectionPackages, ActionRemove},
	"Downgrading":                      {sectionPackages, ActionDowngrade},

	"Skipping packages with conflicts":                              {kind: sectionSkipped},
	"Skipping packages with broken dependencies":                    {kind: sectionSkipped},
	"Skipping packages with broken dependencies or part of a group": {kind: sectionSkipped},

	"Installing module profiles":    {kind: sectionOther},
	"Disabling module profiles":     {kind: sectionOther},
	"Enabling module streams":       {kind: sectionOther},
	"Switching module streams":      {kind: sectionOther},
	"Disabling modules":             {kind: sectionOther},
	"Resetting modules":             {kind: sectionOther},
	"Installing Environment Groups": {kind: sectionOther},
	"Upgrading Environment Groups":  {kind: sectionOther},
	"Removing Environment Groups":   {kind: sectionOther},
	"Installing Groups":             {kind: sectionOther},
	"Upgrading Groups":              {kind: sectionOther},
	"Removing Groups":               {kind: sectionOther},
}

// The conflicts heading carries a second line of advice, such as
// "(add '--best --allowerasing' to command line to force their upgrade):".
var conflictAdvice = regexp.MustCompile(`^\(add '[^']*' to command line to force their upgrade\):$`)

// replacingPrefix starts the line DNF adds under a row for each package it obsoletes.
const replacingPrefix = "     replacing  "

var (
	archRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
	// Neither version nor release may hold '-' or ':' in RPM, which is what makes the
	// printed EVR splittable.
	evrRE     = regexp.MustCompile(`^(?:[0-9]+:)?[^\s:-]+-[^\s:-]+$`)
	sizeRE    = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?$`)
	summaryRE = regexp.MustCompile(`^(Install|Upgrade|Remove|Downgrade|Skip) +([0-9]+) Packages?$`)
)

// Parse reads the transaction table in out, DNF 4's standard output (standard error may
// be appended: nothing after the summary counts is read). It returns the moves in the
// order DNF lists them, and no moves and no error when DNF printed "Nothing to do." and
// no table. Packages DNF says it skips, and group or module records, are not moves.
//
// Run DNF for it as "dnf -y --assumeno COMMAND -- SPEC..." in the C locale and without -q,
// which hides the table. A table DNF wrapped for a narrow terminal or coloured is read
// too; output through a pipe, as the project's runner captures it, is never wrapped.
//
// Parse checks its reading against DNF's own "Transaction Summary" counts. It reads only
// the table: messages elsewhere, such as "No match for argument", are the caller's to judge
// together with DNF's exit status.
func Parse(out string) ([]Move, error) {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r") // output captured through a terminal
	}
	top := -1
	for i, l := range lines {
		if isRule(l) {
			top = i
			break
		}
	}
	if top < 0 {
		for _, l := range lines {
			if l == "Nothing to do." {
				return nil, nil
			}
		}
		return nil, noSummary(lines)
	}
	p := parser{lines: lines}
	body, err := p.header(top)
	if err != nil {
		return nil, err
	}
	end, err := p.body(body)
	if err != nil {
		return nil, err
	}
	if err := p.summary(end); err != nil {
		return nil, err
	}
	return p.moves, nil
}

// noSummary explains a missing table with DNF's own message, if the output has one: an
// error line first (present when standard error was appended), then the messages DNF
// prints on standard output when it gives up.
func noSummary(lines []string) error {
	for _, prefix := range []string{"Error:", "No match for argument:", "(try to add "} {
		for i, l := range lines {
			if !strings.HasPrefix(l, prefix) {
				continue
			}
			// DNF puts a dependency problem on the lines after a bare "Error: ".
			if strings.TrimSpace(l) == "Error:" && i+1 < len(lines) {
				l = "Error: " + strings.TrimSpace(lines[i+1])
			}
			return fmt.Errorf("%w: DNF said %q", ErrNoSummary, l)
		}
	}
	return fmt.Errorf("%w and no %q in the output (was DNF run with -q?)", ErrNoSummary, "Nothing to do.")
}

func isRule(l string) bool {
	return l != "" && strings.Trim(l, "=") == ""
}

type parser struct {
	lines []string
	moves []Move
	// counts of rows per summary word ("Install", "Skip", ...), to check against DNF's.
	counts map[string]int
}

func (p *parser) errorf(i int, format string, args ...any) error {
	return fmt.Errorf("%w: line %d %q: %s", ErrFormat, i+1, p.lines[i], fmt.Sprintf(format, args...))
}

// clean returns line i without terminal colour codes and refuses control characters, which
// DNF never puts into the table otherwise.
func (p *parser) clean(i int) (string, error) {
	l := p.lines[i]
	if !strings.ContainsRune(l, '\x1b') {
		for _, r := range l {
			if r < 0x20 || r == 0x7f {
				return "", p.errorf(i, "control character %q", r)
			}
		}
		return l, nil
	}
	var b strings.Builder
	for j := 0; j < len(l); j++ {
		c := l[j]
		if c == '\x1b' {
			n := escapeLen(l[j:])
			if n == 0 {
				return "", p.errorf(i, "unknown escape sequence at column %d", j+1)
			}
			j += n - 1
			continue
		}
		if c < 0x20 || c == 0x7f {
			return "", p.errorf(i, "control character %q", c)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// escapeLen is the length of the terminal escape sequence at the start of s, 0 if it is
// not one that DNF's colours use: CSI sequences (ESC [ ... final byte) and character-set
// designations (ESC ( B), which terminfo's sgr0 emits.
func escapeLen(s string) int {
	if len(s) < 3 {
		return 0
	}
	switch s[1] {
	case '(', ')':
		return 3
	case '[':
		for k := 2; k < len(s); k++ {
			switch c := s[k]; {
			case c >= 0x40 && c <= 0x7e:
				return k + 1
			case c < 0x20 || c > 0x3f:
				return 0
			}
		}
	}
	return 0
}

// header checks the column header between the rules starting at line top, which DNF wraps
// like any row on a narrow terminal, and returns the index of the first body line.
func (p *parser) header(top int) (int, error) {
	var words []string
	for i := top + 1; i < len(p.lines); i++ {
		l, err := p.clean(i)
		if err != nil {
			return 0, err
		}
		if isRule(l) {
			if err := checkHeader(words); err != nil {
				return 0, p.errorf(top+1, "%v (run DNF with LANG=C)", err)
			}
			return i + 1, nil
		}
		words = append(words, strings.Fields(l)...)
	}
	return 0, p.errorf(top, "table header does not end with a rule")
}

func checkHeader(words []string) error {
	want := [][]string{{"Package"}, {"Arch", "Architecture"}, {"Version"}, {"Repo", "Repository"}, {"Size"}}
	if len(words) != len(want) {
		return fmt.Errorf("header %q is not DNF 4's", strings.Join(words, " "))
	}
	for k, alts := range want {
		found := false
		for _, a := range alts {
			found = found || words[k] == a
		}
		if !found {
			return fmt.Errorf("header %q is not DNF 4's", strings.Join(words, " "))
		}
	}
	return nil
}

// row is one table row being collected over the lines DNF wrapped it onto.
type row struct {
	line  int // first line, for errors
	words []string
}

// body reads the sections from line start up to "Transaction Summary" and returns the index
// of that line.
func (p *parser) body(start int) (int, error) {
	p.counts = map[string]int{}
	var (
		cur     *section
		pending *row
		// lastPkg is true while a "replacing" line may follow: right after a package row
		// or another replacing line.
		lastPkg    bool
		afterHead  = -1 // index of the last heading line, for the conflicts advice
		blankSince = -1 // first of the empty lines seen, which may only precede the summary
	)
	flush := func() error {
		if pending == nil {
			return nil
		}
		r := pending
		pending = nil
		m, err := p.readRow(r)
		if err != nil {
			return err
		}
		switch cur.kind {
		case sectionPackages:
			m.Action = cur.action
			p.moves = append(p.moves, m)
			p.counts[summaryWord(cur.action)]++
			lastPkg = true
		case sectionSkipped:
			p.counts["Skip"]++
		}
		return nil
	}
	for i := start; i < len(p.lines); i++ {
		l, err := p.clean(i)
		if err != nil {
			return 0, err
		}
		if l == "Transaction Summary" {
			if err := flush(); err != nil {
				return 0, err
			}
			return i, nil
		}
		if l == "" {
			if err := flush(); err != nil {
				return 0, err
			}
			if blankSince < 0 {
				blankSince = i
			}
			continue
		}
		// DNF leaves one empty line before "Transaction Summary" and none inside the table.
		if blankSince >= 0 {
			return 0, p.errorf(blankSince, "empty line inside the table")
		}
		switch {
		case l[0] != ' ': // a heading
			if err := flush(); err != nil {
				return 0, err
			}
			lastPkg = false
			if cur != nil && cur.kind == sectionSkipped && afterHead == i-1 && conflictAdvice.MatchString(l) {
				continue
			}
			s, ok := sections[strings.TrimSuffix(l, ":")]
			if !ok || !strings.HasSuffix(l, ":") {
				return 0, p.errorf(i, "not a known DNF 4 section heading (run DNF with LANG=C)")
			}
			cur, afterHead = &s, i
		case cur == nil:
			return 0, p.errorf(i, "row before any section heading")
		case cur.kind == sectionOther:
			// Group and module rows: names may hold spaces and wrap, and are not packages.
		case strings.TrimSpace(l) == "":
			return 0, p.errorf(i, "line of spaces inside the table")
		case strings.HasPrefix(l, replacingPrefix):
			if err := flush(); err != nil {
				return 0, err
			}
			if !lastPkg {
				return 0, p.errorf(i, "%q line without a package row above it", "replacing")
			}
			m, err := p.readReplacing(i, strings.TrimPrefix(l, replacingPrefix))
			if err != nil {
				return 0, err
			}
			p.moves = append(p.moves, m)
		case l[1] != ' ': // a row starts: DNF indents every row by one space
			if err := flush(); err != nil {
				return 0, err
			}
			lastPkg = false
			pending = &row{line: i, words: strings.Fields(l)}
		default: // a wrapped row goes on, indented to the column it continues in
			if pending == nil {
				return 0, p.errorf(i, "indented line that continues no row")
			}
			pending.words = append(pending.words, strings.Fields(l)...)
		}
	}
	return 0, fmt.Errorf("%w: no %q after the table", ErrFormat, "Transaction Summary")
}

// readRow reads NAME ARCH EVR REPO SIZE, where SIZE is a number and an optional unit
// ("5.9 k", "7"); no other field may hold spaces, so the row splits on them unambiguously.
func (p *parser) readRow(r *row) (Move, error) {
	w := r.words
	if len(w) == 6 {
		if len(w[5]) != 1 || !strings.Contains("kMGTPEZY", w[5]) {
			return Move{}, p.errorf(r.line, "size unit %q is not DNF's", w[5])
		}
		if !sizeRE.MatchString(w[4]) {
			return Move{}, p.errorf(r.line, "size %q is not a number", w[4])
		}
	} else if len(w) == 5 {
		// Without a unit the size is a whole number of bytes.
		if _, err := strconv.ParseUint(w[4], 10, 64); err != nil {
			return Move{}, p.errorf(r.line, "size %q is not a number of bytes", w[4])
		}
	} else {
		return Move{}, p.errorf(r.line, "row has %d fields, want name, arch, version, repository and size", len(w))
	}
	m := Move{Name: w[0], Arch: w[1], EVR: w[2], Repo: w[3]}
	if err := checkNAE(m); err != nil {
		return Move{}, p.errorf(r.line, "%v", err)
	}
	return m, nil
}

// readReplacing reads "NAME.ARCH EVR" from a replacing line. The name may hold dots, the
// architecture may not, so the last dot separates them.
func (p *parser) readReplacing(i int, rest string) (Move, error) {
	w := strings.Split(rest, " ")
	if len(w) != 2 {
		return Move{}, p.errorf(i, "want %q", "replacing  NAME.ARCH EVR")
	}
	dot := strings.LastIndexByte(w[0], '.')
	if dot < 0 {
		return Move{}, p.errorf(i, "%q has no architecture", w[0])
	}
	m := Move{Name: w[0][:dot], Arch: w[0][dot+1:], EVR: w[1], Action: ActionObsolete}
	if err := checkNAE(m); err != nil {
		return Move{}, p.errorf(i, "%v", err)
	}
	return m, nil
}

func checkNAE(m Move) error {
	switch {
	case m.Name == "":
		return errors.New("empty package name")
	case !archRE.MatchString(m.Arch):
		return fmt.Errorf("architecture %q is not one", m.Arch)
	case !evrRE.MatchString(m.EVR):
		return fmt.Errorf("version %q is not [EPOCH:]VERSION-RELEASE", m.EVR)
	}
	return nil
}

// summaryWord is the word DNF's summary counts an action's rows under.
func summaryWord(a Action) string {
	switch a {
	case ActionInstall:
		return "Install"
	case ActionUpgrade:
		return "Upgrade"
	case ActionRemove:
		return "Remove"
	case ActionDowngrade:
		return "Downgrade"
	}
	return "" // reinstalls are not counted in DNF 4's summary
}

// summary checks the counts under "Transaction Summary" (line at) against the rows read,
// so that a row read wrongly or not at all cannot pass unnoticed.
func (p *parser) summary(at int) error {
	if at+1 >= len(p.lines) || !isRule(p.lines[at+1]) {
		return p.errorf(at, "not followed by a rule")
	}
	seen := map[string]bool{}
	for i := at + 2; i < len(p.lines) && p.lines[i] != ""; i++ {
		l, err := p.clean(i)
		if err != nil {
			return err
		}
		m := summaryRE.FindStringSubmatch(l)
		if m == nil {
			return p.errorf(i, "not a summary count (run DNF with LANG=C)")
		}
		if seen[m[1]] {
			return p.errorf(i, "second count for %s", m[1])
		}
		seen[m[1]] = true
		n, err := strconv.Atoi(m[2])
		if err != nil {
			return p.errorf(i, "count: %v", err)
		}
		if n != p.counts[m[1]] {
			return p.errorf(i, "the table lists %d such packages", p.counts[m[1]])
		}
	}
	for word, n := range p.counts {
		if word != "" && n > 0 && !seen[word] {
			return p.errorf(at, "no %s count for the %d such packages the table lists", word, n)
		}
	}
	return nil
}
