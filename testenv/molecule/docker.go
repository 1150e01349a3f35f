package molecule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Docker reaches targets a create made, possibly in another process: richt-molecule
// create, converge and destroy are separate commands, so after create a target is known by
// its container ID alone.
type Docker interface {
	// Exec runs argv in the container and returns its output and exit code; an error
	// means the command could not be run at all.
	Exec(ctx context.Context, id string, argv ...string) (stdout string, code int, err error)
	// Remove removes the containers carrying label=value (all of a scenario's targets).
	Remove(ctx context.Context, label, value string) (removed int, err error)
}

// DockerCLI is Docker through the docker command.
type DockerCLI struct{}

// Exec implements Docker.
func (DockerCLI) Exec(ctx context.Context, id string, argv ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"exec", id}, argv...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// docker exec itself fails with 125-127 when the container is gone.
		if c := ee.ExitCode(); c < 125 {
			return out.String(), c, nil
		}
		return out.String(), ee.ExitCode(), fmt.Errorf("docker exec %s: %s", id, strings.TrimSpace(errb.String()))
	}
	if err != nil {
		return out.String(), -1, fmt.Errorf("docker exec %s: %w", id, err)
	}
	return out.String(), 0, nil
}

// Remove implements Docker.
func (DockerCLI) Remove(ctx context.Context, label, value string) (int, error) {
	out, err := exec.CommandContext(ctx, "docker", "ps", "-aq", "--filter", "label="+label+"="+value).Output()
	if err != nil {
		return 0, fmt.Errorf("docker ps: %w", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return 0, nil
	}
	if out, err := exec.CommandContext(ctx, "docker", append([]string{"rm", "-f", "-v"}, ids...)...).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("docker rm: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return len(ids), nil
}
