package service

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/systemd"
)

// runningUnit is a systemd with one active unit that a stop stops; Job keeps the deadline
// the job was sent under. Any other change fails.
type runningUnit struct {
	mu       sync.Mutex
	active   bool
	deadline time.Time
}

func (u *runningUnit) Show(_ context.Context, unit string) (systemd.Props, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	state, sub := "inactive", "dead"
	if u.active {
		state, sub = "active", "running"
	}
	return systemd.Props{ID: unit, LoadState: "loaded", ActiveState: state, SubState: sub, UnitFileState: "enabled", InvocationID: "one"}, nil
}

func (u *runningUnit) Job(ctx context.Context, action, unit string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.deadline, _ = ctx.Deadline()
	if action != "stop" {
		return fmt.Errorf("unexpected %s of %s", action, unit)
	}
	u.active = false
	return nil
}

func (u *runningUnit) DaemonReload(context.Context) error {
	return fmt.Errorf("unexpected daemon-reload")
}
func (u *runningUnit) SetEnabled(context.Context, string, bool) error {
	return fmt.Errorf("unexpected enable")
}
func (u *runningUnit) SetMasked(context.Context, string, bool) error {
	return fmt.Errorf("unexpected mask")
}
func (u *runningUnit) Journal(context.Context, string, int) []string { return nil }

// quietStore is a durable store with no records.
type quietStore struct{ fakePending }

func (quietStore) ManagerSync() (durable.Sync, error)                   { return durable.Sync{}, nil }
func (quietStore) ClearManagerSync(context.Context, durable.Sync) error { return nil }

// A step's timeout is one deadline for its plan and its run together (SPEC 1: the command
// and the wait that verifies it share one deadline): here the plan spends two seconds
// waiting for the unit's lock, and the stop it then sends must be due within the timeout
// counted from the plan's start, not a fresh timeout counted from the run's.
func TestAStepsTimeoutCoversItsPlanAndItsRun(t *testing.T) {
	const limit = 10 * time.Second
	const wait = 2 * time.Second // spent by the plan
	sd := &runningUnit{active: true}
	open := func(context.Context, string) (lifecycle.Deps, func(), error) {
		return lifecycle.Deps{Systemd: sd, Store: &quietStore{fakePending{records: map[string]*durable.Pending{}}},
			Lock: func(context.Context, string) (func(), error) {
				time.Sleep(wait)
				return func() {}, nil
			}}, func() {}, nil
	}
	m := Processes(open)
	start := time.Now()
	out := ansible.Call(context.Background(), m.Spec, map[string]any{"unit": "slow", "state": "stopped", "timeout": limit.String()}, false, false,
		func(ctx context.Context, req *ansible.Request) (any, error) { return m.Plan(ctx, req).Run(ctx, req) })
	require.Nil(t, out["failed"], out["msg"])
	require.False(t, sd.deadline.IsZero(), "the stop was sent under a deadline")
	assert.True(t, sd.deadline.Before(start.Add(limit+wait/2)),
		"the stop is due %s after the plan began: the plan's wait was not counted", sd.deadline.Sub(start))
}

func TestByNameOrdersLocksTheSameWayInEveryRun(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  []int
	}{
		{nil, []int{}},
		{[]string{"web.service"}, []int{0}},
		{[]string{"web.service", "db.service"}, []int{1, 0}},
		{[]string{"b", "a", "b", "a"}, []int{1, 3, 0, 2}},
	} {
		got := byName(len(tc.names), func(i int) string { return tc.names[i] })
		if !slices.Equal(got, tc.want) {
			t.Errorf("byName(%q) = %v, want %v", tc.names, got, tc.want)
		}
	}
}
