package testenv_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/richt/services/testenv"
)

// BenchmarkExec runs one short command per iteration through the target's agent and
// through Docker's exec API, and reports beside the wall time the CPU each exec cost: in
// the test process (its rusage), in Docker's daemons (dockerd, containerd and the shims
// with the children they reaped: runc and Docker's re-executions of itself) and in the
// agent (with the commands it reaped). The daemons serve the whole machine, so another
// job's containers add to their share; run it on a quiet machine.
func BenchmarkExec(b *testing.B) {
	e2e(b)
	tg := testenv.Start(b)
	ctx := context.Background()
	argv := []string{"/bin/sh", "-c", "echo ok"}
	for _, via := range []string{"agent", "docker"} {
		b.Run(via, func(b *testing.B) {
			run := func() {
				var res testenv.ExecResult
				var err error
				if via == "agent" {
					res, err = tg.Exec(ctx, argv...)
				} else {
					res, err = tg.DockerExec(ctx, nil, argv...)
				}
				if err != nil || res.Stdout != "ok\n" {
					b.Fatalf("exec: %v %+v", err, res)
				}
			}
			run()
			daemons0, agent0, self0 := cpuOf(dockerDaemon), cpuOf(isAgent), selfCPU()
			began := time.Now()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run()
			}
			b.StopTimer()
			n := float64(b.N)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
			b.ReportMetric(ms(time.Since(began)), "wall-ms/op")
			b.ReportMetric(ms(cpuOf(dockerDaemon).since(daemons0)), "docker-cpu-ms/op")
			b.ReportMetric(ms(cpuOf(isAgent).since(agent0)), "agent-cpu-ms/op")
			b.ReportMetric(ms(selfCPU()-self0), "test-cpu-ms/op")
		})
	}
}

func dockerDaemon(comm string) bool {
	return comm == "dockerd" || comm == "containerd" || strings.HasPrefix(comm, "containerd-shim")
}

func isAgent(comm string) bool { return comm == "testenv-agent" }

// cpuTimes is the CPU time of processes by PID.
type cpuTimes map[string]time.Duration

// since is the CPU time spent after before: what each process now running added (a
// process that ended in between takes its time with it, and is not counted).
func (now cpuTimes) since(before cpuTimes) time.Duration {
	var d time.Duration
	for pid, t := range now {
		d += t - before[pid]
	}
	return d
}

// cpuOf is the user and system time, with that of reaped children, of the host's
// processes whose name passes match.
func cpuOf(match func(string) bool) cpuTimes {
	out := cpuTimes{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || !match(s[open+1:end]) {
			continue
		}
		f := strings.Fields(s[end+1:])
		// After the name: state(0) ... utime(11) stime(12) cutime(13) cstime(14).
		if len(f) < 15 {
			continue
		}
		var ticks int64
		for _, i := range []int{11, 12, 13, 14} {
			v, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += v
		}
		out[p] = time.Duration(ticks) * time.Second / 100 // USER_HZ
	}
	return out
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
