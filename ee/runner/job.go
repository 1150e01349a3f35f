// Package runner runs jobs the way AWX and Ansible Automation Platform do, through
// ansible-runner: a private data directory (DataDir) is packed by `ansible-runner
// transmit`, run by `ansible-runner worker` (the execution node) and its events and
// artifacts written back by `ansible-runner process`, each stage in a container of the
// execution environment's image (package ee builds it; docs/ee.md). Every name here is an
// ansible-runner concept: its private data dir, its job, its artifacts and job events.
package runner

import (
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Job is one job through AWX's path, each stage in a container of Image: transmit packs
// Dir and the job's arguments into a stream, worker (the execution node) unpacks and runs
// it and streams events and artifacts back, process writes them to Out/artifacts/Ident.
// Transmit and process run in the image too, so all three stages are one ansible-runner
// version (their stream format is versioned with it).
type Job struct {
	// Image is the execution environment's image (ee.Image.Tag).
	Image string
	// Dir is the private data directory (DataDir.Write); Out receives the artifacts.
	Dir, Out string
	// Playbook is the playbook's path under project/.
	Playbook string
	// Ident names the job's artifact directory (default "job"); Out/artifacts/Ident must
	// not exist yet.
	Ident string
}

// Result is a finished job as the process stage recorded it.
type Result struct {
	// Status is the job's final status (successful, failed, error, timeout, canceled).
	Status string
	// RC is ansible-playbook's exit code (-1: none recorded, or a signal ended it).
	RC int
	// Events are the job events in counter order.
	Events []Event
	// Wall is the pipeline's time, transmit's start to process's end.
	Wall time.Duration
	// ArtifactDir is where process wrote the artifacts.
	ArtifactDir string
}

// jobLabel marks every stage's container with the job's ident. Each runs with --rm, so a
// finished stage leaves nothing; Run removes the containers of a stage it killed (ctx),
// and a container that outlived a killed test or bench (its docker client gone, not the
// container) is found by `docker ps -a --filter label=org.richt.ee.job`.
const jobLabel = "org.richt.ee.job"

// validIdent is what docker allows in a container's name.
var validIdent = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Run runs the job. An error means the pipeline itself broke: a stage that did not start
// or was killed, docker's own failure (exit 125-127), transmit or process failing, or a
// job that left no status. A job that ran and failed (ansible-playbook's exit 2 for a
// failed host, 4 for an unreachable one, which the worker passes on) returns its Result
// with Status "failed" and no error.
func (j Job) Run(ctx context.Context) (Result, error) {
	return j.run(ctx, dockerPipeline)
}

func (j Job) run(ctx context.Context, pipe pipeline) (Result, error) {
	ident := j.Ident
	if ident == "" {
		ident = "job"
	}
	// The ident is a directory name under artifacts/ and part of the containers' names.
	if !validIdent.MatchString(ident) {
		return Result{}, fmt.Errorf("job: Ident %q: not a name of letters, digits, '.', '_' and '-' (starting with a letter or digit)", ident)
	}
	if j.Image == "" || j.Playbook == "" {
		return Result{}, fmt.Errorf("job %s: Image and Playbook are required", ident)
	}
	dir, err := filepath.Abs(j.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: private data dir: %w", ident, err)
	}
	out, err := filepath.Abs(j.Out)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	// Reading a --mount value turns a quoted \r\n into \n (encoding/csv), so a path with a
	// carriage return could not reach docker as it is.
	for _, p := range []struct{ field, path string }{{"Dir", dir}, {"Out", out}} {
		if strings.Contains(p.path, "\r") {
			return Result{}, fmt.Errorf("job %s: %s %q: a path with a carriage return cannot be passed to docker --mount", ident, p.field, p.path)
		}
	}
	// process adds its files to whatever is there: an earlier job's job_events under the
	// same ident would become this job's events.
	artifacts := filepath.Join(out, "artifacts", ident)
	switch _, err := os.Lstat(artifacts); {
	case err == nil:
		return Result{}, fmt.Errorf("job %s: %s already exists: an earlier job's events would mix into this one's; use a new Ident or Out", ident, artifacts)
	case !errors.Is(err, fs.ErrNotExist):
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	// The controller's stages run as this process's user, so they read the private data
	// dir and the artifacts stay this user's.
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	stages := j.stages(dir, out, ident, "richt-ee-"+ident+"-"+hex.EncodeToString(suffix), user)
	start := time.Now()
	ended := pipe(ctx, stages)
	wall := time.Since(start)
	res, err := outcome(ident, stages, ended, func() (Result, error) { return ReadArtifacts(artifacts) })
	if err != nil {
		return Result{}, err
	}
	res.Wall = wall
	return res, nil
}

// bind is docker's --mount value binding the host's src to dst in the container. docker's
// CLI reads the value as one CSV record (encoding/csv), so each field is written by
// encoding/csv too: a field with a comma or a double quote is quoted, which keeps the path
// whole (test dirs carry commas from subtest names). A ':' needs nothing here, unlike in
// -v's src:dst form, where it moved the split.
func bind(src, dst string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	// Writing to a strings.Builder cannot fail.
	_ = w.Write([]string{"type=bind", "src=" + src, "dst=" + dst})
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// stage is one stage of a job: a docker run of the image.
type stage struct {
	name      string   // transmit, worker or process
	container string   // the container's name, to remove it after a killed run
	args      []string // docker's arguments
}

// stages are the job's three docker runs. The worker runs as the image's user, as on an
// execution node, and sees nothing of this host but its stdin.
func (j Job) stages(dir, out, ident, name, user string) []stage {
	label := jobLabel + "=" + ident
	return []stage{
		{"transmit", name + "-transmit", []string{"run", "--rm", "--name", name + "-transmit", "--label", label, "--user", user, "-e", "HOME=/tmp",
			"--mount", bind(dir, "/job"), j.Image, "ansible-runner", "transmit", "/job", "-p", j.Playbook, "--ident", ident}},
		{"worker", name + "-worker", []string{"run", "-i", "--rm", "--name", name + "-worker", "--label", label,
			j.Image, "ansible-runner", "worker"}},
		{"process", name + "-process", []string{"run", "-i", "--rm", "--name", name + "-process", "--label", label, "--user", user, "-e", "HOME=/tmp",
			"--mount", bind(out, "/out"), j.Image, "ansible-runner", "process", "/out", "--ident", ident}},
	}
}
