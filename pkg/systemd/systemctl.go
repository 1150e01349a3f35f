package systemd

import (
	"context"
	"fmt"
	"github.com/richt/services/pkg/invocation"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// Systemd is the manager, as the module needs it.
type Systemd interface {
	Show(ctx context.Context, unit string) (Props, error)
	DaemonReload(ctx context.Context) error
	// Job runs start, stop, restart or reload and returns when systemd finished the job.
	Job(ctx context.Context, action, unit string) error
	SetEnabled(ctx context.Context, unit string, enabled bool) error
	// SetMasked masks or unmasks the unit and reloads the manager.
	SetMasked(ctx context.Context, unit string, masked bool) error
	// Journal returns the unit's last journal lines, for failure messages.
	Journal(ctx context.Context, unit string, lines int) []string
}

// UnitFileEnabler is implemented by backends that can change a unit's boot state without
// reloading the manager. A run that reloads the manager anyway (a manager sync) enables
// first and lets that one reload serve both: enabling works on the unit's files on disk,
// not on what the manager has loaded, and systemd marks every unit NeedDaemonReload after
// it until the next reload, which the sync then is.
type UnitFileEnabler interface {
	// EnableFiles makes or removes the unit's [Install] links; changed says whether any
	// link was made or removed.
	EnableFiles(ctx context.Context, unit string, enabled bool) (changed bool, err error)
}

// FailedResetter is implemented by backends that can clear a unit's failed state and its
// start rate counter (systemctl reset-failed; the Manager's ResetFailedUnit).
type FailedResetter interface {
	ResetFailed(ctx context.Context, unit string) error
}

// PIDReader is implemented by backends whose Show leaves MainPID at 0 to keep an
// observation to one query; the result's main_pid after an action comes from it.
type PIDReader interface {
	MainPID(ctx context.Context, unit string) (int, error)
}

// Systemctl talks to systemd through systemctl and journalctl; with User, to the running
// user's manager (systemctl --user), whose runtime directory must be in the environment
// (Scope.Env).
type Systemctl struct {
	Runner runner.Runner
	User   bool
}

var withoutMainPID = func() []string {
	var out []string
	for _, p := range Properties {
		if p != "MainPID" {
			out = append(out, p)
		}
	}
	return out
}()

// systemctl is the command line of one systemctl call in this backend's scope.
func (s Systemctl) systemctl(args ...string) []string {
	if s.User {
		return append([]string{"systemctl", "--user"}, args...)
	}
	return append([]string{"systemctl"}, args...)
}

// Show implements Systemd with one systemctl call.
func (s Systemctl) Show(ctx context.Context, unit string) (Props, error) {
	// MainPID is a service's property: systemctl prints nothing for it on a timer or a
	// socket, so it is asked of services only (0 elsewhere, as over D-Bus).
	props, out := Properties, ""
	if !strings.HasSuffix(unit, ".service") {
		props, out = withoutMainPID, "MainPID=0\n"
	}
	res, err := s.Runner.Run(ctx, s.systemctl("show", "--property="+strings.Join(props, ","), "--", unit)...)
	if err != nil {
		return Props{}, fmt.Errorf("observe %s: %w", unit, err)
	}
	if res.ExitCode != 0 {
		return Props{}, fmt.Errorf("observe %s: systemctl show exited %d: %s", unit, res.ExitCode, res.Output())
	}
	p, err := ParseShow(res.Stdout + out)
	if err != nil {
		return Props{}, fmt.Errorf("observe %s: %w", unit, err)
	}
	return p, nil
}

func (s Systemctl) run(ctx context.Context, argv ...string) error {
	res, err := s.Runner.Run(ctx, argv...)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s exited %d: %s", strings.Join(argv, " "), res.ExitCode, res.Output())
	}
	return nil
}

// DaemonReload implements Systemd.
func (s Systemctl) DaemonReload(ctx context.Context) error {
	return s.run(ctx, s.systemctl("daemon-reload")...)
}

// ResetFailed implements FailedResetter.
func (s Systemctl) ResetFailed(ctx context.Context, unit string) error {
	return s.run(ctx, s.systemctl("reset-failed", "--", unit)...)
}

// Job implements Systemd; systemctl waits for the job unless told otherwise.
func (s Systemctl) Job(ctx context.Context, action, unit string) error {
	return s.run(ctx, s.systemctl(action, "--", unit)...)
}

// SetEnabled implements Systemd.
func (s Systemctl) SetEnabled(ctx context.Context, unit string, enabled bool) error {
	verb := "disable"
	if enabled {
		verb = "enable"
	}
	return s.run(ctx, s.systemctl(verb, "--", unit)...)
}

// SetMasked implements Systemd; systemctl reloads the manager itself.
func (s Systemctl) SetMasked(ctx context.Context, unit string, masked bool) error {
	verb := "unmask"
	if masked {
		verb = "mask"
	}
	return s.run(ctx, s.systemctl(verb, "--", unit)...)
}

// Journal implements Systemd: the unit's last lines since this run began
// (invocation.Start), so a failure message never quotes what earlier runs logged.
func (s Systemctl) Journal(ctx context.Context, unit string, lines int) []string {
	which := "--unit=" + unit
	if s.User {
		which = "--user-unit=" + unit
	}
	res, err := s.Runner.Run(ctx, "journalctl", "--no-pager", "--quiet", "-o", "short-iso", "-n", fmt.Sprint(lines), fmt.Sprintf("--since=@%d", invocation.Epoch()), which)
	if err != nil || res.ExitCode != 0 {
		return []string{fmt.Sprintf("(journal of %s not available: %v %s)", unit, err, strings.TrimSpace(res.Stderr))}
	}
	out := strings.TrimRight(res.Stdout, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// BackendEnv selects the systemd backend by hand: "dbus", "systemctl", or unset for
// D-Bus with systemctl as the fallback. It exists for debugging and for testing both.
const BackendEnv = "RICHT_SYSTEMD_BACKEND"

// NewSystemd returns the D-Bus backend of the scope's manager when it answers, else
// systemctl, and a function that releases it.
func NewSystemd(ctx context.Context, r runner.Runner, backend string, scope Scope) (Systemd, func(), error) {
	sc := Systemctl{Runner: r, User: scope.User}
	if backend == "systemctl" {
		return sc, func() {}, nil
	}
	b, err := Connect(ctx, sc, scope)
	if err != nil {
		if backend == "dbus" {
			return nil, nil, err
		}
		return sc, func() {}, nil
	}
	return b, b.Close, nil
}
