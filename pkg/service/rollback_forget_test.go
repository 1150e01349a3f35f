package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/rpmexact"
)

// movingTxn is fakeTxn whose transaction also moves packages it was not asked for (a
// dependency DNF moved back), as its outcome's Moves say.
type movingTxn struct {
	*fakeTxn
	moves []rpmexact.Move
}

func (x movingTxn) Run(ctx context.Context, t rpmexact.Transaction) (rpmexact.Outcome, error) {
	o, err := x.fakeTxn.Run(ctx, t)
	for _, m := range x.moves {
		x.rpm.installed[m.Name] = m.After
	}
	o.Moves = x.moves
	return o, err
}

// After a rollback the builds installed are known: its own read under the transaction
// lock (every package of the service), what its transaction moved and the builds it read
// back. The record's end (forget) keeps exactly those without asking rpm again.
func TestARollbackForgetsWithoutAskingRPMAgain(t *testing.T) {
	const otherOld, otherNew = "other-0:1.0-1.noarch", "other-0:0.9-1.noarch"
	for _, c := range []struct {
		name  string
		moves []rpmexact.Move
		other string // other's build after the rollback
	}{
		{name: "the service's other package stays as it was", other: otherOld},
		{name: "the transaction moved the other package too", other: otherNew,
			moves: []rpmexact.Move{{Name: "other", Before: []string{otherOld}, After: []string{otherNew}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			g.rpm.installed["other"] = []string{otherOld}
			g.txn.after = map[string][]string{"demo": {demoOld}}
			d := rbDeps(g, demoMoves(g.rpm), &failingProcess{fail: []bool{true}})
			d.Rollback.Txn = movingTxn{fakeTxn: g.txn, moves: c.moves}
			args := rbArgs("", "", map[string]any{"unit": "demo"})
			args["packages"] = append(args["packages"].([]any), map[string]any{"name": "other", "version": "0:1.0-1.noarch"})
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Equal(t, true, out["failed"])
			assert.Equal(t, true, resultOf(out, "rolled_back")["healthy"], out["msg"])
			assert.Nil(t, g.record(t), "the record is gone")
			assert.Equal(t, 1, g.rpm.queries, "one rpm query: the rollback's own, before its transaction")
			require.Len(t, g.keeper.pruned, 1)
			assert.ElementsMatch(t, []string{demoOld, c.other}, g.keeper.pruned[0], "the builds now installed stay kept")
		})
	}
}
