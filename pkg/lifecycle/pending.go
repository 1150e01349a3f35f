package lifecycle

import (
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

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

func pendingKind(p *durable.Pending) reaction.Kind {
	if p == nil {
		return reaction.None
	}
	return reaction.Kind(p.Reaction)
}
