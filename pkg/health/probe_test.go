package health

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		in     map[string]any
		kind   string
		dial   string
		url    string // http only
		expect string
		str    string
	}{
		{"tcp ipv4", map[string]any{"tcp": "127.0.0.1:8080"}, KindTCP, "127.0.0.1:8080", "", "", "tcp 127.0.0.1:8080"},
		{"tcp name", map[string]any{"tcp": "localhost:5432"}, KindTCP, "localhost:5432", "", "", "tcp localhost:5432"},
		{"tcp name with final dot", map[string]any{"tcp": "db.example.:5432"}, KindTCP, "db.example.:5432", "", "", "tcp db.example.:5432"},
		{"tcp ipv6", map[string]any{"tcp": "[::1]:8080"}, KindTCP, "[::1]:8080", "", "", "tcp [::1]:8080"},
		{"tcp port 65535", map[string]any{"tcp": "10.0.0.1:65535"}, KindTCP, "10.0.0.1:65535", "", "", "tcp 10.0.0.1:65535"},
		{"tcp port 1", map[string]any{"tcp": "10.0.0.1:1"}, KindTCP, "10.0.0.1:1", "", "", "tcp 10.0.0.1:1"},
		{"tcp leading zero port", map[string]any{"tcp": "10.0.0.1:080"}, KindTCP, "10.0.0.1:80", "", "", "tcp 10.0.0.1:80 (given as 10.0.0.1:080)"},
		{"wildcard 0.0.0.0", map[string]any{"tcp": "0.0.0.0:80"}, KindTCP, "127.0.0.1:80", "", "", "tcp 127.0.0.1:80 (given as 0.0.0.0:80)"},
		{"wildcard [::]", map[string]any{"tcp": "[::]:80"}, KindTCP, "[::1]:80", "", "", "tcp [::1]:80 (given as [::]:80)"},
		{"wildcard [::0]", map[string]any{"tcp": "[::0]:80"}, KindTCP, "[::1]:80", "", "", "tcp [::1]:80 (given as [::0]:80)"},
		{"wildcard mapped 0.0.0.0", map[string]any{"tcp": "[::ffff:0.0.0.0]:80"}, KindTCP, "127.0.0.1:80", "", "", "tcp 127.0.0.1:80 (given as [::ffff:0.0.0.0]:80)"},
		{"wildcard empty host", map[string]any{"tcp": ":80"}, KindTCP, "127.0.0.1:80", "", "", "tcp 127.0.0.1:80 (given as :80)"},
		{"wildcard star", map[string]any{"tcp": "*:80"}, KindTCP, "127.0.0.1:80", "", "", "tcp 127.0.0.1:80 (given as *:80)"},
		{"banner", map[string]any{"banner": "127.0.0.1:25", "expect": "ESMTP"}, KindBanner, "127.0.0.1:25", "", "ESMTP", `banner 127.0.0.1:25 expecting "ESMTP"`},
		{"banner wildcard", map[string]any{"banner": "0.0.0.0:22", "expect": "SSH-2.0"}, KindBanner, "127.0.0.1:22", "", "SSH-2.0", `banner 127.0.0.1:22 (given as 0.0.0.0:22) expecting "SSH-2.0"`},
		{"http", map[string]any{"http": "http://127.0.0.1:8080/health"}, KindHTTP, "127.0.0.1:8080", "http://127.0.0.1:8080/health", "", "GET http://127.0.0.1:8080/health"},
		{"http default port 80", map[string]any{"http": "http://localhost/health?deep=1"}, KindHTTP, "localhost:80", "http://localhost/health?deep=1", "", "GET http://localhost/health?deep=1"},
		{"http upper-case scheme", map[string]any{"http": "HTTP://localhost:81/"}, KindHTTP, "localhost:81", "HTTP://localhost:81/", "", "GET HTTP://localhost:81/"},
		{"http ipv6", map[string]any{"http": "http://[::1]:8080/"}, KindHTTP, "[::1]:8080", "http://[::1]:8080/", "", "GET http://[::1]:8080/"},
		{"http wildcard 0.0.0.0", map[string]any{"http": "http://0.0.0.0:8080/h"}, KindHTTP, "127.0.0.1:8080", "http://127.0.0.1:8080/h", "", "GET http://127.0.0.1:8080/h (given as http://0.0.0.0:8080/h)"},
		{"http wildcard [::]", map[string]any{"http": "http://[::]:8080/h"}, KindHTTP, "[::1]:8080", "http://[::1]:8080/h", "", "GET http://[::1]:8080/h (given as http://[::]:8080/h)"},
		{"http wildcard empty host", map[string]any{"http": "http://:8080/h"}, KindHTTP, "127.0.0.1:8080", "http://127.0.0.1:8080/h", "", "GET http://127.0.0.1:8080/h (given as http://:8080/h)"},
		{"http wildcard star no port", map[string]any{"http": "http://*/h"}, KindHTTP, "127.0.0.1:80", "http://127.0.0.1/h", "", "GET http://127.0.0.1/h (given as http://*/h)"},
		{"http wildcard [::] no port", map[string]any{"http": "http://[::]/"}, KindHTTP, "[::1]:80", "http://[::1]/", "", "GET http://[::1]/ (given as http://[::]/)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.kind, p.Kind)
			assert.Equal(t, tt.in[tt.kind], p.Target)
			assert.Equal(t, tt.dial, p.dial)
			assert.Equal(t, tt.url, p.url)
			assert.Equal(t, tt.expect, p.Expect)
			assert.Equal(t, tt.str, p.String())
		})
	}
}

func TestParseMalformed(t *testing.T) {
	long := strings.Repeat("a", 5000)
	tests := []struct {
		name string
		in   map[string]any
		want string // the whole error message
	}{
		{"nil", nil, "health: empty; give one of tcp, http or banner"},
		{"none", map[string]any{}, "health: empty; give one of tcp, http or banner"},
		{"expect alone", map[string]any{"expect": "x"}, "health: give one of tcp, http or banner (expect alone is not a probe)"},
		{"two kinds", map[string]any{"tcp": "h:1", "http": "http://h/"}, "health: give exactly one of tcp, http or banner, not http and tcp"},
		{"three kinds", map[string]any{"tcp": "h:1", "http": "http://h/", "banner": "h:2", "expect": "x"}, "health: give exactly one of tcp, http or banner, not banner and http and tcp"},
		{"unknown key", map[string]any{"tcp": "h:1", "timeout": "5s"}, `health: unknown key "timeout" (allowed: tcp, http, banner, expect)`},
		{"unknown keys", map[string]any{"tcp": "h:1", "port": 1, "Host": "x"}, `health: unknown key "Host", "port" (allowed: tcp, http, banner, expect)`},
		{"banner without expect", map[string]any{"banner": "h:25"}, "health.banner: needs expect, the substring the greeting must contain"},
		{"expect with tcp", map[string]any{"tcp": "h:1", "expect": "x"}, "health.expect: only with banner, not with tcp"},
		{"expect with http", map[string]any{"http": "http://h/", "expect": ""}, "health.expect: only with banner, not with http"},
		{"empty expect", map[string]any{"banner": "h:25", "expect": ""}, "health.expect: empty"},
		{"expect not a string", map[string]any{"banner": "h:25", "expect": 220.0}, "health.expect: must be a string, not a number"},
		{"expect too long", map[string]any{"banner": "h:25", "expect": strings.Repeat("x", MaxGreeting+1)}, "health.expect: longer than 4096 bytes"},
		{"tcp number", map[string]any{"tcp": 8080.0}, "health.tcp: must be a string, not a number"},
		{"tcp int", map[string]any{"tcp": 8080}, "health.tcp: must be a string, not a number"},
		{"tcp json.Number", map[string]any{"tcp": json.Number("8080")}, "health.tcp: must be a string, not a number"},
		{"tcp bool", map[string]any{"tcp": true}, "health.tcp: must be a string, not a boolean"},
		{"tcp null", map[string]any{"tcp": nil}, "health.tcp: must be a string, not null"},
		{"tcp list", map[string]any{"tcp": []any{"h:1"}}, "health.tcp: must be a string, not a list"},
		{"http mapping", map[string]any{"http": map[string]any{"url": "x"}}, "health.http: must be a string, not a mapping"},
		{"tcp empty", map[string]any{"tcp": ""}, "health.tcp: empty"},
		{"banner empty", map[string]any{"banner": "", "expect": "x"}, "health.banner: empty"},
		{"http empty", map[string]any{"http": ""}, "health.http: empty"},
		{"too long", map[string]any{"tcp": long}, "health.tcp: longer than 4096 bytes"},
		{"no port", map[string]any{"tcp": "localhost"}, `health.tcp: "localhost" is not HOST:PORT: missing port in address`},
		{"empty port", map[string]any{"tcp": "localhost:"}, "health.tcp: no port"},
		{"port 0", map[string]any{"tcp": "localhost:0"}, "health.tcp: port 0 is out of range 1-65535"},
		{"port 70000", map[string]any{"tcp": "localhost:70000"}, "health.tcp: port 70000 is out of range 1-65535"},
		{"huge port", map[string]any{"tcp": "localhost:99999999999999999999999"}, "health.tcp: port 99999999999999999999999 is out of range 1-65535"},
		{"port x", map[string]any{"tcp": "localhost:x"}, `health.tcp: port "x" is not a number 1-65535`},
		{"port service name", map[string]any{"banner": "localhost:smtp", "expect": "x"}, `health.banner: port "smtp" is not a number 1-65535`},
		{"port signed", map[string]any{"tcp": "localhost:+80"}, `health.tcp: port "+80" is not a number 1-65535`},
		{"bare ipv6", map[string]any{"tcp": "::1:80"}, `health.tcp: "::1:80" is not HOST:PORT: too many colons in address; an IPv6 address goes in brackets, as in [::1]:8080`},
		{"bracketed ipv4", map[string]any{"tcp": "[127.0.0.1]:80"}, "health.tcp: [127.0.0.1] is not an IPv6 address; write an IPv4 address without brackets"},
		{"bracketed name", map[string]any{"tcp": "[localhost]:80"}, `health.tcp: "[localhost]" is not an IPv6 address`},
		{"bracketed star", map[string]any{"tcp": "[*]:80"}, `health.tcp: "[*]" is not an IPv6 address`},
		{"bracketed empty", map[string]any{"tcp": "[]:80"}, `health.tcp: "[]" is not an IPv6 address`},
		{"space in host", map[string]any{"tcp": "a b:80"}, `health.tcp: host "a b": character ' ' is not allowed in a host name`},
		{"empty label", map[string]any{"tcp": "a..b:80"}, `health.tcp: host "a..b": empty label; not an IP address or host name`},
		{"bad ipv4", map[string]any{"tcp": "10.0.0.256:80"}, `health.tcp: host "10.0.0.256": not a valid IP address or host name`},
		{"short ipv4", map[string]any{"tcp": "10.0.0:80"}, `health.tcp: host "10.0.0": not a valid IP address or host name`},
		{"https", map[string]any{"http": "https://localhost:8443/health"}, `health.http: URL scheme "https" is not probed; give an http:// URL`},
		{"ftp", map[string]any{"http": "ftp://localhost/"}, `health.http: URL scheme "ftp" is not probed; give an http:// URL`},
		{"http without scheme", map[string]any{"http": "localhost:8080/health"}, `health.http: URL scheme "localhost" is not probed; give an http:// URL`},
		{"http path only", map[string]any{"http": "/health"}, `health.http: "/health" is not a URL; give http://HOST:PORT/PATH`},
		{"http opaque", map[string]any{"http": "http:localhost"}, `health.http: "http:localhost" has no host; give http://HOST:PORT/PATH`},
		{"http no host", map[string]any{"http": "http:///health"}, `health.http: "http:///health" has no host; give http://HOST:PORT/PATH`},
		{"http empty port", map[string]any{"http": "http://localhost:/"}, "health.http: no port"},
		{"http port 0", map[string]any{"http": "http://localhost:0/"}, "health.http: port 0 is out of range 1-65535"},
		{"http port 70000", map[string]any{"http": "http://localhost:70000/"}, "health.http: port 70000 is out of range 1-65535"},
		{"http port x", map[string]any{"http": "http://localhost:x/"}, `health.http: "http://localhost:x/" is not a URL: invalid port ":x" after host`},
		{"http credentials", map[string]any{"http": "http://admin:s3cret@localhost/"}, "health.http: the URL holds credentials (user@host); a probe does not send them"},
		{"http bracketed ipv4", map[string]any{"http": "http://[127.0.0.1]:80/"}, `health.http: "http://[127.0.0.1]:80/" is not a URL: invalid IP-literal`},
		{"http space", map[string]any{"http": "http://a b/"}, `health.http: "http://a b/" is not a URL: invalid character " " in host name`},
		{"http empty label", map[string]any{"http": "http://a..b/"}, `health.http: host "a..b": empty label; not an IP address or host name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(tt.in)
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, Probe{}, p)
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}

func TestParseErrorsClipLongValues(t *testing.T) {
	long := "h:" + strings.Repeat("9", 3000)
	_, err := Parse(map[string]any{"tcp": long})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 300)
	assert.Contains(t, err.Error(), "…")

	_, err = Parse(map[string]any{"tcp": "h:1", strings.Repeat("k", 1000): "x"})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 300)

	for _, v := range []map[string]any{
		{"http": "http://h:" + strings.Repeat("x", 3000) + "/"},
		{"http": "http://" + strings.Repeat("\xff", 3000) + "/"},
		{"tcp": strings.Repeat("\x01", 3000) + ":1"},
		{"tcp": "[" + strings.Repeat("\x01", 3000) + "]:1"},
		{"banner": "h:1", "expect": "x", strings.Repeat("\xff", 1000): 1},
	} {
		_, err = Parse(v)
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 600, err.Error())
	}
}

// A Probe written as a literal is held to Parse's rules when it is used.
func TestLiteralProbeIsValidatedOnUse(t *testing.T) {
	err := Probe{Kind: KindTCP, Target: "localhost:0"}.Check(t.Context())
	require.EqualError(t, err, "health.tcp: port 0 is out of range 1-65535")
	err = Probe{Kind: "udp", Target: "localhost:53"}.Check(t.Context())
	require.EqualError(t, err, `health: unknown probe kind "udp" (want tcp, http or banner)`)
	err = Probe{Kind: KindBanner, Target: "localhost:25"}.Check(t.Context())
	require.EqualError(t, err, "health.expect: empty")
	n, err := Wait(t.Context(), Probe{Kind: KindHTTP, Target: "https://localhost/"}, 0)
	assert.Zero(t, n)
	require.EqualError(t, err, `health.http: URL scheme "https" is not probed; give an http:// URL`)
}

func TestQuotedBoundsTheEcho(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"short", `"short"`},
		{strings.Repeat("a", 200), `"` + strings.Repeat("a", 200) + `"`},
		{strings.Repeat("a", 201), `"` + strings.Repeat("a", 200) + `"…`},
		{strings.Repeat("\xff", 100), `"` + strings.Repeat(`\xff`, 50) + `"…`},
		{strings.Repeat("é", 150), `"` + strings.Repeat("é", 100) + `"…`},
		{"a\x00b\r\n", `"a\x00b\r\n"`},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, quoted(tt.in))
	}
	assert.Equal(t, `"`+strings.Repeat(`\x00`, 50)+`"… (4096 bytes)`, quote(make([]byte, 4096)))
}
