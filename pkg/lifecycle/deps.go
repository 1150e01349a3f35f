package lifecycle

import (
	"context"
	"github.com/richt/services/pkg/systemd"
	"time"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/stamp"
)

// Store is the durable store on the target (package durable).
type Store interface {
	ManagerSync() (durable.Sync, error)
	ClearManagerSync(ctx context.Context, seen durable.Sync) error
	GetPending(unit string) (*durable.Pending, error)
	SetPending(unit string, p durable.Pending) error
	ClearPending(unit string) error
	// LastReload is the unit's last verified reload (nil: none known); SetReloaded
	// records one once its proof passed.
	LastReload(unit string) *durable.Reloaded
	SetReloaded(unit string, r durable.Reloaded) error
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
	// Libraries finds the unit's processes that map replaced files; nil: not looked for.
	// Read only from a backend that implements systemd.GroupReader.
	Libraries Libraries
}

// Clock is the time source of verification.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Prober runs a probe until it passes or ctx ends (Wait), or once (Check: the attempts
// that prove a signalled reload, each of which must pass).
type Prober interface {
	Wait(ctx context.Context, p health.Probe) (attempts int, err error)
	Check(ctx context.Context, p health.Probe) error
}

type netProber struct{}

// probeEvery is how often a failing probe is tried again within the deadline; the first
// tries come sooner (probeFirst, doubled each time): most services answer within tens of
// milliseconds of their start, and a probe that waits a whole probeEvery for its second
// try adds that to every start it proves.
const (
	probeEvery = 100 * time.Millisecond
	probeFirst = 10 * time.Millisecond
)

func (netProber) Wait(ctx context.Context, p health.Probe) (int, error) {
	return health.WaitRamped(ctx, p, probeFirst, probeEvery)
}

func (netProber) Check(ctx context.Context, p health.Probe) error { return p.Check(ctx) }

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
