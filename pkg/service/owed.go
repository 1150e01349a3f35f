package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

// predictTimeout bounds the read of a removal's dependents before its first step (one rpm
// test removal, dependents).
const predictTimeout = time.Minute

// ahead is what a run predicted before its first step: the reaction each running process
// will owe for the packages step and for the files step, and the records it replaced.
type ahead struct {
	pkg, configs, files map[string]reaction.Kind
	// earlier are the records there were before this run wrote its own (nil: none).
	earlier map[string]*durable.Pending
	wrote   map[string]bool
	// running are the units of processes that are to run: the ones a change owes a
	// reaction.
	running map[string]bool
	// written is the record this run last wrote per unit, to tell it from another run's.
	written map[string]durable.Pending
}

// missed is what due owes beyond what was recorded for it: the units whose recorded
// reaction (none, or a reload) does not serve their due one.
func missed(recorded, due map[string]reaction.Kind) map[string]reaction.Kind {
	out := map[string]reaction.Kind{}
	for u, k := range due {
		if had := reaction.Stronger(recorded[u]); reaction.Stronger(had, k) != had {
			out[u] = k
		}
	}
	return out
}

// recordWritten keeps the records true after a part was written (or right before its
// content moves): due is what the part's change owes per unit (wiring). A change the
// prediction missed is recorded (and listed in the plan, as for the records ahead); one
// it predicted is stamped again (durable.Owed's rule), so an activation between the
// record written ahead and this write (a package scriptlet's restart landing late, a
// restart by hand) does not serve what the write owes. Check mode writes nothing, and
// lists only the missed.
func (r *run) recordWritten(a *ahead, recorded, due map[string]reaction.Kind) error {
	owed := missed(recorded, due)
	if len(owed) > 0 {
		if err := r.record(a, owed, true); err != nil {
			return err
		}
		for u, k := range owed {
			recorded[u] = reaction.Stronger(recorded[u], k)
		}
	}
	if r.req.CheckMode || r.d.Pending == nil {
		return nil
	}
	for _, u := range slices.Sorted(maps.Keys(due)) {
		if _, done := owed[u]; done {
			continue
		}
		if _, err := r.recordOne(a, u, due[u], nil); err != nil {
			return err
		}
	}
	return nil
}

// record writes, for each unit, the reaction it will owe as a pending reaction stamped
// now, under the unit's lock: a run killed before its process step leaves it for the next
// run, and only an activation after this moment serves it. A stronger reaction already
// owed stays, stamped now (durable.Merge). The composed plan lists the records it
// planned; a record it did not plan (missed: a step changed what its plan said it would
// not) is added to the plan as it is written. Check mode writes nothing.
func (r *run) record(a *ahead, owed map[string]reaction.Kind, missed bool) error {
	return r.recordAt(a, owed, missed, nil)
}

// recordAt is record for a change already made: stamped at, the moment it was complete
// (an activation after it served it), when at is a moment of this boot; otherwise now.
func (r *run) recordAt(a *ahead, owed map[string]reaction.Kind, missed bool, at *stamp.Stamp) error {
	if r.d.Pending == nil || r.req.CheckMode {
		return nil
	}
	for _, unit := range slices.Sorted(maps.Keys(owed)) {
		due, err := r.recordOne(a, unit, owed[unit], at)
		if err != nil {
			return err
		}
		if missed {
			r.res.Plan = append(r.res.Plan, fmt.Sprintf("record-pending %s %s", unit, due))
		}
	}
	return nil
}

// recordOne writes the record of unit, merged with the one there is (durable.Merge) and
// stamped now (or at, a moment of this boot that is not later than now), under the unit's
// lock, and returns the reaction recorded.
func (r *run) recordOne(a *ahead, unit string, due reaction.Kind, at *stamp.Stamp) (reaction.Kind, error) {
	now := r.d.Now
	if now == nil {
		now = stamp.Now
	}
	if err := r.locked(unit, func() error {
		earlier, err := r.d.Pending.GetPending(unit)
		if err != nil {
			return err
		}
		if _, kept := a.earlier[unit]; !kept && !a.wrote[unit] {
			a.earlier[unit] = earlier
		}
		stampNow, err := now()
		if err != nil {
			return err
		}
		if at != nil && at.BootID == stampNow.BootID && at.Mono <= stampNow.Mono {
			stampNow = *at
		}
		rec := durable.Merge(earlier, nil, due, []string{"service " + r.p.Name}, stampNow)
		if err := r.d.Pending.SetPending(unit, rec); err != nil {
			return err
		}
		a.written[unit] = rec
		due = reaction.Kind(rec.Reaction)
		return nil
	}); err != nil {
		r.res.FailedStep = "record reactions"
		return due, fmt.Errorf("record the %s %s owes: %w", due, unit, err)
	}
	a.wrote[unit] = true
	if r.res.Recorded == nil {
		r.res.Recorded = map[string]string{}
	}
	r.res.Recorded[unit] = string(due)
	return due, nil
}

// withdraw puts back what a unit's record was before this run, for the units whose
// predicted change did not happen, merged with what this run still owes them (owed; None:
// nothing): a record of this run that says more than that (a restart where a reload is
// owed) is narrowed to it, keeping its stamp. Only while the record is still the one this
// run wrote: one another run wrote since (systemd_lifecycle, another service run, under
// the same lock) is that run's reaction, and putting this run's earlier record back would
// lose it.
func (r *run) withdraw(a *ahead, units map[string]reaction.Kind, owed func(unit string) reaction.Kind) {
	for _, unit := range slices.Sorted(maps.Keys(units)) {
		if !a.wrote[unit] {
			continue
		}
		still, earlier := owed(unit), a.earlier[unit]
		keep := still
		if earlier != nil {
			keep = reaction.Stronger(still, reaction.Kind(earlier.Reaction))
		}
		narrowed := a.written[unit]
		if still != reaction.None && reaction.Kind(narrowed.Reaction) == keep {
			continue
		}
		narrowed.Reaction = string(keep)
		if keep != reaction.Restart && narrowed.ReloadAt != nil {
			// What is left is the reload, owed since its own change.
			narrowed.At, narrowed.ReloadAt = *narrowed.ReloadAt, nil
		}
		done := false
		_ = r.locked(unit, func() error {
			now, err := r.d.Pending.GetPending(unit)
			if err != nil || !samePending(now, a.written[unit]) {
				return err
			}
			done = true
			switch {
			case still != reaction.None:
				return r.d.Pending.SetPending(unit, narrowed)
			case earlier != nil:
				return r.d.Pending.SetPending(unit, *earlier)
			}
			return r.d.Pending.ClearPending(unit)
		})
		if still != reaction.None {
			if done {
				a.written[unit] = narrowed
				r.res.Recorded[unit] = string(keep)
				r.res.Plan = append(r.res.Plan, fmt.Sprintf("record-pending %s %s", unit, keep))
			}
			continue
		}
		delete(a.wrote, unit)
		delete(r.res.Recorded, unit)
		if done {
			r.res.Plan = append(r.res.Plan, "withdraw-pending "+unit)
		}
	}
}

// samePending reports whether the record read back is the one written: compared as
// stored (JSON), so a time's monotonic reading or location does not tell them apart.
func samePending(read *durable.Pending, wrote durable.Pending) bool {
	if read == nil {
		return false
	}
	a, errA := json.Marshal(*read)
	b, errB := json.Marshal(wrote)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// locked runs f under the unit's lock, as systemd_lifecycle's runs on it are.
func (r *run) locked(unit string, f func() error) error {
	if r.d.Lock == nil {
		return f()
	}
	release, err := r.d.Lock(context.Background(), lock.Unit(unit))
	if err != nil {
		return err
	}
	defer release()
	return f()
}
