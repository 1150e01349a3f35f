package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// pauseOthers pauses (or resumes) every target but the first with docker pause, which
// freezes their processes.
func (b *bench) pauseOthers(ctx context.Context, pause bool) error {
	if pause == b.paused {
		return nil
	}
	var ids []string
	for _, t := range b.targets[min(1, len(b.targets)):] {
		if t != nil {
			ids = append(ids, t.ID())
		}
	}
	b.paused = pause
	return setPaused(ids, pause, func(verb, id string) error {
		out, err := exec.CommandContext(ctx, "docker", verb, id).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// setPaused runs docker pause (or unpause) for every container, going on past a failure:
// a pause that fails part-way has still frozen some containers, and the way out must
// then resume each of them (a paused container cannot be stopped), so the caller counts
// the targets as paused as soon as it asked.
func setPaused(ids []string, pause bool, docker func(verb, id string) error) error {
	verb := "unpause"
	if pause {
		verb = "pause"
	}
	var errs []error
	for _, id := range ids {
		if err := docker(verb, id); err != nil {
			errs = append(errs, fmt.Errorf("docker %s %s: %w", verb, id, err))
		}
	}
	return errors.Join(errs...)
}

// settle waits until the machine is quiet (before the direct runs, after the other targets
// were removed; before the scale rows, after they were resumed): at least 15 s, then until
// the 1-minute load average is below 1 (at most 2 more minutes), and says what it was.
func (b *bench) settle(before string) {
	time.Sleep(15 * time.Second)
	waited := 15 * time.Second
	load := loadAverage()
	for load >= 1 && waited < 135*time.Second {
		time.Sleep(5 * time.Second)
		waited += 5 * time.Second
		load = loadAverage()
	}
	b.log("%s: 1-minute load average %.2f after %s", before, load, waited)
}

// loadAverage is the host's 1-minute load average, or -1 when it cannot be read.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
