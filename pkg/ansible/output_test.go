package ansible

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzMaskURLPasswords: whatever the text around a URL and whatever its password holds
// (/, @, :), the password never reaches the output. Passwords the masking cannot tell from
// the text around them are left out: white space or "://" in one, also one formed with the
// separator by a password that starts with "//" (a URL ends there, another begins), a
// mask character, or a password that is also a piece of what stays visible.
func FuzzMaskURLPasswords(f *testing.F) {
	f.Add("for ", "deploy", "s3cret", "repo.example/el9/repodata/repomd.xml", " [error]")
	f.Add("", "deploy", "pa/ss", "repo.example", "/")
	f.Add("baseurl=", "u", "p@ss:w/rd", "h1/", ",https://c:d@h2/")
	f.Add("x", "me@corp.example", "tok:en", "host:8080", "/a@b")
	f.Add("http://a:", "", "z", "h", "")
	f.Fuzz(func(t *testing.T, prefix, user, pass, host, suffix string) {
		hasSpace := func(s string) bool { return strings.IndexFunc(s, unicode.IsSpace) >= 0 }
		if pass == "" || hasSpace(user+pass+host) || strings.Contains(pass, "*") ||
			strings.ContainsAny(user, ":") || strings.Contains(host, "@") ||
			strings.Contains(user+":"+pass+host, "://") {
			return
		}
		head := prefix + "https://" + user + ":"
		if strings.Contains(head, pass) || strings.Contains("@"+host+suffix, pass) {
			return // the password is also a visible piece of the text
		}
		out := maskURLPasswordsIn(head + pass + "@" + host + suffix)
		if strings.Contains(out, pass) {
			t.Fatalf("password %q in %q", pass, out)
		}
		if !strings.Contains(out, "https://"+user+":"+URLPasswordMask+"@") {
			t.Fatalf("%q does not keep the user and mask the password", out)
		}
	})
}
