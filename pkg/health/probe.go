package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kinds of probe; each is also the key of the `health` parameter that selects it.
const (
	KindTCP    = "tcp"
	KindHTTP   = "http"
	KindBanner = "banner"
)

// MaxGreeting is the most a banner probe reads of a server's greeting, and so the longest
// `expect` that can match.
const MaxGreeting = 4096

// maxValue bounds every string value of the parameter (a URL is the longest).
const maxValue = 4096

// Probe is one health check of a unit's service. Make it with [Parse]; a Probe written as a
// literal is validated by the same rules on its first [Probe.Check].
type Probe struct {
	Kind   string // KindTCP, KindHTTP or KindBanner
	Target string // HOST:PORT for tcp and banner, the URL for http, as given
	Expect string // banner only: the substring the greeting must contain

	dial string // HOST:PORT connected to, wildcard host replaced by loopback
	url  string // http only: Target with a wildcard host replaced by loopback
}

// Parse reads the module parameter `health` as Ansible passes it (a JSON object): exactly one
// of tcp, http or banner, and expect with (and only with) banner. Unknown keys, values that
// are not strings, empty strings, addresses without a port in 1-65535 and URLs that are not
// http:// with a host are refused; errors name the parameter path ("health.tcp: ...").
func Parse(v map[string]any) (Probe, error) {
	if len(v) == 0 {
		return Probe{}, errors.New("health: empty; give one of tcp, http or banner")
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var kinds, unknown []string
	for _, k := range keys {
		switch k {
		case KindTCP, KindHTTP, KindBanner:
			kinds = append(kinds, k)
		case "expect":
		default:
			unknown = append(unknown, quoted(k))
		}
	}
	if len(unknown) > 0 {
		return Probe{}, fmt.Errorf("health: unknown key %s (allowed: tcp, http, banner, expect)", strings.Join(unknown, ", "))
	}
	switch len(kinds) {
	case 0:
		return Probe{}, errors.New("health: give one of tcp, http or banner (expect alone is not a probe)")
	case 1:
	default:
		return Probe{}, fmt.Errorf("health: give exactly one of tcp, http or banner, not %s", strings.Join(kinds, " and "))
	}
	p := Probe{Kind: kinds[0]}
	var err error
	if p.Target, err = stringValue(v, p.Kind); err != nil {
		return Probe{}, err
	}
	_, hasExpect := v["expect"]
	switch {
	case p.Kind == KindBanner && !hasExpect:
		return Probe{}, errors.New("health.banner: needs expect, the substring the greeting must contain")
	case p.Kind != KindBanner && hasExpect:
		return Probe{}, fmt.Errorf("health.expect: only with banner, not with %s", p.Kind)
	case hasExpect:
		if p.Expect, err = stringValue(v, "expect"); err != nil {
			return Probe{}, err
		}
	}
	if err := p.prepare(); err != nil {
		return Probe{}, err
	}
	return p, nil
}

// stringValue returns v[key], which must be a non-empty string of bounded length.
func stringValue(v map[string]any, key string) (string, error) {
	s, ok := v[key].(string)
	switch {
	case !ok:
		return "", fmt.Errorf("health.%s: must be a string, not %s", key, typeName(v[key]))
	case s == "":
		return "", fmt.Errorf("health.%s: empty", key)
	case len(s) > maxValue:
		return "", fmt.Errorf("health.%s: longer than %d bytes", key, maxValue)
	}
	return s, nil
}

// typeName names a decoded JSON value's type in the words a playbook author uses.
func typeName(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, float32, int, int64, int32, uint, uint64, uint32, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("%T", x)
	}
}

// prepare validates the probe and computes where it connects. Parse and Check share it.
func (p *Probe) prepare() error {
	field := "health." + p.Kind
	switch p.Kind {
	case KindTCP, KindBanner:
		if p.Target == "" {
			return fmt.Errorf("%s: empty", field)
		}
		dial, err := hostPort(p.Target)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		p.dial = dial
	case KindHTTP:
		if p.Target == "" {
			return fmt.Errorf("%s: empty", field)
		}
		u, dial, err := httpURL(p.Target)
		if err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
		p.url, p.dial = u, dial
	default:
		return fmt.Errorf("health: unknown probe kind %s (want tcp, http or banner)", quoted(p.Kind))
	}
	switch {
	case p.Kind != KindBanner && p.Expect != "":
		return fmt.Errorf("health.expect: only with banner, not with %s", p.Kind)
	case p.Kind == KindBanner && p.Expect == "":
		return errors.New("health.expect: empty")
	case len(p.Expect) > MaxGreeting:
		return fmt.Errorf("health.expect: longer than the %d bytes a banner probe reads", MaxGreeting)
	}
	return nil
}

// hostPort validates HOST:PORT and returns the address to dial.
func hostPort(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		reason := err.Error()
		if errors.As(err, &ae) {
			reason = ae.Err
		}
		if strings.Count(s, ":") > 1 && !strings.HasPrefix(s, "[") {
			reason += "; an IPv6 address goes in brackets, as in [::1]:8080"
		}
		return "", fmt.Errorf("%s is not HOST:PORT: %s", quoted(s), reason)
	}
	n, err := parsePort(port)
	if err != nil {
		return "", err
	}
	h, err := dialHost(host, strings.HasPrefix(s, "["))
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(h, strconv.Itoa(n)), nil
}

// httpURL validates an http:// URL and returns the URL to request (wildcard host replaced)
// and the address it connects to.
func httpURL(s string) (string, string, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", "", fmt.Errorf("%s is not a URL: %s", quoted(s), clip(err.Error()))
	}
	switch {
	case u.Scheme == "":
		return "", "", fmt.Errorf("%s is not a URL; give http://HOST:PORT/PATH", quoted(s))
	case u.Scheme != "http":
		return "", "", fmt.Errorf("URL scheme %s is not probed; give an http:// URL", quoted(u.Scheme))
	case u.Opaque != "" || u.Host == "":
		return "", "", fmt.Errorf("%s has no host; give http://HOST:PORT/PATH", quoted(s))
	case u.User != nil:
		// Not echoed: the value holds a password.
		return "", "", errors.New("the URL holds credentials (user@host); a probe does not send them")
	}
	port := 80
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		if port, err = parsePort(p); err != nil {
			return "", "", err
		}
	}
	h, err := dialHost(u.Hostname(), strings.HasPrefix(u.Host, "["))
	if err != nil {
		return "", "", err
	}
	dial := net.JoinHostPort(h, strconv.Itoa(port))
	if h != u.Hostname() {
		r := *u
		r.Host = h
		if strings.Contains(h, ":") {
			r.Host = "[" + h + "]"
		}
		if u.Port() != "" {
			r.Host = dial
		}
		return r.String(), dial, nil
	}
	return s, dial, nil
}

// parsePort accepts a decimal port 1-65535.
func parsePort(p string) (int, error) {
	if p == "" {
		return 0, errors.New("no port")
	}
	if strings.Trim(p, "0123456789") != "" {
		return 0, fmt.Errorf("port %s is not a number 1-65535", quoted(p))
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %s is out of range 1-65535", clip(p))
	}
	return n, nil
}

// dialHost validates a host and replaces a wildcard by loopback. bracketed says the host was
// written in brackets, which only an IPv6 address may be.
func dialHost(host string, bracketed bool) (string, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		switch {
		case bracketed && !a.Is6():
			return "", fmt.Errorf("[%s] is not an IPv6 address; write an IPv4 address without brackets", host)
		case !bracketed && a.Is6():
			return "", fmt.Errorf("IPv6 address %s must be in brackets, as in [::1]:8080", quoted(host))
		case a.Is4() && a.IsUnspecified(), a.Is4In6() && a.Unmap().IsUnspecified():
			return "127.0.0.1", nil
		case a.IsUnspecified():
			return "::1", nil
		}
		return host, nil
	}
	switch {
	case bracketed:
		return "", fmt.Errorf("%s is not an IPv6 address", quoted("["+host+"]"))
	case host == "" || host == "*":
		return "127.0.0.1", nil
	}
	if err := hostName(host); err != nil {
		return "", fmt.Errorf("host %s: %w", quoted(host), err)
	}
	return host, nil
}

// hostName accepts a DNS name: labels of letters, digits, '-' and '_', an optional final dot,
// and a last label that is not all digits (so "10.0.0" is not taken for a name).
func hostName(h string) error {
	if len(h) > 253 {
		return errors.New("longer than 253 characters")
	}
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	for _, l := range labels {
		if l == "" {
			return errors.New("empty label; not an IP address or host name")
		}
		if len(l) > 63 {
			return errors.New("a label is longer than 63 characters")
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("character %q is not allowed in a host name", r)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return errors.New("not a valid IP address or host name")
	}
	return nil
}

// String describes the probe for messages, with the address actually probed:
// "tcp 127.0.0.1:8080", "GET http://127.0.0.1:8080/health (given as http://0.0.0.0:8080/health)",
// `banner 127.0.0.1:25 expecting "ESMTP"`.
func (p Probe) String() string {
	probed := p.dial
	if p.Kind == KindHTTP {
		probed = p.url
	}
	var b strings.Builder
	if p.Kind == KindHTTP {
		b.WriteString("GET ")
	} else {
		b.WriteString(p.Kind + " ")
	}
	if probed == "" {
		b.WriteString(quoted(p.Target))
	} else {
		b.WriteString(probed)
		if probed != p.Target {
			fmt.Fprintf(&b, " (given as %s)", clip(p.Target))
		}
	}
	if p.Kind == KindBanner {
		fmt.Fprintf(&b, " expecting %s", quoted(p.Expect))
	}
	return b.String()
}

// clip shortens s to at most 200 bytes on a rune boundary, marking the cut.
func clip(s string) string {
	if len(s) <= echoLimit {
		return s
	}
	cut := echoLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// echoLimit is the most of a value an error message repeats.
const echoLimit = 200

// quoted quotes s for a message as %q would, keeping at most echoLimit bytes of the quoted
// text between the quotes; a cut is marked by "…" after the closing quote.
func quoted(s string) string {
	q, _ := quoteCut(s)
	return q
}

func quoteCut(s string) (q string, cut bool) {
	if full := strconv.Quote(s); len(full) <= echoLimit+2 {
		return full, false
	}
	b := []byte{'"'}
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		piece := strconv.Quote(s[i : i+size])
		piece = piece[1 : len(piece)-1]
		if len(b)-1+len(piece) > echoLimit {
			break
		}
		b = append(b, piece...)
		i += size
	}
	return string(b) + `"…`, true
}
