package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/ee/runner"
)

func TestWriteEE(t *testing.T) {
	ts := []timing{
		{Segment: "ee-change-1node|ee|1", Seconds: 48}, {Segment: "ee-change-1node|ee|2", Seconds: 52},
		{Segment: "ee-change-2nodes|ee|1", Seconds: 30}, {Segment: "ee-change-2nodes|ee|2", Seconds: 30},
		{Segment: "ee-noop-1node|ee|1", Seconds: 24},
	}
	failed := "node 1: job failed"
	ts = append(ts, timing{Segment: "ee-noop-2nodes|ee|1", Seconds: 12, Failed: &failed})
	res := results{Sides: map[string]side{}}
	for k, v := range sides(ts) {
		res.Sides[k[0]+"|"+k[1]] = v
	}
	var w strings.Builder
	writeEE(&w, res, []int{1, 8, 24})
	out := w.String()
	assert.Contains(t, out, "the demo role on 24 targets: one execution node (forks 24) against two started together (half the inventory each, forks 12)")
	assert.Contains(t, out, "| changed (new level, reload) | 50.000 | 2.083 | 30.000 | 1.250 | 0.600 |")
	assert.Contains(t, out, "| no-op | 24.000 | 1.000 | fails | fails | — (ours fails) |")

	var none strings.Builder
	writeEE(&none, results{Sides: map[string]side{"role-noop|ours": {Median: 1, Rounds: 1}}}, []int{24})
	assert.Empty(t, none.String(), "no rows when the run did not measure them")

	// In the default run, as the issue asks; -only ee alone or with others still works.
	for only, want := range map[string]bool{"": true, "ee": true, "scale-24,ee": true, "scale-24": false} {
		assert.Equal(t, want, (&bench{config: config{only: only}}).selected("ee"), "-only %q", only)
	}
}

func TestEETiming(t *testing.T) {
	ok := runner.Result{Status: "successful", RC: 0}
	failed := runner.Result{Status: "failed", RC: 2, Events: []runner.Event{{Event: "runner_on_failed", Counter: 3, UUID: "u", Stdout: "fatal: [t13]: FAILED! => {}"}}}
	for _, tc := range []struct {
		name       string
		results    []runner.Result
		errs       []error
		wantFailed string
		wantErr    string
	}{
		{name: "both nodes successful", results: []runner.Result{ok, ok}, errs: []error{nil, nil}},
		{name: "one node's host failed: the round is failed, the run goes on", results: []runner.Result{ok, failed}, errs: []error{nil, nil},
			wantFailed: "node 1: job failed (rc 2): fatal: [t13]: FAILED! => {}"},
		{name: "the first failure is the one named", results: []runner.Result{{Status: "timeout", RC: 254}, failed}, errs: []error{nil, nil},
			wantFailed: "node 0: job timeout (rc 254): "},
		{name: "a broken pipeline is an error", results: []runner.Result{ok, {}}, errs: []error{nil, errors.New("job x: worker stage exited 125")},
			wantErr: "ee-change-2nodes round 3 node 1: job x: worker stage exited 125"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eeTiming("ee-change-2nodes", 3, 12.5, tc.results, tc.errs)
			if tc.wantErr != "" {
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "ee-change-2nodes|ee|3", got.Segment)
			assert.Equal(t, 12.5, got.Seconds)
			if tc.wantFailed == "" {
				assert.Nil(t, got.Failed)
				return
			}
			require.NotNil(t, got.Failed)
			assert.Equal(t, tc.wantFailed, *got.Failed)
		})
	}
	// A failed round reaches the report as a failed side, not a missing row.
	failedMsg := "node 1: job failed (rc 2)"
	s := sides([]timing{{Segment: "ee-change-2nodes|ee|1", Task: "job", Seconds: 12, Failed: &failedMsg}})[[2]string{"ee-change-2nodes", "ee"}]
	assert.False(t, s.ok())
	assert.Contains(t, s.Failed, "job failed")
}
