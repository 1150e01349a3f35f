package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"github.com/richt/services/pkg/systemd"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/unitname"
)

// Store is the durable store on the target (package durable).
type Store interface {
	ManagerSync() (durable.Sync, error)
	ClearManagerSync(ctx context.Context, seen durable.Sync) error
	GetPending(unit string) (*durable.Pending, error)
	SetPending(unit string, p durable.Pending) error
	ClearPending(unit string) error
}

// Deps are the module's side effects.
type Deps struct {
	Systemd systemd.Systemd
	Store   Store
	// Root is the filesystem root unit files are read from ("" for /).
	Root string
	// Lock serializes the runs for one unit (package lock); nil runs unserialized, for
	// tests of a single run.
	Lock lock.Func
	// Now reads systemd's clock (package stamp); nil means stamp.Now.
	Now func() (stamp.Stamp, error)
	// Clock times settle waits and polls; nil means the real clock. Tests inject one
	// that does not sleep.
	Clock Clock
	// Poll is how often a unit is observed while an action is verified (0: 50 ms).
	Poll time.Duration
	// Prober runs health probes; nil means health.Wait every 100 ms.
	Prober Prober
}

// Clock is the time source of verification.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Prober runs a probe until it passes or ctx ends.
type Prober interface {
	Wait(ctx context.Context, p health.Probe) (attempts int, err error)
}

type netProber struct{}

// probeEvery is how often a failing probe is tried again within the deadline.
const probeEvery = 100 * time.Millisecond

func (netProber) Wait(ctx context.Context, p health.Probe) (int, error) {
	return health.Wait(ctx, p, probeEvery)
}

func (d Deps) clk() Clock {
	if d.Clock != nil {
		return d.Clock
	}
	return realClock{}
}

func (d Deps) poll() time.Duration {
	if d.Poll > 0 {
		return d.Poll
	}
	return 50 * time.Millisecond
}

func (d Deps) prober() Prober {
	if d.Prober != nil {
		return d.Prober
	}
	return netProber{}
}

// State is a unit's state as results report it.
type State struct {
	State         string `json:"state"`
	Enabled       *bool  `json:"enabled"`
	UnitFileState string `json:"unit_file_state"`
	LoadState     string `json:"load_state"`

	active, sub string // for messages only
	fragment    string
}

// text is the diff form: the facts a person compares, one per line.
func (s *State) text() string {
	en := "n/a (" + s.UnitFileState + ")"
	if s.Enabled != nil {
		en = fmt.Sprint(*s.Enabled)
	}
	return fmt.Sprintf("state: %s\nenabled: %s\n", s.State, en)
}

// Result is the module's return value.
type Result struct {
	Changed bool     `json:"changed"`
	Unit    string   `json:"unit"`
	Before  *State   `json:"before,omitempty"`
	After   *State   `json:"after,omitempty"`
	Actions []string `json:"actions"`
	// Plan is every step the run decided, in order: those before the run state
	// (record-pending, an enable ahead of the sync, daemon-reload) and the plan's. Check
	// mode reports the steps a real run takes.
	Plan          []string             `json:"plan"`
	Reaction      reaction.Kind        `json:"reaction"`
	Triggers      []string             `json:"triggers"`
	Pending       string               `json:"pending_from_earlier_run,omitempty"`
	RestartServed string               `json:"restart_served,omitempty"`
	SyncReasons   []string             `json:"daemon_reload_reasons,omitempty"`
	ReloadCapable *unitfile.Capability `json:"reload_capable,omitempty"`
	MainPID       int                  `json:"main_pid,omitempty"`
	Health        *HealthResult        `json:"health,omitempty"`
	Journal       []string             `json:"journal,omitempty"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`

	// What later tasks read (package contract): no package or unit file changes here;
	// daemon_reload is performed when this run reloaded the manager; changed_at when the
	// run changed anything.
	contract.Change
}

// HealthResult is what the health probe found.
type HealthResult struct {
	Probe    string `json:"probe"`
	Attempts int    `json:"attempts"`
	Healthy  bool   `json:"healthy"`
}

// Params are systemd_lifecycle's parameters, decoded as Spec declares them.
type Params struct {
	Unit         string         `ansible:"unit"`
	State        string         `ansible:"state"`
	Enabled      *bool          `ansible:"enabled"`
	Timeout      time.Duration  `ansible:"timeout"`
	RestartOn    []any          `ansible:"restart_on"`
	ReloadOn     []any          `ansible:"reload_on"`
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
	s.Check = func(v ansible.Values) error {
		var p Params
		if err := s.Decode(v, &p); err != nil {
			return err
		}
		if _, err := unitname.Normalize(p.Unit); err != nil {
			return err
		}
		if p.Masked != nil && *p.Masked {
			if p.State == "running" {
				return fmt.Errorf("masked: true cannot be combined with state: running (a masked unit cannot be started); use state: stopped")
			}
			if p.Enabled != nil && *p.Enabled {
				return fmt.Errorf("masked: true cannot be combined with enabled: true (a masked unit cannot be enabled)")
			}
		}
		if p.Settle != nil {
			if _, err := timeout.ParseNonNegative(*p.Settle); err != nil {
				return fmt.Errorf("settle: %w", err)
			}
		}
		if p.Health != nil {
			if _, err := health.Parse(p.Health); err != nil {
				return err
			}
		}
		_, err := reaction.Parse(p.RestartOn, p.ReloadOn)
		return err
	}
	return s
}

// Handler returns systemd_lifecycle's behaviour over the given side effects:
// prepare (lock, records, observation, manager sync, reload capability) → Decide (pure)
// → check mode reports the plan, or Apply carries it out and verifies it.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var p Params
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		w := wantFrom(p)
		trig, _ := reaction.Parse(p.RestartOn, p.ReloadOn)
		limit := p.Timeout
		ctx, cancel := timeout.Deadline(ctx, limit)
		defer cancel()
		res := &Result{Unit: w.Unit, Actions: []string{}, Plan: []string{}, Reaction: reaction.None, Triggers: []string{}}
		// One run per unit at a time, from the first read of its records to the end of
		// its verification: a run's reaction is never merged into a job another run
		// started, and no run reads or clears another's pending reaction half-way.
		if d.Lock != nil {
			release, err := d.Lock(ctx, lock.Unit(w.Unit))
			if err != nil {
				return res, fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", w.Unit, limit, err)
			}
			defer release()
		}
		r := &run{Deps: d, req: req, want: w, trig: trig, limit: limit, res: res}
		err := r.do(ctx)
		if err != nil && timeout.Expired(err) {
			err = fmt.Errorf("%w (timeout %s)", err, limit)
		}
		res.Changed = len(res.Actions) > 0
		if res.Changed && !req.CheckMode {
			res.Stamp(time.Now())
		}
		if res.Before != nil && res.After != nil {
			res.Diff = &ansible.Diff{
				Before: res.Before.text(), After: res.After.text(),
				BeforeHeader: w.Unit + " (before)", AfterHeader: w.Unit + " (after)",
			}
		}
		return res, err
	}
}

// wantFrom reads the validated parameters.
func wantFrom(p Params) Want {
	unit, _ := unitname.Normalize(p.Unit) // validated by Spec.Check
	w := Want{
		Unit: unit, Running: p.State == "running",
		Enabled: p.Enabled, Masked: p.Masked,
		AllowMissing: p.AllowMissing, ReloadOn: len(p.ReloadOn) > 0,
	}
	if p.Settle != nil {
		d, _ := timeout.ParseNonNegative(*p.Settle)
		w.Settle = &d
	}
	if p.Health != nil {
		h, _ := health.Parse(p.Health)
		w.Health = &h
	}
	return w
}

type run struct {
	Deps
	req     *ansible.Request
	want    Want
	trig    reaction.Triggers
	limit   time.Duration
	res     *Result
	synced  durable.Sync     // the manager-sync record as read, cleared after a reload
	now     stamp.Stamp      // systemd's clock, read when a pending reaction is involved
	pending *durable.Pending // the record of a reaction still due (this run's, once written)
	earlier *durable.Pending // an earlier run's record that is not served yet
}

func (r *run) check() bool { return r.req.CheckMode }

func (r *run) act(s Step) { r.res.Actions = append(r.res.Actions, string(s)) }

// do is one run: Observe (reads only), Prepare (pure: what comes before the run state),
// carry out or, in check mode, report those steps, Decide (pure: the run state), and
// Apply. Check mode reports the steps a real run takes, in the same order.
func (r *run) do(ctx context.Context) error {
	o, err := r.observe(ctx)
	if err != nil {
		return err
	}
	prep := Prepare(r.want, r.trig, o)
	f, err := r.prepare(ctx, o, prep)
	if err != nil {
		return err
	}
	p, err := Decide(r.want, f)
	if err != nil {
		return err
	}
	r.res.Plan = append(r.res.Plan, p.Names()...)
	if r.check() {
		r.report(p)
		return nil
	}
	return r.apply(ctx, p, f)
}

// report is check mode's answer: the plan's steps and the state they lead to.
func (r *run) report(p Plan) {
	for _, s := range p.Steps {
		r.act(s)
	}
	r.res.Reaction = p.Reaction
	for _, w := range p.Warnings {
		r.req.Warn("%s", w)
	}
	r.res.After.State = map[bool]string{true: "running", false: "stopped"}[p.After.Running]
	r.res.After.Enabled = p.After.Enabled
	if p.After.Masked {
		r.res.After.LoadState, r.res.After.UnitFileState = "masked", "masked"
	}
	if p.Reobserve {
		r.req.Warn("%s: check mode shows the unmask only; what follows it is decided once the unit is loaded", r.want.Unit)
	}
}

// predictedUnit is a unit as a package installing it leaves it: loaded, inactive and
// disabled (EL's default preset).
func predictedUnit(obs systemd.Props) systemd.Props {
	obs.LoadState, obs.ActiveState, obs.SubState, obs.UnitFileState = "loaded", "inactive", "dead", "disabled"
	return obs
}

// observe reads what the run decides from: the manager-sync record, the unit's pending
// reaction, the unit, systemd's clock when a reaction's timing matters, and the reload
// capability of the unit's files as the manager names them. It changes nothing.
func (r *run) observe(ctx context.Context) (Observation, error) {
	var o Observation
	var err error
	if o.Synced, err = r.Store.ManagerSync(); err != nil {
		return o, err
	}
	if o.Pending, err = r.Store.GetPending(r.want.Unit); err != nil {
		return o, err
	}
	if o.Unit, err = r.Systemd.Show(ctx, r.want.Unit); err != nil {
		return o, err
	}
	_, o.Enabler = r.Systemd.(systemd.UnitFileEnabler)
	if r.check() && o.Unit.LoadState == "not-found" && r.trig.PackageChanged() {
		// A trigger says a package change comes first, which check mode did not carry out:
		// the unit it installs is what the plan is for, not a missing unit. A new unit is
		// loaded, stopped and, by EL's presets, disabled.
		o.Unit, o.PredictedInstall = predictedUnit(o.Unit), true
	}
	if needsClock(r.want, r.trig, o.Pending, o.Unit) {
		if o.Now, err = r.clock(); err != nil {
			return o, err
		}
	}
	if r.want.ReloadOn && o.Unit.LoadState == "loaded" {
		// Files the manager still names may be gone until a due sync: then the capability
		// is read again after it, and this one is not needed.
		if c, err := r.capability(o.Unit, false); err == nil {
			o.Capability = &c
		}
	}
	return o, nil
}

// prepare carries out the prep steps in order (check mode reports them and changes
// nothing), fills in what the result says of them, and returns the facts the run state
// is decided from: after a sync the unit as the manager then shows it; in check mode the
// unit as observed, with the boot state an enable ahead of the sync would give it.
func (r *run) prepare(ctx context.Context, o Observation, prep Prep) (Facts, error) {
	obs := o.Unit
	r.synced, r.pending, r.earlier = o.Synced, o.Pending, prep.Pending
	r.res.Before, r.res.After = stateOf(obs), stateOf(obs)
	if o.Pending != nil {
		r.res.Pending = fmt.Sprintf("%s due since %s", o.Pending.Reaction, o.Pending.Since.Format(time.RFC3339))
		if prep.Served {
			r.res.Pending += "; already served: the unit became active after it was recorded"
		}
	}
	if prep.RestartServed != "" {
		r.res.RestartServed = fmt.Sprintf("the restart %s asked for was already done: the unit became active after the change had put its files in place (a package transaction restarts its units in its scriptlets)", prep.RestartServed)
	}
	r.res.Triggers = labels(r.trig, prep.Pending)
	f := Facts{Due: prep.Due, Served: prep.Served, RestartServed: prep.RestartServed != "", Pending: prep.Pending != nil}
	for _, step := range prep.Steps {
		r.res.Plan = append(r.res.Plan, string(step))
		switch step {
		case StepRecordPending:
			f.Pending = true
			if !r.check() {
				if _, err := r.recordPending(prep.Due); err != nil {
					return f, err
				}
			}
		case StepEnable, StepDisable:
			enable := step == StepEnable
			if r.check() {
				r.act(step)
				obs.UnitFileState = map[bool]string{true: "enabled", false: "disabled"}[enable]
				continue
			}
			changed, err := r.Systemd.(systemd.UnitFileEnabler).EnableFiles(ctx, r.want.Unit, enable)
			if err != nil {
				return f, fmt.Errorf("%s %s: %w", step, r.want.Unit, err)
			}
			if changed {
				r.act(step)
			}
		case StepDaemonReload:
			var err error
			if obs, err = r.sync(ctx, obs, prep.SyncReasons); err != nil {
				return f, err
			}
		}
	}
	synced := len(prep.SyncReasons) > 0
	f.SyncPredicted = r.check() && synced
	if o.PredictedInstall {
		// Its reload capability is not known until its files are there.
		r.req.Warn("%s: not installed yet; check mode plans for the unit the predicted package change installs (loaded, stopped, disabled)", r.want.Unit)
		if r.want.ReloadOn {
			f.Capability = &unitfile.Capability{Capable: true, Reason: "not known in check mode: the unit's package is not installed yet"}
		}
		f.Unit = obs
		return f, nil
	}
	// Reload capability, whenever reload_on is declared, also when no trigger changed, so
	// a unit that cannot reload fails before it ever needs to.
	if r.want.ReloadOn && obs.LoadState == "loaded" {
		c := o.Capability
		if synced || c == nil {
			read, err := r.capability(obs, synced)
			if err != nil {
				return f, err
			}
			c = &read
		}
		r.res.ReloadCapable = c
		f.Capability = c
	}
	f.Unit = obs
	return f, nil
}

// sync reloads systemd's manager (a change, reported as the daemon-reload action) and
// observes the unit again; in check mode it only reports the action, and obs stays what
// it was.
func (r *run) sync(ctx context.Context, obs systemd.Props, why []string) (systemd.Props, error) {
	r.res.SyncReasons = append(r.res.SyncReasons, why...)
	r.res.Actions = append(r.res.Actions, "daemon-reload")
	r.res.DaemonReload = contract.ReloadPerformed // in check mode, as the real run would report
	if r.check() {
		return obs, nil
	}
	// The entries read when the run began are the ones this reload serves.
	if err := systemd.ReloadManager(ctx, r.Systemd, r.Store, r.synced); err != nil {
		return systemd.Props{}, err
	}
	r.synced = durable.Sync{}
	obs, err := r.Systemd.Show(ctx, r.want.Unit)
	if err != nil {
		return systemd.Props{}, err
	}
	r.res.After = stateOf(obs)
	return obs, nil
}

func (r *run) capability(obs systemd.Props, synced bool) (unitfile.Capability, error) {
	var sources []unitfile.Source
	var err error
	if r.check() && synced {
		// Nothing was reloaded in check mode: read what the manager would load.
		frag, dropIns := unitfile.Files(r.Root, r.want.Unit)
		sources, err = unitfile.ReadSources(r.Root, frag, dropIns)
	} else {
		sources, err = unitfile.ReadSources(r.Root, obs.FragmentPath, obs.DropInPaths)
	}
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.want.Unit, err)
	}
	c, err := unitfile.Reloadable(sources)
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.want.Unit, err)
	}
	return c, nil
}

// apply carries out a plan step by step. After a step that changes what the rest was
// decided from (unmask, enable, disable), it observes again and decides again, so the
// run-state action always comes from the state observed immediately before acting.
func (r *run) apply(ctx context.Context, p Plan, f Facts) error {
	for _, w := range p.Warnings {
		r.req.Warn("%s", w)
	}
	r.res.Reaction = p.Reaction
	for rounds := 0; len(p.Steps) > 0; rounds++ {
		if rounds > len(allSteps) {
			return fmt.Errorf("%s: the plan did not converge after %v (a bug: please report it)", r.want.Unit, r.res.Actions)
		}
		step := p.Steps[0]
		if !runStepAt(p.Steps, 0) {
			// Configuration steps (and the stop before a mask) are verified one by one.
			obs, err := r.configure(ctx, step)
			if err != nil {
				return err
			}
			f.Unit = obs
			if step == StepStop || step == StepMask {
				p.Steps = p.Steps[1:]
				continue
			}
			want := r.want
			if step == StepUnmask {
				want.Masked = nil
			}
			if f.Capability == nil && want.ReloadOn && obs.LoadState == "loaded" {
				c, err := r.capability(obs, true)
				if err != nil {
					return err
				}
				r.res.ReloadCapable, f.Capability = &c, &c
			}
			next, err := Decide(want, f)
			if err != nil {
				return err
			}
			if step == StepUnmask { // the unit's warnings were not known before it was loaded
				for _, w := range next.Warnings {
					r.req.Warn("%s", w)
				}
			}
			r.res.Reaction = next.Reaction
			p = next
			continue
		}
		return r.runState(ctx, p, f, step)
	}
	return r.converged(ctx, p)
}

var allSteps = []Step{StepStop, StepMask, StepUnmask, StepEnable, StepDisable, StepStart, StepRestart, StepReload}

func isRunStep(s Step) bool {
	return s == StepStart || s == StepStop || s == StepRestart || s == StepReload
}

// configure carries out one configuration step (or the stop before a mask) and verifies it.
func (r *run) configure(ctx context.Context, step Step) (systemd.Props, error) {
	r.act(step)
	unit := r.want.Unit
	var err error
	switch step {
	case StepEnable, StepDisable:
		err = r.Systemd.SetEnabled(ctx, unit, step == StepEnable)
	case StepMask, StepUnmask:
		err = r.Systemd.SetMasked(ctx, unit, step == StepMask)
	case StepStop:
		if err = r.Systemd.Job(ctx, string(StepStop), unit); err == nil {
			var final systemd.Props
			if final, err = r.verify(ctx, reaction.Stop, 0); err == nil {
				return final, nil
			}
			return final, r.failure(reaction.Stop, reaction.None, nil, err)
		}
		return systemd.Props{}, r.failure(reaction.Stop, reaction.None, err, nil)
	}
	if err != nil {
		hint := ""
		if step == StepMask && strings.HasPrefix(r.res.Before.fragment, "/etc/systemd/system/") {
			hint = fmt.Sprintf("; a mask is a link to /dev/null at /etc/systemd/system/%s, where this unit's own file %s is: a unit defined there cannot be masked, remove its file instead", unit, r.res.Before.fragment)
		}
		return systemd.Props{}, fmt.Errorf("%s %s: %w%s", step, unit, err, hint)
	}
	obs, err := r.Systemd.Show(ctx, unit)
	if err != nil {
		return obs, err
	}
	r.res.After = stateOf(obs)
	switch step {
	case StepEnable, StepDisable:
		if got := obs.Enabled(); got == nil || *got != (step == StepEnable) {
			return obs, fmt.Errorf("%s %s: systemd accepted it but UnitFileState is %q", step, unit, obs.UnitFileState)
		}
	case StepMask:
		if obs.LoadState != "masked" {
			return obs, fmt.Errorf("mask %s: systemd accepted it but LoadState is %q", unit, obs.LoadState)
		}
	case StepUnmask:
		if obs.LoadState == "masked" {
			return obs, fmt.Errorf("unmask %s: systemd accepted it but the unit is still masked (a mask in /run or /usr is not the administrator's to remove)", unit)
		}
	}
	return obs, nil
}

// runState carries out the run-state step: the reaction is recorded first, so nothing is
// lost if this run fails or stops; then the job, its verification, and the probe.
func (r *run) runState(ctx context.Context, p Plan, f Facts, step Step) error {
	action := reaction.Action(step)
	if p.RecordPending {
		// Stamped again just before the job: a later activation proves this very job ran.
		r.now = stamp.Stamp{}
		if _, err := r.recordPending(f.Due); err != nil {
			return err
		}
	}
	r.act(step) // only now is the job sent
	var before systemd.Props
	if action == reaction.ReloadIt {
		before = f.Unit
	}
	jobErr := r.Systemd.Job(ctx, string(action), r.want.Unit)
	var final systemd.Props
	var err error
	var probing *probeRun
	if jobErr == nil {
		// The probe runs while the settle time passes: both must hold, and a service
		// usually answers within that window, so neither waits for the other.
		probing = r.startProbe(ctx, p)
		final, err = r.verify(ctx, action, p.Settle)
	}
	if err == nil && jobErr == nil && action == reaction.ReloadIt && before.InvocationID != "" && final.InvocationID != before.InvocationID {
		// A reload keeps the unit's process: a new invocation means it died and came back
		// (Restart=), which is no successful reload.
		err = fmt.Errorf("%s was started anew during its reload (invocation %s, then %s): the reload did not keep the process", r.want.Unit, before.InvocationID, final.InvocationID)
	}
	if jobErr != nil || err != nil {
		probing.abandon()
		due := reaction.None
		if p.RecordPending {
			due = f.Due
		}
		return r.failure(action, due, jobErr, err)
	}
	// verify already recorded the final state in r.res.After. main_pid is the process a
	// start or restart left running; a stop leaves none and a reload keeps the old one.
	if action == reaction.Start || action == reaction.RestartIt {
		r.res.MainPID = final.MainPID
		if pr, ok := r.Systemd.(systemd.PIDReader); ok {
			if pid, err := pr.MainPID(ctx, r.want.Unit); err == nil {
				r.res.MainPID = pid
			}
		}
	}
	// The reaction is carried out: clear it before probing, since a failing probe never
	// restarts anything by itself.
	if p.RecordPending || p.ClearPending {
		if err := r.Store.ClearPending(r.want.Unit); err != nil {
			probing.abandon()
			return err
		}
	}
	if err := r.health(p, probing); err != nil {
		return err
	}
	if probing != nil && p.Settle == 0 && (action == reaction.Start || action == reaction.RestartIt) {
		// The probe stood in for the settle time: the process that answered must be the
		// start's, still active.
		now, err := r.Systemd.Show(ctx, r.want.Unit)
		if err != nil {
			return err
		}
		if !now.Running() || now.InvocationID != final.InvocationID {
			return fmt.Errorf("%s answered its health probe after its %s but did not stay up: it is %s (invocation %s, then %s)", r.want.Unit, action, now.ActiveState, final.InvocationID, now.InvocationID)
		}
		r.res.After = stateOf(now)
	}
	return nil
}

// converged finishes a plan without a run-state step: pending records it settled are
// cleared, and a unit that should run is probed.
func (r *run) converged(ctx context.Context, p Plan) error {
	if p.ClearPending {
		if err := r.Store.ClearPending(r.want.Unit); err != nil {
			return err
		}
	}
	return r.probe(ctx, p)
}

// probeRun is a health probe running in the background.
type probeRun struct {
	done     chan struct{}
	cancel   context.CancelFunc
	attempts int
	err      error
}

// startProbe starts the plan's health probe, which tries until it passes or ctx ends; nil
// when the plan has none.
func (r *run) startProbe(ctx context.Context, p Plan) *probeRun {
	if p.Probe == nil {
		return nil
	}
	pctx, cancel := context.WithCancel(ctx)
	pr := &probeRun{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(pr.done)
		pr.attempts, pr.err = r.prober().Wait(pctx, *p.Probe)
	}()
	return pr
}

// abandon stops a probe whose action failed: its answer would not be reported.
func (pr *probeRun) abandon() {
	if pr != nil {
		pr.cancel()
		<-pr.done
	}
}

// probe runs the plan's health probe until it passes or the deadline ends.
func (r *run) probe(ctx context.Context, p Plan) error {
	return r.health(p, r.startProbe(ctx, p))
}

// health waits for a started probe and reports it; a failed probe fails the task.
func (r *run) health(p Plan, pr *probeRun) error {
	if pr == nil {
		return nil
	}
	<-pr.done
	pr.cancel()
	attempts, err := pr.attempts, pr.err
	r.res.Health = &HealthResult{Probe: p.Probe.String(), Attempts: attempts, Healthy: err == nil}
	if err == nil {
		return nil
	}
	jctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.res.Journal = r.Systemd.Journal(jctx, r.want.Unit, 15)
	var b strings.Builder
	fmt.Fprintf(&b, "%s is active but not healthy: probe %s failed after %d attempt(s) within the timeout of %s: %v; nothing was restarted",
		r.want.Unit, p.Probe, attempts, r.limit, err)
	if len(r.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(r.res.Journal, "\n"))
	}
	return errors.New(b.String())
}

// clock reads systemd's clock once per run.
func (r *run) clock() (stamp.Stamp, error) {
	if !r.now.IsZero() {
		return r.now, nil
	}
	now := stamp.Now
	if r.Now != nil {
		now = r.Now
	}
	s, err := now()
	if err != nil {
		return s, err
	}
	r.now = s
	return s, nil
}

// recordPending writes the reaction due for the unit, keeping when an earlier run's record
// first became due and stamping it now (durable.Owed), and returns the record.
func (r *run) recordPending(due reaction.Kind) (*durable.Pending, error) {
	at, err := r.clock()
	if err != nil {
		return nil, err
	}
	p := durable.Owed(r.earlier, due, r.res.Triggers, at)
	if err := r.Store.SetPending(r.want.Unit, p); err != nil {
		return nil, err
	}
	r.pending = &p
	return &p, nil
}

// verify polls the unit until the action's goal has held for settle, within the task's
// deadline: active with one invocation for start, restart and reload; inactive or failed
// for stop.
func (r *run) verify(ctx context.Context, action reaction.Action, settle time.Duration) (systemd.Props, error) {
	clk := r.clk()
	var since time.Time
	var invocation string
	var last systemd.Props
	for {
		p, err := r.Systemd.Show(ctx, r.want.Unit)
		if err != nil {
			return last, fmt.Errorf("verify %s: %w", action, err)
		}
		last = p
		r.res.After = stateOf(p)
		now := clk.Now()
		holds := false
		if action == reaction.Stop {
			holds = p.ActiveState == "inactive" || p.ActiveState == "failed"
		} else {
			switch p.ActiveState {
			case "active":
				holds = true
			case "failed", "inactive":
				return p, fmt.Errorf("%s did not stay up after %s: ActiveState=%s SubState=%s", r.want.Unit, action, p.ActiveState, p.SubState)
			}
			if holds && invocation != "" && p.InvocationID != invocation {
				return p, fmt.Errorf("%s was started again while it settled after %s (invocation %s, then %s): it does not stay up", r.want.Unit, action, invocation, p.InvocationID)
			}
		}
		if !holds {
			since, invocation = time.Time{}, ""
		} else {
			if since.IsZero() {
				since, invocation = now, p.InvocationID
			}
			if now.Sub(since) >= settle {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			if holds {
				return p, fmt.Errorf("%s of %s not verified: it was active for %s of the settle time of %s when the deadline passed: %w", action, r.want.Unit, now.Sub(since).Round(time.Millisecond), settle, ctx.Err())
			}
			return p, fmt.Errorf("%s of %s not verified: still ActiveState=%s SubState=%s: %w", action, r.want.Unit, p.ActiveState, p.SubState, ctx.Err())
		case <-clk.After(r.poll()):
		}
	}
}

func (r *run) failure(action reaction.Action, due reaction.Kind, jobErr, verifyErr error) error {
	// The deadline has usually passed: journal and last state get a short one of their own.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.res.Journal = r.Systemd.Journal(ctx, r.want.Unit, 15)
	if p, err := r.Systemd.Show(ctx, r.want.Unit); err == nil {
		r.res.After = stateOf(p)
	}
	err := verifyErr
	if jobErr != nil {
		err = jobErr
	}
	var b strings.Builder
	want := "active"
	if action == reaction.Stop {
		want = "inactive or failed"
	}
	fmt.Fprintf(&b, "%s %s failed: expected %s, observed %s/%s: %v", action, r.want.Unit, want, r.res.After.active, r.res.After.sub, err)
	if timeout.Expired(err) {
		fmt.Fprintf(&b, "; the deadline of %s passed; systemd keeps any job it already accepted (it is not rolled back)", r.limit)
	}
	if due != reaction.None {
		fmt.Fprintf(&b, "; the %s stays due and the next run for %s carries it out", due, r.want.Unit)
	}
	if len(r.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(r.res.Journal, "\n"))
	}
	return errors.New(b.String())
}

func pendingKind(p *durable.Pending) reaction.Kind {
	if p == nil {
		return reaction.None
	}
	return reaction.Kind(p.Reaction)
}

func labels(t reaction.Triggers, p *durable.Pending) []string {
	out := []string{}
	for _, tr := range reaction.Changed(t.Restart) {
		out = append(out, tr.Label())
	}
	for _, tr := range reaction.Changed(t.Reload) {
		out = append(out, tr.Label())
	}
	if p != nil {
		out = append(out, "pending "+p.Reaction+" from an earlier run")
	}
	return out
}

func stateOf(p systemd.Props) *State {
	st := "stopped"
	if p.Running() {
		st = "running"
	}
	return &State{State: st, Enabled: p.Enabled(), UnitFileState: p.UnitFileState, LoadState: p.LoadState, active: p.ActiveState, sub: p.SubState, fragment: p.FragmentPath}
}
