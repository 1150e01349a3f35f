package configfile

import (
	"fmt"
	"strings"
)

// SplitArgs splits a command line into words as a POSIX shell would, without a shell:
// blanks separate words; single quotes keep everything up to the next one as it is;
// double quotes keep everything but a backslash before " or \, which stands for that
// character; outside quotes a backslash stands for the character after it. Nothing is
// expanded: no variables, globs, redirections or pipes (those characters are kept in the
// words). An unterminated quote or a trailing backslash is an error.
func SplitArgs(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("ends in a backslash with nothing after it to escape")
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("the single quote at position %d is never closed", i+1)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case '"':
			start := i
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i == len(s) {
				return nil, fmt.Errorf("the double quote at position %d is never closed", start+1)
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
