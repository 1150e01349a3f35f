package lifecycle

import (
	"fmt"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitname"
)

// Params are systemd_lifecycle's parameters, decoded as Spec declares them.
type Params struct {
	Unit         string         `ansible:"unit"`
	State        string         `ansible:"state"`
	Enabled      *bool          `ansible:"enabled"`
	Timeout      time.Duration  `ansible:"timeout"`
	RestartOn    []any          `ansible:"restart_on"`
	ReloadOn     []any          `ansible:"reload_on"`
	FactsFrom    []any          `ansible:"facts_from"`
	AllowMissing bool           `ansible:"allow_missing"`
	Scope        string         `ansible:"scope"`
	Masked       *bool          `ansible:"masked"`
	Settle       *string        `ansible:"settle"`
	Health       map[string]any `ansible:"health"`
}

// Spec is systemd_lifecycle's parameter contract.
func Spec() *ansible.Spec {
	s := &ansible.Spec{
		Name: "systemd_lifecycle",
		Params: []ansible.Param{
			{
				Name: "unit", Kind: ansible.Str, Required: true,
				Description: []string{
					`The unit, for example C(demo), C(demo.service), C(web@blue.service). Without a type
					suffix C(.service) is added. A template without an instance is refused.`,
				},
			},
			{
				Name: "state", Kind: ansible.Str, Default: "running", Choices: []string{"running", "stopped"},
				Description: []string{
					`The run state.`,
				},
			},
			{
				Name: "enabled", Kind: ansible.Bool,
				Description: []string{
					`Whether the unit starts at boot. Omitted leaves it as it is.`,
					`Units whose unit file state is C(static), C(indirect), C(generated), C(transient) or
					C(alias) cannot be enabled or disabled; the task warns and changes nothing.`,
					`A C(masked) unit fails for C(enabled=true) (and for C(state=running)) unless
					C(masked=false) unmasks it first.`,
				},
			},
			{
				Name: "timeout", Kind: ansible.Duration, Default: "5s",
				Description: []string{
					`One deadline for the whole run (a positive Go duration such as C(5s), C(1m30s)),
					including the wait for the unit's lock, the daemon-reload, each action and its
					verification, the settle time and every attempt of the health probe. A timed-out
					task fails; systemd keeps a job it already accepted, and a reaction already recorded
					as due stays recorded for the next run.`,
				},
			},
			{
				Name: "restart_on", Kind: ansible.List, Elements: ansible.Raw, Summarize: reaction.Summarize("restart_on"),
				Description: []string{
					`Triggers that restart the unit if it is running. Each item is a registered result
					(C("{{ result }}"); for loops, any changed item counts), a boolean, or a mapping of
					names to those so messages can name them.`,
					`Trigger values are never echoed in the result, only summarised.`,
					`A restart is left out when the triggers' results say when their files were in place
					(C(files_placed)) and the unit became active after that (I(reaction=served)); see
					the description.`,
					`The item C(libraries) restarts the unit when any process of its control group (a
					forking daemon's workers too) maps a regular file that was replaced or deleted since
					it mapped it (a library update, whatever made it), read from C(/proc/PID/maps); it
					merges with the other triggers. A unit with C(RefuseManualStop=yes) is never
					restarted for it, only reported (C(libraries), a warning). A unit whose
					I(restart_on) does not name it is reported the same way, in check mode too; see
					docs/libraries.md.`,
				},
			},
			{
				Name: "reload_on", Kind: ansible.List, Elements: ansible.Raw, Summarize: reaction.Summarize("reload_on"),
				Description: []string{
					`Triggers that reload the unit if it is running; same forms as I(restart_on). A name
					may not appear in both lists.`,
					`When given, the unit must be reload-capable (a non-empty C(ExecReload=) after
					merging its fragment and drop-ins, or C(Type=notify-reload)); this is checked on
					every run, also when no trigger changed.`,
				},
			},
			{
				Name: "facts_from", Kind: ansible.List, Elements: ansible.Raw, Summarize: reaction.Summarize("facts_from"), VersionAdded: "0.2.0",
				Description: []string{
					`Changes that ask for no reaction but tell the run what the manager must load; same
					forms as I(restart_on). A changed unit file (C(unit_files_changed)) plans the
					manager reload, and a changed package (C(package_changed)) lets a unit the package
					installs be planned for, also in check mode, where it is not installed yet.`,
					`The C(service) module passes every process its service's changes here, so that a
					process naming its reactions still plans from them.`,
				},
			},
			{
				Name: "allow_missing", Kind: ansible.Bool, Default: false,
				Description: []string{
					`For removal flows, a unit that does not exist is fine when I(state=stopped) and
					I(enabled) is false or omitted.`,
				},
			},
			{
				Name: "scope", Kind: ansible.Str, Default: "system", Choices: []string{"system", "user"}, VersionAdded: "0.2.0",
				Description: []string{
					`C(system) manages a unit of the system manager. C(user) manages a unit of the own
					manager (C(systemctl --user)) of the user the module runs as, which with become is
					the I(become_user).`,
					`See the notes for how the user manager is found and where records and locks are
					kept.`,
				},
			},
			{
				Name: "masked", Kind: ansible.Bool, VersionAdded: "0.2.0",
				Description: []string{
					`C(true) masks the unit, stopping it first if it runs; C(false) unmasks it. Omitted
					leaves the mask as it is.`,
					`C(true) is refused together with I(state=running) or I(enabled=true), before
					anything is observed. I(state) defaults to C(running), so C(masked: true) needs
					C(state: stopped).`,
					`See the notes for what masking and unmasking do.`,
				},
			},
			{
				Name: "settle", Kind: ansible.Str, VersionAdded: "0.2.0",
				Description: []string{
					`How long the unit must stay C(active), with the same invocation, after a run-state
					action before the action counts as verified. A Go duration of zero or more, such as
					C(0s), C(300ms) or C(2s).`,
					`Omitted, it is 300 ms after a start or restart and 0 after a reload; with I(health)
					it is 0 after a start or restart too, since a process that answers its probe has
					proved more, and the unit must still be active with the start's invocation once the
					probe passed. Given, it applies to every run-state action. See the notes.`,
					`After a signalled reload with I(health) (a unit that is not C(Type=notify-reload):
					its C(ExecReload=) signals the daemon and returns) it is 1 s when omitted, and
					every probe attempt during it must pass; see the notes.`,
				},
			},
			{
				Name: "health", Kind: ansible.Dict, VersionAdded: "0.2.0",
				Description: []string{
					`One probe that checks whether the unit's service answers, as a mapping with exactly
					one of I(tcp), I(http) or I(banner); I(expect) goes with I(banner) and only with it.`,
					`The mapping is validated when the task starts; a malformed probe fails the task
					before systemd is asked anything.`,
					`Host names and addresses: an IPv6 address goes in brackets (C([::1]:8080)); a
					wildcard host (C(0.0.0.0), C([::]), C(*), or none as in C(:8080)) is an address to
					listen on, not to connect to, so the probe connects to loopback instead (C([::1])
					for an IPv6 wildcard, C(127.0.0.1) otherwise). Ports are 1 to 65535.`,
					`See the notes for when probes run and what a failure reports.`,
				},
				Suboptions: []ansible.Param{
					{
						Name: "tcp", Kind: ansible.Str,
						Description: []string{
							`C(HOST:PORT). Healthy when a TCP connection to it is accepted.`,
						},
					},
					{
						Name: "http", Kind: ansible.Str,
						Description: []string{
							`An C(http://) URL. Healthy when a C(GET) of it is answered with any 2xx
							status.`,
							`Only C(http): C(https) and every other scheme are refused, because a probe
							of loopback cannot verify the certificate of the public name the service is
							published under.`,
							`Without a port the probe uses port 80; an empty port (C(http://host:/)) is
							refused, and so is a URL with credentials (C(user@host)).`,
							`Redirects are not followed: a 3xx answer is unhealthy, and the message names
							where it pointed (C(Location)).`,
							`The request is a plain HTTP/1.0 C(GET) with C(Connection: close), sent
							straight to the URL's address, never through a proxy.`,
						},
					},
					{
						Name: "banner", Kind: ansible.Str,
						Description: []string{
							`C(HOST:PORT). Connects and reads what the server sends first: at most 4096
							bytes, stopping at the first newline, at the end of the stream, at the
							deadline, or as soon as I(expect) has been read.`,
							`Healthy when I(expect) occurs anywhere in what was read. A server that sends
							nothing is unhealthy.`,
						},
					},
					{
						Name: "expect", Kind: ansible.Str,
						Description: []string{
							`The text the greeting must contain, for I(banner) only; at most 4096 bytes.`,
						},
					},
				},
			},
		},
	}
	// Parsed once, where it is validated: the handler reads the Task (ansible.Parsed).
	ansible.ParseInto(s, parse)
	return s
}

// Task is systemd_lifecycle's typed request, as Spec parses it.
type Task struct {
	Request
	// Scope is the manager the unit belongs to ("system" or "user"), which the module's
	// main picks its systemd connection, records and locks by.
	Scope string
}

// parse checks the parameters and turns them into the Task.
func parse(p Params) (Task, error) {
	unit, err := unitname.Normalize(p.Unit)
	if err != nil {
		return Task{}, err
	}
	if p.Masked != nil && *p.Masked {
		if p.State == "running" {
			return Task{}, fmt.Errorf("masked: true cannot be combined with state: running (a masked unit cannot be started); use state: stopped")
		}
		if p.Enabled != nil && *p.Enabled {
			return Task{}, fmt.Errorf("masked: true cannot be combined with enabled: true (a masked unit cannot be enabled)")
		}
	}
	w := Want{
		Unit: unit, Running: p.State == "running",
		Enabled: p.Enabled, Masked: p.Masked,
		AllowMissing: p.AllowMissing,
	}
	if p.Settle != nil {
		d, err := timeout.ParseNonNegative(*p.Settle)
		if err != nil {
			return Task{}, fmt.Errorf("settle: %w", err)
		}
		w.Settle = &d
	}
	if p.Health != nil {
		h, err := health.Parse(p.Health)
		if err != nil {
			return Task{}, err
		}
		w.Health = &h
	}
	return Task{Request: Request{Want: w, Limit: p.Timeout}, Scope: p.Scope}.Triggered(p.RestartOn, p.ReloadOn, p.FactsFrom)
}

// Triggered is t with its triggers: restart_on, reload_on and facts_from as the
// parameters take them (reaction.Parse, reaction.ParseFacts). A module that composes
// systemd_lifecycle (the service) parses a process's other parameters once and adds the
// triggers, which exist only at the process's turn, so.
func (t Task) Triggered(restartOn, reloadOn, factsFrom []any) (Task, error) {
	trig, err := reaction.Parse(restartOn, reloadOn)
	if err != nil {
		return Task{}, err
	}
	if trig.Facts, err = reaction.ParseFacts(factsFrom); err != nil {
		return Task{}, err
	}
	t.Triggers = trig
	// A reload_on given, even of unchanged triggers, asks for a reload-capable unit.
	t.Want.ReloadOn = len(reloadOn) > 0
	return t, nil
}
