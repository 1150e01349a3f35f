package health

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
)

// FuzzParse feeds outside input to the parser of the tcp and banner addresses and of the
// http URL: it never panics, what it accepts dials a port in 1-65535 on a host that is not a
// wildcard, and its errors echo no more than a clipped copy of the value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1:8080", "localhost:22", "[::1]:80", "[::]:80", "0.0.0.0:80", ":80", "*:80",
		"[fe80::1%eth0]:80", "[::ffff:0.0.0.0]:1", "h:0", "h:65536", "h:x", "h", "::1:80", "[]:80",
		"a..b:1", "10.0.0:1", "h:+1", "h:080", "http://h/", "http://0.0.0.0:8080/x", "http://[::]/",
		"http://:1", "http://*:2/", "https://h/", "http://u:p@h/", "http:h", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range []map[string]any{
			{"tcp": s},
			{"banner": s, "expect": "x"},
			{"http": s},
		} {
			p, err := Parse(v)
			if err != nil {
				if len(err.Error()) > 600 {
					t.Fatalf("%v: error of %d bytes", v, len(err.Error()))
				}
				continue
			}
			_ = p.String()
			host, port, err := net.SplitHostPort(p.dial)
			if err != nil {
				t.Fatalf("%v: accepted, dials %q: %v", v, p.dial, err)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				t.Fatalf("%v: accepted with port %q", v, port)
			}
			if host == "" || host == "*" {
				t.Fatalf("%v: accepted, dials wildcard %q", v, p.dial)
			}
			if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsUnspecified() {
				t.Fatalf("%v: accepted, dials wildcard %q", v, p.dial)
			}
			if p.Kind == KindHTTP {
				u, err := url.Parse(p.url)
				if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
					t.Fatalf("%v: accepted, requests %q (%v)", v, p.url, err)
				}
				if net.JoinHostPort(u.Hostname(), port) != p.dial {
					t.Fatalf("%v: requests %q but dials %q", v, p.url, p.dial)
				}
			}
		}
	})
}
