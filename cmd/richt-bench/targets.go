package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/richt/services/testenv"
)

//go:embed timing.py
var timingCallback []byte

func (b *bench) start(ctx context.Context, fixtureDir, bulk, elsize string) error {
	n := b.scale[len(b.scale)-1]
	// Each systemd target holds several inotify instances; past the per-user limit their
	// systemd stalls in "initializing" and the start times out a minute later.
	if data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		if limit, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && limit < 16*n {
			return fmt.Errorf("%d targets need fs.inotify.max_user_instances of at least %d, it is %d (bash .ci/setup-host raises it)", n, 16*n, limit)
		}
	}
	b.log("starting %d targets", n)
	b.targets = make([]*testenv.Target, n)
	errs := make([]error, n)
	// Four boots at a time: 24 systemd containers booting at once on two cores took over a
	// minute each (systemd-logind the last), past the ready timeout. The timeout is also
	// longer than testenv's default, for a slow spell of the machine.
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for i := range b.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t, err := testenv.StartContext(ctx, testenv.WithLabel("org.richt.bench", "1"), testenv.WithReadyTimeout(3*time.Minute))
			b.targets[i] = t
			if err == nil {
				err = t.CopyDir(ctx, fixtureDir, "/srv/richt-repos/fixtures")
			}
			if err == nil && i == 0 {
				err = t.CopyDir(ctx, bulk, "/srv/richt-repos/bulk")
			}
			if err == nil && i == 0 && elsize != "" {
				err = t.CopyDir(ctx, elsize, elDir)
			}
			if err == nil {
				_, err = t.SSH(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("target %d: %w", i, err)
		}
	}
	return nil
}

// setup writes the inventory (group "one": the first target; "hN": the first N targets;
// "all": every target), the timing callback and the environment every ansible-playbook
// run gets.
func (b *bench) setup(root string) error {
	hosts := map[string]any{}
	children := map[string]any{}
	for _, n := range append([]int{1}, b.scale...) {
		g := map[string]any{}
		for i := 0; i < n; i++ {
			g[fmt.Sprintf("t%d", i)] = nil
		}
		children[fmt.Sprintf("h%d", n)] = map[string]any{"hosts": g}
	}
	children["one"] = children["h1"]
	for i, t := range b.targets {
		a, err := t.SSH(context.Background())
		if err != nil {
			return err
		}
		name := fmt.Sprintf("t%d", i)
		vars := a.HostVars()
		vars["ansible_python_interpreter"] = "/usr/bin/python3"
		hosts[name] = vars
	}
	inv := map[string]any{"all": map[string]any{"hosts": hosts, "children": children}}
	data, _ := json.MarshalIndent(inv, "", "  ")
	b.inventory = filepath.Join(b.work, "inventory.json")
	if err := os.WriteFile(b.inventory, data, 0o600); err != nil {
		return err
	}
	cb := filepath.Join(b.work, "callbacks")
	if err := os.MkdirAll(cb, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cb, "richt_bench_timing.py"), timingCallback, 0o644); err != nil {
		return err
	}
	cp, err := os.MkdirTemp("", "rbcp")
	if err != nil {
		return err
	}
	b.env = append(os.Environ(),
		"ANSIBLE_PIPELINING=1", "ANSIBLE_HOST_KEY_CHECKING=false", "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_COLLECTIONS_PATH="+b.coll, "ANSIBLE_CALLBACK_PLUGINS="+cb,
		"ANSIBLE_CALLBACKS_ENABLED=richt_bench_timing", "ANSIBLE_SSH_CONTROL_PATH_DIR="+cp,
		"ANSIBLE_RETRY_FILES_ENABLED=false")
	if b.mitogen {
		// Plays choose mitogen_linear with the strategy keyword; the default stays linear.
		b.env = append(b.env, "ANSIBLE_STRATEGY_PLUGINS="+testenv.MitogenStrategyPlugins)
	}
	return nil
}
