package lifecycle

import (
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

// clock reads systemd's clock (Deps.Now, else stamp.Now).
func (d Deps) clock() (stamp.Stamp, error) {
	if d.Now != nil {
		return d.Now()
	}
	return stamp.Now()
}

// ledger keeps one unit's pending record during Apply: it writes the due reaction,
// keeping when an earlier run's record first became due, and clears it once served.
type ledger struct {
	store Store
	unit  string
	// earlier is the record the plan observed, and seen the unit's activation it was
	// observed with: durable.Merge drops what that activation served, as Prepare did.
	earlier  *durable.Pending
	seen     durable.Activation
	triggers []string // the result's trigger labels, kept in the record
	read     func() (stamp.Stamp, error)
	at       stamp.Stamp // systemd's clock as last read (the plan's observation first)
}

func newLedger(d Deps, p Plan, triggers []string) *ledger {
	o := p.Observed
	return &ledger{store: d.Store, unit: p.Want.Unit, earlier: o.Pending, triggers: triggers, read: d.clock, at: o.Now,
		seen: durable.Activation{Now: o.Now, Running: o.Unit.Running(), EnterMono: o.Unit.ActiveEnterMono}}
}

// record writes the due reaction through the one merge rule (durable.Merge). fresh stamps
// it with systemd's clock now, not the one read earlier: just before the job, so a later
// activation proves this very job ran.
func (l *ledger) record(due reaction.Kind, fresh bool) error {
	if fresh || l.at.IsZero() {
		at, err := l.read()
		if err != nil {
			return err
		}
		l.at = at
	}
	return l.store.SetPending(l.unit, durable.Merge(l.earlier, &l.seen, due, l.triggers, l.at))
}

// clear removes the record: its reaction was carried out and verified, or is not owed.
func (l *ledger) clear() error { return l.store.ClearPending(l.unit) }

// withdraw puts back the record the plan observed (none: removes it), for a run refused
// before acting after it had recorded its reaction ahead: a refused reaction is no debt.
func (l *ledger) withdraw() error {
	if l.earlier == nil {
		return l.clear()
	}
	return l.store.SetPending(l.unit, *l.earlier)
}

// report marks the observed record, a debt the run fails for, as reported, stamped if it
// had no stamp: only this run fails for it, and an activation after the stamp (a restart
// by hand) serves it.
func (l *ledger) report() error {
	rec := *l.earlier
	rec.Reported = true
	if rec.At.IsZero() {
		at, err := l.read()
		if err != nil {
			return err
		}
		rec.At = at
	}
	return l.store.SetPending(l.unit, rec)
}

func pendingKind(p *durable.Pending) reaction.Kind {
	if p == nil {
		return reaction.None
	}
	return reaction.Kind(p.Reaction)
}
