package modules_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// The emulator loop behind docs/fastpath.md's "Which QEMU": RICHT_QEMU_LOOP=N runs N
// rpm_exact transactions of a foreign build (RICHT_QEMU_LOOP_ARCH, default s390x) on one
// target, demo 1.0 and 2.0 in turn, each from an empty listing memo so the supervisor forks
// rpm while another of its threads walks the unit directories, as in a target's first
// transaction. A run still going at 90 s counts as a hang; the target's processes are
// logged and the loop goes on with a new target. Off by default (250 runs take about five
// minutes); TESTENV_QEMU_DIR picks the emulator.
func TestEmulatedTransactionLoop(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("RICHT_QEMU_LOOP"))
	if n <= 0 || testing.Short() {
		t.Skip("RICHT_QEMU_LOOP=N runs it")
	}
	arch := os.Getenv("RICHT_QEMU_LOOP_ARCH")
	if arch == "" {
		arch = "s390x"
	}
	emu, err := testenv.EmulatorPath(arch)
	require.NoError(t, err)
	t.Logf("emulator: %s", emu)
	bin := testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"), testenv.Arch(arch))
	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"))
	var tg *testenv.Target
	fresh := func() {
		tg = testenv.Start(t)
		require.NoError(t, tg.AddRepo(context.Background(), "fixtures", repo))
	}
	fresh()
	hangs := 0
	for i := 0; i < n; i++ {
		v := map[bool]string{true: demoV1, false: demoV2}[i%2 == 0]
		tg.MustExec(t, "rm", "-rf", "/var/cache/richt")
		start := time.Now()
		r := tg.RunModuleEnv(t, bin, map[string]any{"name": "demo", "version": v, "timeout": "90s"})
		if r.Failed() {
			hangs++
			t.Logf("run %d failed after %s: %s\n%s", i, time.Since(start).Round(time.Millisecond), r.Msg(), tg.Diagnostics(context.Background()))
			_ = tg.Terminate(context.Background())
			fresh()
		}
	}
	t.Logf("%d of %d runs under %s hung", hangs, n, emu)
	require.Zero(t, hangs)
}
