package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/dnfsummary"
)

// predict is check mode's answer to what DNF would move beyond the request: DNF's own
// transaction summary (--assumeno resolves against the repositories and stops before
// anything changes). A transaction DNF says cannot run fails the check as it would fail
// the run; a summary that cannot be read leaves the prediction to the RPM database, and the
// note says so. A removal after an install is resolved against today's state.
func (r *run) predict(ctx context.Context) error {
	would := []WouldMove{}
	for _, argv := range r.commands {
		ask := append([]string{argv[0], "--assumeno"}, argv[2:]...) // argv[1] is -y
		res, err := r.Runner.Run(ctx, ask...)
		if err != nil {
			r.res.CheckNote = fmt.Sprintf("predicted from the RPM database only: asking DNF what it would move failed (%v)", err)
			return nil
		}
		moves, err := dnfsummary.Parse(res.Stdout)
		if errors.Is(err, dnfsummary.ErrNoSummary) && res.ExitCode != 0 {
			r.predictChange(false)
			return fmt.Errorf("check mode: DNF says %s cannot run (exit %d): %s", strings.Join(argv, " "), res.ExitCode, lastLines(res.Output(), 8))
		}
		if err != nil {
			r.res.CheckNote = fmt.Sprintf("predicted from the RPM database only: DNF's transaction summary could not be read (%v)", err)
			return nil
		}
		for _, m := range moves {
			would = append(would, WouldMove{Name: m.Name, Action: string(m.Action), Version: m.EVR + "." + m.Arch,
				Repo: m.Repo, Requested: slices.Contains(r.want.Names(), m.Name)})
		}
	}
	r.res.WouldMove = &would
	r.res.CheckNote = "would_move is DNF's transaction summary (" + r.want.Manager + " --assumeno): every package the transaction would move, asked for or not; nothing was changed"
	return nil
}

// WouldMove is one package check mode expects DNF to move.
type WouldMove struct {
	Name string `json:"name"`
	// Action is install, upgrade, downgrade, remove, reinstall or obsolete (replaced by
	// another package).
	Action string `json:"action"`
	// Version is [EPOCH:]VERSION-RELEASE.ARCH as DNF prints it (epoch only when not 0):
	// the build installed, or removed.
	Version   string `json:"version"`
	Repo      string `json:"repo,omitempty"`
	Requested bool   `json:"requested"`
}
