package configfile

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitArgs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"   \t\n", nil, ""},
		{"nginx -t -c %s", []string{"nginx", "-t", "-c", "%s"}, ""},
		{"  visudo   -cf\t%s  ", []string{"visudo", "-cf", "%s"}, ""},
		{`sh -c 'test -s "$1"' check %s`, []string{"sh", "-c", `test -s "$1"`, "check", "%s"}, ""},
		{`a "b c" d`, []string{"a", "b c", "d"}, ""},
		{`a "say \"hi\" \\ \n"`, []string{"a", `say "hi" \ \n`}, ""},
		{`a\ b c\"d \'e`, []string{"a b", `c"d`, "'e"}, ""},
		{`'' ""`, []string{"", ""}, ""},
		{`x''y"z"w`, []string{"xyzw"}, ""},
		{`--config=%s`, []string{"--config=%s"}, ""},
		{`echo $HOME * | > ;`, []string{"echo", "$HOME", "*", "|", ">", ";"}, ""},
		{`'a\b'`, []string{`a\b`}, ""},
		{"a 'b", nil, "the single quote at position 3 is never closed"},
		{`a "b`, nil, "the double quote at position 3 is never closed"},
		{`a "b\"`, nil, "the double quote at position 3 is never closed"},
		{`a \`, nil, "ends in a backslash"},
	} {
		got, err := SplitArgs(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
}

// quote is a word as a shell reads it back: in single quotes, a quote closed, escaped and
// opened again.
func quote(w string) string { return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'" }

// FuzzSplitArgs: any input splits or is refused without a panic; the words of a split,
// quoted and joined, split back into the same words; input without quotes or backslashes
// splits as strings.Fields would on the shell's blanks.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{"nginx -t -c %s", `sh -c 'x "y"' %s`, `a\ b "c\"d" ''`, `"`, `\`, "a\tb\nc", "ü 'ö' \"ä\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitArgs(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			if utf8.ValidString(s) && !utf8.ValidString(w) {
				t.Fatalf("%q: word %q is not valid UTF-8 though the input is", s, w)
			}
			quoted[i] = quote(w)
		}
		again, err := SplitArgs(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("%q: the quoted words %q do not split: %v", s, quoted, err)
		}
		if len(again) != len(words) || (len(words) > 0 && !equal(again, words)) {
			t.Fatalf("%q: split %q, quoted and split again %q", s, words, again)
		}
		if !strings.ContainsAny(s, `'"\`) {
			fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
			if len(fields) != len(words) || (len(words) > 0 && !equal(fields, words)) {
				t.Fatalf("%q: split %q, fields %q", s, words, fields)
			}
		}
	})
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
