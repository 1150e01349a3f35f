package agentproto

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		h    Header
		body []byte
	}{
		{"ping", Header{Token: "t", Op: OpPing}, nil},
		{"exec", Header{Token: "t", Op: OpExec, Argv: []string{"/bin/sh", "-c", "echo \"$A\"\n"}, Env: []string{"A=1", "B"}}, nil},
		{"write", Header{Token: "t", Op: OpWrite, Path: "/run/x", Mode: 0o4755, Size: 4}, []byte("\x00\xff\n\r")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteRequest(&b, c.h, c.body); err != nil {
				t.Fatal(err)
			}
			b.WriteString("next")
			r := bufio.NewReader(&b)
			h, body, err := ReadRequest(r, "t")
			if err != nil {
				t.Fatal(err)
			}
			if !equalHeader(h, c.h) || !bytes.Equal(body, c.body) {
				t.Fatalf("got %+v %q, want %+v %q", h, body, c.h, c.body)
			}
			rest, _ := r.ReadString(0)
			if rest != "next" {
				t.Fatalf("read past the request: left %q", rest)
			}
		})
	}
}

func equalHeader(a, b Header) bool {
	return a.Token == b.Token && a.Op == b.Op && strings.Join(a.Argv, "\x00") == strings.Join(b.Argv, "\x00") &&
		strings.Join(a.Env, "\x00") == strings.Join(b.Env, "\x00") && a.Path == b.Path && a.Mode == b.Mode && a.Size == b.Size
}

func TestReadRequestRefuses(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"wrong token", `{"token":"x","op":"ping"}` + "\n", "wrong token"},
		{"no token", `{"op":"ping"}` + "\n", "wrong token"},
		{"token checked before the body is read", `{"token":"x","op":"write","path":"/a","size":5}` + "\n", "wrong token"},
		{"unknown op", `{"token":"t","op":"rm"}` + "\n", `op "rm"`},
		{"unknown field", `{"token":"t","op":"ping","user":"nobody"}` + "\n", "unknown field"},
		{"empty argv", `{"token":"t","op":"exec"}` + "\n", "argv is empty"},
		{"empty command", `{"token":"t","op":"exec","argv":[""]}` + "\n", "argv is empty"},
		{"exec with a body", `{"token":"t","op":"exec","argv":["true"],"size":1}` + "\nx", "has no body"},
		{"relative path", `{"token":"t","op":"write","path":"etc/x"}` + "\n", "not absolute"},
		{"mode beyond 07777", `{"token":"t","op":"write","path":"/x","mode":65535}` + "\n", "beyond 07777"},
		{"negative size", `{"token":"t","op":"write","path":"/x","size":-1}` + "\n", "outside"},
		{"short body", `{"token":"t","op":"write","path":"/x","size":5}` + "\nab", "2 of 5 bytes"},
		{"two objects", `{"token":"t","op":"ping"} {}` + "\n", "after the JSON"},
		{"not JSON", "hello\n", "decode request"},
		{"no newline", `{"token":"t","op":"ping"}`, "unexpected EOF"},
		{"empty", "", "EOF"},
		{"header too long", strings.Repeat(" ", MaxHeader+1) + "\n", "over"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := ReadRequest(bufio.NewReader(strings.NewReader(c.in)), "t")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	_, _, err := ReadRequest(bufio.NewReader(strings.NewReader(`{"token":"","op":"ping"}`+"\n")), "")
	if !errors.Is(err, ErrToken) {
		t.Fatalf("an agent without a token took a request: %v", err)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	for _, r := range []Response{
		{},
		{Exit: 137, Stdout: []byte("out\x00\xff"), Stderr: []byte("err\n")},
		{Err: "write /x: permission denied"},
	} {
		var b bytes.Buffer
		if err := WriteResponse(&b, r); err != nil {
			t.Fatal(err)
		}
		got, err := ReadResponse(bufio.NewReader(&b))
		if err != nil {
			t.Fatal(err)
		}
		if got.Exit != r.Exit || got.Err != r.Err || !bytes.Equal(got.Stdout, r.Stdout) || !bytes.Equal(got.Stderr, r.Stderr) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
	}
	if _, err := ReadResponse(bufio.NewReader(strings.NewReader(`{"exit":0,"stdout":5,"stderr":0}` + "\nab"))); err == nil {
		t.Fatal("a cut response was taken")
	}
}

// The expectations are what Docker 20.10 with runc 1.1 gives `docker exec -e ...` in a
// container whose environment is PATH and HOSTNAME.
func TestMergeEnv(t *testing.T) {
	base := []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc"}
	cases := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"nothing extra", nil, []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc", "HOME=/root"}},
		{"replaced in place, appended, last one wins at its first place", []string{"A=1", "B=x", "A=2", "PATH=/bin"},
			[]string{"PATH=/bin", "HOSTNAME=abc", "A=2", "B=x", "HOME=/root"}},
		{"bare name removes", []string{"HOSTNAME"}, []string{"PATH=/usr/bin:/bin", "HOME=/root"}},
		{"bare name of nothing is nothing", []string{"NOPE"}, []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc", "HOME=/root"}},
		{"removed then set again comes back in place", []string{"PATH", "PATH=/x"}, []string{"PATH=/x", "HOSTNAME=abc", "HOME=/root"}},
		{"own HOME kept", []string{"HOME=/x", "Z=1"}, []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc", "HOME=/x", "Z=1"}},
		{"empty HOME filled in place", []string{"HOME=", "Z=1"}, []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc", "HOME=/root", "Z=1"}},
		{"empty value", []string{"E="}, []string{"PATH=/usr/bin:/bin", "HOSTNAME=abc", "E=", "HOME=/root"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := MergeEnv(base, c.extra, "/root")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	for _, bad := range []string{"=x", "A=\x00"} {
		if _, err := MergeEnv(base, []string{bad}, "/root"); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestAgentEnv(t *testing.T) {
	cases := []struct {
		name     string
		environ  []string
		wantBase string
		wantHome string
	}{
		{"runc's HOME after the token", []string{"PATH=/bin", "HOSTNAME=h", "TOK=s", "HOME=/root"}, "PATH=/bin HOSTNAME=h", "/root"},
		{"the container's own HOME", []string{"PATH=/bin", "HOME=/srv", "TOK=s"}, "PATH=/bin HOME=/srv", "/root"},
		{"no HOME at all", []string{"PATH=/bin", "TOK=s"}, "PATH=/bin", "/root"},
		{"runc's HOME elsewhere", []string{"TOK=s", "HOME=/home/x"}, "", "/home/x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, home := AgentEnv(c.environ, "TOK")
			if strings.Join(base, " ") != c.wantBase || home != c.wantHome {
				t.Fatalf("got %q %q, want %q %q", base, home, c.wantBase, c.wantHome)
			}
		})
	}
}

func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		`{"token":"t","op":"ping"}` + "\n",
		`{"token":"t","op":"exec","argv":["sh","-c","x"],"env":["A=1"]}` + "\n",
		`{"token":"t","op":"write","path":"/x","mode":420,"size":3}` + "\nabc",
		`{"token":"t","op":"write","path":"/x","size":1073741824}` + "\n",
		"\n", "{}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, body, err := ReadRequest(bufio.NewReader(bytes.NewReader(in)), "t")
		if err != nil {
			return
		}
		if h.Token != "t" {
			t.Fatalf("token %q taken", h.Token)
		}
		if err := h.Validate(); err != nil {
			t.Fatalf("invalid request taken: %v", err)
		}
		if int64(len(body)) != h.Size {
			t.Fatalf("body of %d bytes, header says %d", len(body), h.Size)
		}
		// What was read is written back to the same request.
		var b bytes.Buffer
		if err := WriteRequest(&b, h, body); err != nil {
			t.Fatal(err)
		}
		h2, body2, err := ReadRequest(bufio.NewReader(&b), "t")
		if err != nil || !equalHeader(h, h2) || !bytes.Equal(body, body2) {
			t.Fatalf("round trip: %v %+v", err, h2)
		}
	})
}
