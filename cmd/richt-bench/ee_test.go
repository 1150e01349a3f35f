package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	assert.Empty(t, none.String(), "no rows without -only ee")

	b := &bench{config: config{only: ""}}
	assert.False(t, b.optIn("ee"), "not in the default run")
	b.only = "scale-24,ee"
	assert.True(t, b.optIn("ee"))
}
