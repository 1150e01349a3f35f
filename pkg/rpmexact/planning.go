package rpmexact

import "context"

// Plan decides a run, reading only: the installed builds of every requested name (the
// query memo, else one rpm query), Decide, and, when a transaction is due, the files the
// builds it replaces or removes own (for UnitFilesAmong, one more rpm query) and the
// manager's version (CheckManager, or the remembered check). Check mode and a real run
// make the same reads and get the same plan; Apply carries it out. With an error the plan
// is what was read and decided before it, for the result to report.
func (d Deps) Plan(ctx context.Context, w Want) (Plan, error) {
	obs, err := d.observe(ctx, w.Names())
	p := Plan{Want: w, Observed: obs.source, observed: obs}
	if err != nil {
		return p, err
	}
	decided, err := Decide(w, obs.have)
	if err != nil {
		return p, err
	}
	decided.Observed, decided.observed = p.Observed, p.observed
	p = decided
	if !p.Changes() {
		return p, nil
	}
	if names := p.Replaced(); len(names) > 0 {
		owned, err := OwnedFiles(ctx, d.Runner, names)
		if err != nil {
			p.UnitFilesUnread = err.Error()
		}
		p.UnitFiles = UnitFilesAmong(owned)
	}
	// DNF 4 is checked before any transaction, and before check mode reports one; a
	// converged run never gets here and does not pay for it.
	p.ManagerVersion, p.managerFresh, err = d.checkManager(ctx, w.Manager)
	return p, err
}
