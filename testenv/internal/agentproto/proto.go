// Package agentproto is the wire format between testenv and the agent it runs inside a
// target: one request per TCP connection, answered by one response.
//
// A request is a header, one line of JSON no longer than MaxHeader bytes, followed by
// exactly Header.Size bytes of body (a file's content for a write, nothing for an exec). A
// response is one line of JSON followed by the command's stdout and then its stderr, of
// the lengths the line gives. The outputs travel as raw bytes, so a command's output
// reaches the test byte for byte, as Docker's exec stream gives it; argv and environment
// travel as JSON strings, as they do in Docker's own exec API.
package agentproto

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxHeader bounds a request's or response's JSON line, so a stray client cannot make the
// agent buffer without end before the token is checked.
const MaxHeader = 1 << 20

// MaxBody bounds a write's content: the largest file testenv sends is a module binary
// of some megabytes.
const MaxBody = 1 << 30

// Operations a request can ask for.
const (
	OpPing  = "ping"  // answer with exit 0: the agent is up and knows the token
	OpExec  = "exec"  // run Argv and report exit code, stdout and stderr
	OpWrite = "write" // write the body to Path with Mode
)

// Header is a request's first line.
type Header struct {
	Token string   `json:"token"`
	Op    string   `json:"op"`
	Argv  []string `json:"argv,omitempty"`
	// Env is extra KEY=VALUE entries on top of the agent's own environment, merged the
	// way Docker merges an exec's environment into the container's ([MergeEnv]).
	Env  []string `json:"env,omitempty"`
	Path string   `json:"path,omitempty"`
	Mode uint32   `json:"mode,omitempty"`
	Size int64    `json:"size,omitempty"`
}

// Validate checks what the operation needs, naming the field that is wrong.
func (h Header) Validate() error {
	switch h.Op {
	case OpPing:
	case OpExec:
		if len(h.Argv) == 0 || h.Argv[0] == "" {
			return errors.New("exec: argv is empty")
		}
		if h.Size != 0 {
			return fmt.Errorf("exec: size %d: an exec has no body", h.Size)
		}
	case OpWrite:
		if !strings.HasPrefix(h.Path, "/") {
			return fmt.Errorf("write: path %q is not absolute", h.Path)
		}
		if strings.ContainsRune(h.Path, 0) {
			return fmt.Errorf("write: path %q holds a NUL byte", h.Path)
		}
		if h.Mode&^0o7777 != 0 {
			return fmt.Errorf("write: mode %#o has bits beyond 07777", h.Mode)
		}
	default:
		return fmt.Errorf("op %q is none of ping, exec, write", h.Op)
	}
	if h.Size < 0 || h.Size > MaxBody {
		return fmt.Errorf("size %d is outside 0..%d", h.Size, MaxBody)
	}
	return nil
}

// WriteRequest sends h and body (h.Size must be len(body)).
func WriteRequest(w io.Writer, h Header, body []byte) error {
	if int64(len(body)) != h.Size {
		return fmt.Errorf("request body of %d bytes, header says %d", len(body), h.Size)
	}
	line, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if len(line)+1 > MaxHeader {
		return fmt.Errorf("request header of %d bytes is over %d", len(line)+1, MaxHeader)
	}
	buf := make([]byte, 0, len(line)+1+len(body))
	buf = append(append(append(buf, line...), '\n'), body...)
	_, err = w.Write(buf)
	return err
}

// TokenVar is the environment variable that gives the agent its token: testenv sets it in
// the agent's docker exec, and the agent removes it from what its commands get.
const TokenVar = "TESTENV_AGENT_TOKEN"

// ErrToken is a request whose token is not the agent's.
var ErrToken = errors.New("request refused: wrong token")

// ReadRequest reads one request from r and checks it: the header, then its token against
// token (before any body is read, so a stranger cannot make the agent buffer one), then the
// body.
func ReadRequest(r *bufio.Reader, token string) (Header, []byte, error) {
	var h Header
	line, err := readLine(r)
	if err != nil {
		return h, nil, fmt.Errorf("read request: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, nil, fmt.Errorf("decode request: %w", err)
	}
	if dec.More() {
		return h, nil, errors.New("decode request: text after the JSON object")
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(token)) != 1 || token == "" {
		return h, nil, ErrToken
	}
	if err := h.Validate(); err != nil {
		return h, nil, fmt.Errorf("request: %w", err)
	}
	body, err := readN(r, h.Size)
	if err != nil {
		return h, nil, fmt.Errorf("read request body: %w", err)
	}
	return h, body, nil
}

// readLine reads up to '\n', refusing lines over MaxHeader.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxHeader {
			return nil, fmt.Errorf("header is over %d bytes", MaxHeader)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// Response is the agent's answer. Err is a refusal or a failure of the agent itself (a bad
// token, a write that failed); a command that could not be started is not one: Docker
// reports that as exit 126 with a message on stdout, and so does the agent.
type Response struct {
	Exit   int    `json:"exit"`
	Stdout []byte `json:"-"`
	Stderr []byte `json:"-"`
	Err    string `json:"err,omitempty"`
}

type responseLine struct {
	Exit   int    `json:"exit"`
	Stdout int64  `json:"stdout"`
	Stderr int64  `json:"stderr"`
	Err    string `json:"err,omitempty"`
}

// WriteResponse sends r.
func WriteResponse(w io.Writer, r Response) error {
	line, err := json.Marshal(responseLine{Exit: r.Exit, Stdout: int64(len(r.Stdout)), Stderr: int64(len(r.Stderr)), Err: r.Err})
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	buf := make([]byte, 0, len(line)+1+len(r.Stdout)+len(r.Stderr))
	buf = append(append(append(append(buf, line...), '\n'), r.Stdout...), r.Stderr...)
	_, err = w.Write(buf)
	return err
}

// ReadResponse reads one response from r.
func ReadResponse(r *bufio.Reader) (Response, error) {
	var res Response
	line, err := readLine(r)
	if err != nil {
		return res, fmt.Errorf("read response: %w", err)
	}
	var l responseLine
	if err := json.Unmarshal(line, &l); err != nil {
		return res, fmt.Errorf("decode response: %w", err)
	}
	if l.Stdout < 0 || l.Stderr < 0 || l.Stdout > MaxBody || l.Stderr > MaxBody {
		return res, fmt.Errorf("decode response: output lengths %d and %d out of range", l.Stdout, l.Stderr)
	}
	res.Exit, res.Err = l.Exit, l.Err
	if res.Stdout, err = readN(r, l.Stdout); err != nil {
		return res, fmt.Errorf("read stdout: %w", err)
	}
	if res.Stderr, err = readN(r, l.Stderr); err != nil {
		return res, fmt.Errorf("read stderr: %w", err)
	}
	return res, nil
}

// readN reads exactly n bytes (n at most MaxBody, checked by the caller). Memory grows
// with what arrives, not with the n the other side announced.
func readN(r io.Reader, n int64) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(min(n, 1<<20)))
	got, err := io.Copy(&b, io.LimitReader(r, n))
	if err != nil {
		return nil, err
	}
	if got != n {
		return nil, fmt.Errorf("%d of %d bytes", got, n)
	}
	return b.Bytes(), nil
}

// MergeEnv is the environment Docker gives an exec with extra on top of a container's
// base environment, in both of its steps. The daemon applies extra to base: KEY=VALUE
// replaces KEY's entry of base in place or is appended, and a bare KEY removes base's
// entry. runc then sets the entries one by one, so a key given twice keeps its first
// place and its last value, and a HOME that is missing or empty becomes home, the user's
// home directory. An entry runc cannot set (no name, a NUL byte) is an error, as it is
// when runc starts the process.
func MergeEnv(base, extra []string, home string) ([]string, error) {
	merged := append([]string(nil), base...)
	at := make(map[string]int, len(base))
	for i, e := range base {
		k, _, _ := strings.Cut(e, "=")
		at[k] = i
	}
	const gone = "\x00gone"
	for _, e := range extra {
		k, _, hasValue := strings.Cut(e, "=")
		i, ok := at[k]
		switch {
		case !hasValue:
			if ok {
				merged[i] = gone
			}
		case ok:
			merged[i] = e
		default:
			merged = append(merged, e)
		}
	}
	var out []string
	first := map[string]int{}
	for _, e := range merged {
		if e == gone {
			continue
		}
		k, _, hasValue := strings.Cut(e, "=")
		if !hasValue || k == "" || strings.ContainsRune(e, 0) {
			return nil, fmt.Errorf("invalid environment variable %q", e)
		}
		if i, ok := first[k]; ok {
			out[i] = e
			continue
		}
		first[k] = len(out)
		out = append(out, e)
	}
	if i, ok := first["HOME"]; !ok {
		out = append(out, "HOME="+home)
	} else if out[i] == "HOME=" {
		out[i] = "HOME=" + home
	}
	return out, nil
}

// AgentEnv splits the agent's own environment, as a docker exec with the one extra entry
// tokenVar=... gave it, into the container's environment (what an exec's extra entries
// are merged into) and the home directory runc gives a process without HOME. The token's
// entry is the last one Docker sets; a HOME right after it is runc's, not the container's.
// Without one, home is root's home directory.
func AgentEnv(environ []string, tokenVar string) (base []string, home string) {
	home = "/root"
	for i := 0; i < len(environ); i++ {
		e := environ[i]
		if strings.HasPrefix(e, tokenVar+"=") {
			if i+2 == len(environ) && strings.HasPrefix(environ[i+1], "HOME=") {
				home = strings.TrimPrefix(environ[i+1], "HOME=")
				break
			}
			continue
		}
		base = append(base, e)
	}
	return base, home
}

// StartFailure is what Docker's exec reports on stdout, with exit code 126, when the
// runtime cannot start a command (runc's message around the lookup's or exec's error).
func StartFailure(err error) []byte {
	return []byte("OCI runtime exec failed: exec failed: unable to start container process: " + err.Error() + ": unknown\r\n")
}

// StartFailureExit is the exit code Docker's exec gives a command that did not start.
const StartFailureExit = 126
