package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
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
	Systemd Systemd
	Store   Store
	// Root is the filesystem root unit files are read from ("" for /).
	Root string
	// Lock serializes the runs for one unit (package lock); nil runs unserialized, for
	// tests of a single run.
	Lock lock.Func
	// Now reads systemd's clock (package stamp); nil means stamp.Now.
	Now func() (stamp.Stamp, error)
}

// State is a unit's state as results report it.
type State struct {
	State         string `json:"state"`
	Enabled       *bool  `json:"enabled"`
	UnitFileState string `json:"unit_file_state"`
	LoadState     string `json:"load_state"`

	active, sub string // for messages only
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
	Changed       bool                 `json:"changed"`
	Unit          string               `json:"unit"`
	Before        *State               `json:"before,omitempty"`
	After         *State               `json:"after,omitempty"`
	Actions       []string             `json:"actions"`
	Reaction      reaction.Kind        `json:"reaction"`
	Triggers      []string             `json:"triggers"`
	Pending       string               `json:"pending_from_earlier_run,omitempty"`
	SyncReasons   []string             `json:"daemon_reload_reasons,omitempty"`
	ReloadCapable *unitfile.Capability `json:"reload_capable,omitempty"`
	MainPID       int                  `json:"main_pid,omitempty"`
	Journal       []string             `json:"journal,omitempty"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`

	// What later tasks read (package contract): no package or unit file changes here;
	// daemon_reload is performed when this run reloaded the manager; changed_at when the
	// run changed anything.
	contract.Change
}

// Spec is systemd_lifecycle's parameter contract.
func Spec() *ansible.Spec {
	return &ansible.Spec{
		Name: "systemd_lifecycle",
		Params: []ansible.Param{
			{Name: "unit", Kind: ansible.Str, Required: true, Help: "unit name (foo, foo.service, foo@bar.service)"},
			{Name: "state", Kind: ansible.Str, Default: "running", Choices: []string{"running", "stopped"}, Help: "running or stopped"},
			{Name: "enabled", Kind: ansible.Bool, Help: "enable or disable at boot (omit to leave as is)"},
			{Name: "timeout", Kind: ansible.Duration, Default: "5s", Help: "deadline for each action and its verification"},
			{Name: "restart_on", Kind: ansible.List, Summarize: reaction.Summarize("restart_on"), Help: "triggers (JSON results or true/false) that restart a running unit"},
			{Name: "reload_on", Kind: ansible.List, Summarize: reaction.Summarize("reload_on"), Help: "triggers (JSON results or true/false) that reload a running unit"},
			{Name: "allow_missing", Kind: ansible.Bool, Default: false, Help: "a missing unit is fine when stopped and not enabled are wanted"},
		},
		Check: func(v ansible.Values) error {
			if _, err := unitname.Normalize(v.String("unit")); err != nil {
				return err
			}
			_, err := reaction.Parse(v.List("restart_on"), v.List("reload_on"))
			return err
		},
	}
}

// Handler returns systemd_lifecycle's behaviour over the given side effects.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		unit, _ := unitname.Normalize(req.Params.String("unit")) // validated by Spec.Check
		trig, _ := reaction.Parse(req.Params.List("restart_on"), req.Params.List("reload_on"))
		limit := req.Params.Duration("timeout")
		ctx, cancel := timeout.Deadline(ctx, limit)
		defer cancel()
		res := &Result{Unit: unit, Actions: []string{}, Reaction: reaction.None, Triggers: []string{}}
		// One run per unit at a time, from the first read of its records to the end of
		// its verification: a run's reaction is never merged into a job another run
		// started, and no run reads or clears another's pending reaction half-way.
		if d.Lock != nil {
			release, err := d.Lock(ctx, lock.Unit(unit))
			if err != nil {
				return res, fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", unit, limit, err)
			}
			defer release()
		}
		r := &run{
			Deps: d, req: req, unit: unit, trig: trig, limit: limit,
			wantRunning: req.Params.String("state") == "running",
			enabled:     req.Params.OptBool("enabled"),
			res:         res,
		}
		err := r.do(ctx)
		if err != nil && timeout.Expired(err) {
			err = fmt.Errorf("%w (timeout %s)", err, limit)
		}
		r.res.Changed = len(r.res.Actions) > 0
		if r.res.Changed && !req.CheckMode {
			r.res.Stamp(time.Now())
		}
		if r.res.Before != nil && r.res.After != nil {
			r.res.Diff = &ansible.Diff{
				Before: r.res.Before.text(), After: r.res.After.text(),
				BeforeHeader: unit + " (before)", AfterHeader: unit + " (after)",
			}
		}
		return r.res, err
	}
}

type run struct {
	Deps
	synced      durable.Sync     // the manager-sync record as read, cleared after a reload
	now         stamp.Stamp      // systemd's clock, read when a pending reaction is involved
	served      *durable.Pending // a pending reaction found already served
	req         *ansible.Request
	unit        string
	trig        reaction.Triggers
	limit       time.Duration
	wantRunning bool
	enabled     *bool
	res         *Result
}

func (r *run) check() bool { return r.req.CheckMode }

func (r *run) act(a string) { r.res.Actions = append(r.res.Actions, a) }

func (r *run) do(ctx context.Context) error {
	recorded, err := r.Store.ManagerSync()
	if err != nil {
		return err
	}
	pending, err := r.Store.GetPending(r.unit)
	if err != nil {
		return err
	}
	obs, err := r.Systemd.Show(ctx, r.unit)
	if err != nil {
		return err
	}
	r.synced = recorded
	r.res.Before = stateOf(obs)
	r.res.After = stateOf(obs)

	// Manager sync. NeedDaemonReload alone misses changes (rpm restores old mtimes on a
	// downgrade; systemd 252 misses a first drop-in in a new directory), hence the
	// durable record and the triggers.
	var why []string
	if obs.NeedDaemonReload {
		why = append(why, "systemd reports NeedDaemonReload=yes")
	}
	for _, reason := range recorded.Reasons() {
		why = append(why, "recorded on the target: "+reason)
	}
	if r.trig.UnitFilesChanged() {
		why = append(why, "a trigger changed a unit file")
	}
	if obs.LoadState == "not-found" && r.trig.PackageChanged() {
		why = append(why, "unit not found after a package change")
	}
	synced := len(why) > 0
	if synced {
		if obs, err = r.sync(ctx, obs, why); err != nil {
			return err
		}
	}

	if pending != nil {
		r.res.Pending = fmt.Sprintf("%s due since %s", pending.Reaction, pending.Since.Format(time.RFC3339))
		if r.now, err = r.clock(); err != nil {
			return err
		}
		if pending.ServedBy(r.now, obs.Running(), obs.ActiveEnterMono) {
			// The unit became active after the reaction was recorded (a run killed after
			// sending its restart, a package scriptlet, an administrator): that start
			// loaded everything the reaction was for. Do not do it twice.
			r.res.Pending += "; already served: the unit became active after it was recorded"
			r.served = pending
			pending = nil
		}
	}
	due := reaction.Due(r.trig, pendingKind(pending))
	r.res.Triggers = labels(r.trig, pending)

	if done, err := r.checkLoadState(obs, due, pending); done || err != nil {
		return err
	}
	if obs, err = r.checkReloadCapable(ctx, obs, synced); err != nil {
		return err
	}
	if obs, err = r.enablement(ctx, obs); err != nil {
		return err
	}
	return r.runState(ctx, obs, due, pending)
}

// checkLoadState fails for states that cannot be acted on; done means nothing more to do.
func (r *run) checkLoadState(obs Props, due reaction.Kind, pending *durable.Pending) (bool, error) {
	switch obs.LoadState {
	case "loaded":
		return false, nil
	case "not-found":
		if r.req.Params.Bool("allow_missing") && !r.wantRunning && (r.enabled == nil || !*r.enabled) {
			if due != reaction.None {
				r.res.Reaction = reaction.Ignored
			}
			if pending != nil && !r.check() {
				return true, r.Store.ClearPending(r.unit)
			}
			return true, nil
		}
		hint := ""
		if !r.wantRunning && (r.enabled == nil || !*r.enabled) {
			hint = " (set allow_missing: true if a missing unit is fine here)"
		}
		if r.check() && len(r.res.SyncReasons) > 0 {
			hint += "; in check mode the daemon-reload that might load it was not performed"
		}
		return true, fmt.Errorf("unit %s not found (LoadState=not-found): expected a unit file for it%s", r.unit, hint)
	case "masked":
		if r.wantRunning {
			return true, fmt.Errorf("unit %s is masked: it cannot be running; unmask it (systemctl unmask %s) or ask for state: stopped", r.unit, r.unit)
		}
		if r.enabled != nil && *r.enabled {
			return true, fmt.Errorf("unit %s is masked: it cannot be enabled; unmask it first", r.unit)
		}
		return false, nil
	}
	return true, fmt.Errorf("unit %s has LoadState=%s: systemd could not load it; check the unit file (systemctl status %s, journalctl -u %s)", r.unit, obs.LoadState, r.unit, r.unit)
}

// sync reloads systemd's manager (a change, reported as the daemon-reload action) and
// observes the unit again; in check mode it only reports the action, and obs stays what
// it was.
func (r *run) sync(ctx context.Context, obs Props, why []string) (Props, error) {
	r.res.SyncReasons = append(r.res.SyncReasons, why...)
	r.act("daemon-reload")
	if r.check() {
		r.res.DaemonReload = contract.ReloadPerformed // as the real run would report
		return obs, nil
	}
	if err := r.Systemd.DaemonReload(ctx); err != nil {
		return Props{}, fmt.Errorf("daemon-reload: %w", err)
	}
	r.res.DaemonReload = contract.ReloadPerformed
	// Only the entries read before the reload are cleared: one recorded since stays due.
	if err := r.Store.ClearManagerSync(ctx, r.synced); err != nil {
		return Props{}, err
	}
	r.synced = durable.Sync{}
	obs, err := r.Systemd.Show(ctx, r.unit)
	if err != nil {
		return Props{}, err
	}
	r.res.After = stateOf(obs)
	return obs, nil
}

// checkReloadCapable runs whenever reload_on is declared, also when no trigger changed,
// so a unit that cannot reload fails before it ever needs to.
func (r *run) checkReloadCapable(ctx context.Context, obs Props, synced bool) (Props, error) {
	if len(r.req.Params.List("reload_on")) == 0 {
		return obs, nil
	}
	c, err := r.capability(obs, synced)
	if err != nil {
		return obs, err
	}
	// The files say one thing and the manager another: the manager has not loaded a
	// change that NeedDaemonReload did not flag (rpm restores old mtimes). Sync it now,
	// before deciding, rather than send a reload it cannot run.
	if c.Capable != obs.CanReload && !synced {
		if obs, err = r.sync(ctx, obs, []string{fmt.Sprintf("unit files on disk say reload-capable=%v, the manager says CanReload=%v", c.Capable, obs.CanReload)}); err != nil {
			return obs, err
		}
		synced = true
		if c, err = r.capability(obs, synced); err != nil {
			return obs, err
		}
	}
	r.res.ReloadCapable = &c
	if !c.Capable {
		return obs, fmt.Errorf("reload_on needs %s to be reload-capable, and it is not: %s. Add ExecReload= (for example with a unit_override drop-in) or use restart_on; a reload is never turned into a restart", r.unit, c.Reason)
	}
	return obs, nil
}

func (r *run) capability(obs Props, synced bool) (unitfile.Capability, error) {
	var sources []unitfile.Source
	var err error
	if r.check() && synced {
		// Nothing was reloaded in check mode: read what the manager would load.
		frag, dropIns := unitfile.Files(r.Root, r.unit)
		sources, err = unitfile.ReadSources(r.Root, frag, dropIns)
	} else {
		sources, err = unitfile.ReadSources(r.Root, obs.FragmentPath, obs.DropInPaths)
	}
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.unit, err)
	}
	c, err := unitfile.Reloadable(sources)
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.unit, err)
	}
	return c, nil
}

var unobservable = map[string]bool{"static": true, "indirect": true, "generated": true, "transient": true, "alias": true}

func (r *run) enablement(ctx context.Context, obs Props) (Props, error) {
	if r.enabled == nil || obs.LoadState == "masked" {
		return obs, nil
	}
	want := *r.enabled
	cur := obs.Enabled()
	if cur == nil {
		st := obs.UnitFileState
		if st == "" {
			st = "empty"
		}
		if !unobservable[st] {
			r.req.Warn("%s: enabled=%v not applied: unit file state %q is not one that can be enabled or disabled", r.unit, want, st)
		} else {
			r.req.Warn("%s: enabled=%v has no effect: its unit file state is %s, so enablement is not observable and not drift", r.unit, want, st)
		}
		return obs, nil
	}
	if *cur == want {
		return obs, nil
	}
	verb := map[bool]string{true: "enable", false: "disable"}[want]
	r.act(verb)
	if r.check() {
		r.res.After.Enabled = &want
		return obs, nil
	}
	if err := r.Systemd.SetEnabled(ctx, r.unit, want); err != nil {
		return obs, fmt.Errorf("%s %s: %w", verb, r.unit, err)
	}
	// Observe again before deciding whether to start: enablement has its own verification.
	obs, err := r.Systemd.Show(ctx, r.unit)
	if err != nil {
		return obs, err
	}
	r.res.After = stateOf(obs)
	if got := obs.Enabled(); got == nil || *got != want {
		return obs, fmt.Errorf("%s %s: systemctl succeeded but UnitFileState is %q", verb, r.unit, obs.UnitFileState)
	}
	return obs, nil
}

func (r *run) runState(ctx context.Context, obs Props, due reaction.Kind, pending *durable.Pending) error {
	action, kind := reaction.Decide(r.wantRunning, obs.Running(), due)
	r.res.Reaction = kind
	if action == reaction.NoAction {
		if ((pending != nil && kind == reaction.Ignored) || r.served != nil) && !r.check() {
			return r.Store.ClearPending(r.unit)
		}
		return nil
	}
	r.act(string(action))
	if r.check() {
		r.res.After.State = map[bool]string{true: "running", false: "stopped"}[action != reaction.Stop]
		return nil
	}
	// Record a due reaction before acting, so nothing is lost if this run fails or stops.
	if due != reaction.None && r.wantRunning {
		at, err := r.clock()
		if err != nil {
			return err
		}
		if err := r.Store.SetPending(r.unit, durable.Pending{Reaction: string(due), Triggers: r.res.Triggers, Since: since(pending), At: at}); err != nil {
			return err
		}
	}
	jobErr := r.Systemd.Job(ctx, string(action), r.unit)
	var final Props
	var err error
	if jobErr == nil {
		final, err = r.verify(ctx, action)
	}
	if jobErr != nil || err != nil {
		return r.failure(action, due, jobErr, err)
	}
	// verify already recorded the final state in r.res.After. main_pid is the process a
	// start or restart left running; a stop leaves none and a reload keeps the old one.
	if action == reaction.Start || action == reaction.RestartIt {
		r.res.MainPID = final.MainPID
		if pr, ok := r.Systemd.(PIDReader); ok {
			if pid, err := pr.MainPID(ctx, r.unit); err == nil {
				r.res.MainPID = pid
			}
		}
	}
	if due != reaction.None || pending != nil || r.served != nil {
		return r.Store.ClearPending(r.unit)
	}
	return nil
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

func since(p *durable.Pending) time.Time {
	if p != nil {
		return p.Since
	}
	return time.Now().UTC()
}

// settle is how long a started unit must stay active to count: a Type=simple service
// whose process exits at once is "active" for a moment after systemctl start returns.
const settle = 300 * time.Millisecond

// verify polls the unit until the action's goal holds, within the task's deadline.
func (r *run) verify(ctx context.Context, action reaction.Action) (Props, error) {
	var activeSince time.Time
	var last Props
	for {
		p, err := r.Systemd.Show(ctx, r.unit)
		if err != nil {
			return last, fmt.Errorf("verify %s: %w", action, err)
		}
		last = p
		r.res.After = stateOf(p)
		now := time.Now()
		if action == reaction.Stop {
			if p.ActiveState == "inactive" || p.ActiveState == "failed" {
				return p, nil
			}
		} else {
			switch p.ActiveState {
			case "active":
				if activeSince.IsZero() {
					activeSince = now
				}
				dl, ok := ctx.Deadline()
				if now.Sub(activeSince) >= settle || (ok && dl.Sub(now) < 2*pollEvery) {
					return p, nil
				}
			case "failed", "inactive":
				return p, fmt.Errorf("%s did not stay up after %s: ActiveState=%s SubState=%s", r.unit, action, p.ActiveState, p.SubState)
			default:
				activeSince = time.Time{}
			}
		}
		select {
		case <-ctx.Done():
			return p, fmt.Errorf("%s of %s not verified: still ActiveState=%s SubState=%s: %w", action, r.unit, p.ActiveState, p.SubState, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

const pollEvery = 50 * time.Millisecond

func (r *run) failure(action reaction.Action, due reaction.Kind, jobErr, verifyErr error) error {
	// The deadline has usually passed: journal and last state get a short one of their own.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.res.Journal = r.Systemd.Journal(ctx, r.unit, 15)
	if p, err := r.Systemd.Show(ctx, r.unit); err == nil {
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
	fmt.Fprintf(&b, "%s %s failed: expected %s, observed %s/%s: %v", action, r.unit, want, r.res.After.active, r.res.After.sub, err)
	if timeout.Expired(err) {
		fmt.Fprintf(&b, "; the deadline of %s passed; systemd keeps any job it already accepted (it is not rolled back)", r.limit)
	}
	if due != reaction.None && r.wantRunning {
		fmt.Fprintf(&b, "; the %s stays due and the next run for %s carries it out", due, r.unit)
	}
	if len(r.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(r.res.Journal, "\n"))
	}
	return fmt.Errorf("%s", b.String())
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

func stateOf(p Props) *State {
	st := "stopped"
	if p.Running() {
		st = "running"
	}
	return &State{State: st, Enabled: p.Enabled(), UnitFileState: p.UnitFileState, LoadState: p.LoadState, active: p.ActiveState, sub: p.SubState}
}
