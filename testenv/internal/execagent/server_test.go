package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/richt/services/testenv/internal/agentproto"
)

// startServer serves on a loopback port of the host, with a fixed environment.
func startServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &server{token: "secret", base: []string{"PATH=/usr/bin:/bin", "KEEP=1"}, home: "/root", dir: "/"}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.handle(c)
		}
	}()
	return ln.Addr().String()
}

func request(t *testing.T, addr string, h agentproto.Header, body []byte) agentproto.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h.Size = int64(len(body))
	if err := agentproto.WriteRequest(c, h, body); err != nil {
		t.Fatal(err)
	}
	res, err := agentproto.ReadResponse(bufio.NewReader(c))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExec(t *testing.T) {
	addr := startServer(t)
	cases := []struct {
		name           string
		argv, env      []string
		exit           int
		stdout, stderr string
	}{
		{"exit code", []string{"/bin/sh", "-c", "exit 7"}, nil, 7, "", ""},
		{"signal death is 128+signal", []string{"/bin/sh", "-c", "kill -9 $$"}, nil, 137, "", ""},
		{"stdout and stderr apart", []string{"/bin/sh", "-c", "echo o; echo e >&2"}, nil, 0, "o\n", "e\n"},
		{"environment merged", []string{"env"}, []string{"A=1", "KEEP"}, 0, "PATH=/usr/bin:/bin\nA=1\nHOME=/root\n", ""},
		{"no shell", []string{"echo", "$KEEP", "*"}, nil, 0, "$KEEP *\n", ""},
		{"stdin empty", []string{"cat"}, nil, 0, "", ""},
		{"working directory", []string{"pwd"}, nil, 0, "/\n", ""},
		{"own session", []string{"/bin/sh", "-c", `read -r p c s pp pg sid r < /proc/$$/stat; [ $pg = $$ ] && [ $sid = $$ ] && echo leader`}, nil, 0, "leader\n", ""},
		{"not in PATH", []string{"no-such-cmd"}, nil, 126,
			"OCI runtime exec failed: exec failed: unable to start container process: exec: \"no-such-cmd\": executable file not found in $PATH: unknown\r\n", ""},
		{"PATH from the extra environment", []string{"env"}, []string{"PATH=/nowhere"}, 126,
			"OCI runtime exec failed: exec failed: unable to start container process: exec: \"env\": executable file not found in $PATH: unknown\r\n", ""},
		{"no such file", []string{"/no/such"}, nil, 126,
			"OCI runtime exec failed: exec failed: unable to start container process: exec: \"/no/such\": stat /no/such: no such file or directory: unknown\r\n", ""},
		{"a directory", []string{"/"}, nil, 126,
			"OCI runtime exec failed: exec failed: unable to start container process: exec: \"/\": permission denied: unknown\r\n", ""},
		{"a child holding stdout is cut off", []string{"/bin/sh", "-c", "(sleep 4; echo late) & echo early"}, nil, 0, "early\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := request(t, addr, agentproto.Header{Token: "secret", Op: agentproto.OpExec, Argv: c.argv, Env: c.env}, nil)
			if res.Err != "" || res.Exit != c.exit || string(res.Stdout) != c.stdout || string(res.Stderr) != c.stderr {
				t.Fatalf("got exit %d stdout %q stderr %q err %q", res.Exit, res.Stdout, res.Stderr, res.Err)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	addr := startServer(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "f")
	res := request(t, addr, agentproto.Header{Token: "secret", Op: agentproto.OpWrite, Path: p, Mode: 0o4750}, []byte("x\x00y"))
	if res.Err != "" {
		t.Fatal(res.Err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fi.Mode(), os.FileMode(0o750)|os.ModeSetuid; got != want {
		t.Errorf("mode %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(p); string(b) != "x\x00y" {
		t.Errorf("content %q", b)
	}
	if fi, _ := os.Stat(filepath.Dir(p)); fi.Mode().Perm() != 0o755 {
		t.Errorf("parent mode %v", fi.Mode())
	}
	res = request(t, addr, agentproto.Header{Token: "secret", Op: agentproto.OpWrite, Path: filepath.Join(p, "below"), Mode: 0o644}, []byte("z"))
	if !strings.Contains(res.Err, "below") {
		t.Errorf("a write below a file: %q", res.Err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestWrongTokenIsRefused(t *testing.T) {
	addr := startServer(t)
	dir := t.TempDir()
	for _, tok := range []string{"", "secreT", "secret "} {
		res := request(t, addr, agentproto.Header{Token: tok, Op: agentproto.OpWrite, Path: filepath.Join(dir, "f"), Mode: 0o644}, []byte("x"))
		if !strings.Contains(res.Err, "wrong token") {
			t.Errorf("token %q: %+v", tok, res)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); err == nil {
		t.Error("a refused write was done")
	}
}
