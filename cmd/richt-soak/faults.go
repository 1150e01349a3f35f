package main

// The faults, injected during a step's module run, and whether each landed.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Shell helpers for the fault scripts: alive (a process that runs, not a zombie) and
// waitscope (until a transaction's scope runs, while the condition holds, at most ~6 s).
const shellHelpers = `alive() { [ -e /proc/$1 ] && ! grep -q '^State:[[:space:]]*Z' /proc/$1/status 2>/dev/null; }
scope() { systemctl list-units --no-legend --plain 'richt-rpm-transaction-*' | grep -q .; }
waitscope() { i=0; while [ $i -lt 300 ] && eval "$1" && ! scope; do i=$((i+1)); sleep 0.02; done; }
`

// inject runs the step's module under one fault and reports whether the fault landed, and
// a violation it saw, if any. check: the step's run is in check mode (only a fault that
// keeps the step's check mode, refused-reload, draws one), and owes nothing.
func (s *soak) inject(ctx context.Context, fault, module, op string, check bool, args map[string]any) (landed bool, violation string) {
	bin, err := s.t.InstallModule(ctx, s.bins[module])
	if err != nil {
		return false, "install module: " + err.Error()
	}
	args["_ansible_diff"] = true
	data, _ := json.Marshal(args)
	_ = s.t.WriteFile(ctx, "/var/tmp/soak-args.json", data, 0o600)
	s.runs++
	// sh runs a fault script whose last line is "soak-hit=0|1"; it returns the rest.
	sh := func(script string) (out string, hit bool) {
		res, err := s.t.Exec(ctx, "/bin/sh", "-c", shellHelpers+script)
		if err != nil {
			violation = "fault script: " + err.Error()
			return "", false
		}
		out = res.Stdout + res.Stderr
		s.outputs = append(s.outputs, out)
		body, last, _ := cutLast(res.Stdout)
		return body, last == "soak-hit=1"
	}
	// one checks that a run that was not killed answered with one JSON object.
	one := func(out string) map[string]any {
		r, err := s.result(module, strings.TrimSpace(out))
		if err != nil && violation == "" {
			violation = err.Error()
		}
		return r
	}
	// After the scope appeared: in DNF or in the module's reactions. A rollback step's run
	// goes on longer (the start that fails, the rollback's own transaction, the probe
	// that fails for rbTimeout): a longer window lets a kill land in either half.
	window := 2.5
	switch op {
	case "rollback-build":
		window = 6
	case "rollback-config":
		window = 8
	}
	after := fmt.Sprintf("%.2f", s.rnd.Float64()*window)
	failed := false
	s.accounted(ctx, module, check, func() bool {
		switch fault {
		case "kill-module":
			_, landed = sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %s; kill -9 $p 2>/dev/null; wait $p; rc=$?; cat /var/tmp/soak-out; echo; [ $rc = 137 ] && echo soak-hit=1 || echo soak-hit=0`, bin, after))
			failed = true
		case "kill-supervisor":
			// The supervisor is the process in the transaction's scope that runs the module's
			// own executable (DNF runs beside it); found by that, not by its arguments.
			var out string
			out, landed = sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %[2]s; hit=0; exe=$(readlink -f %[1]s)
for u in $(systemctl list-units --no-legend --plain 'richt-rpm-transaction-*' | awk '{print $1}'); do
  cg=$(systemctl show -p ControlGroup --value "$u")
  for q in $(cat /sys/fs/cgroup$cg/cgroup.procs 2>/dev/null); do
    [ "$(readlink /proc/$q/exe)" = "$exe" ] && kill -9 $q 2>/dev/null && hit=1
  done
done
wait $p; cat /var/tmp/soak-out; echo; echo soak-hit=$hit`, bin, fmt.Sprintf("%.2f", s.rnd.Float64()*0.8)))
			r := one(out)
			failed = r == nil || r["failed"] == true
		case "stop-caller":
			// The caller is a oneshot unit running the module through a shell that writes the
			// exit status when the module ended by itself: no status file, the stop cut it short.
			_, landed = sh(fmt.Sprintf(`rm -f /var/tmp/soak-rc /var/tmp/soak-out
systemd-run --quiet --unit=soak-caller-%[1]d --service-type=oneshot --no-block /bin/sh -c '%[2]s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1; echo $? >/var/tmp/soak-rc'
waitscope "[ ! -e /var/tmp/soak-rc ]"; sleep %[3]s; systemctl stop soak-caller-%[1]d.service
cat /var/tmp/soak-out 2>/dev/null; echo; [ -e /var/tmp/soak-rc ] && echo soak-hit=0 || echo soak-hit=1`, s.steps, bin, after))
			failed = true
		case "concurrent":
			var out string
			out, landed = sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json >/var/tmp/soak-out1 2>&1 & p1=$!; %[1]s /var/tmp/soak-args.json >/var/tmp/soak-out2 2>&1 & p2=$!
waitscope "alive $p1 || alive $p2"; alive $p1 && alive $p2 && hit=1 || hit=0; wait
cat /var/tmp/soak-out1; echo; echo soak-between; cat /var/tmp/soak-out2; echo; echo soak-hit=$hit`, bin))
			a, b, _ := strings.Cut(out, "soak-between\n")
			ra, rb := one(a), one(b)
			failed = ra == nil || rb == nil || ra["failed"] == true || rb["failed"] == true
			s.runs++
		case "corrupt-record":
			failed, landed = s.corruptRecord(ctx, bin, module, sh, one, &violation)
		case "refused-reload":
			landed = s.refusedReload(ctx, &violation)
			r := one(func() string { out, _ := sh(bin + " /var/tmp/soak-args.json; echo; echo soak-hit=0"); return out }())
			failed = r == nil || r["failed"] == true
		case "daemon-reexec":
			var out string
			out, landed = sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %s; systemctl daemon-reexec; alive $p && hit=1 || hit=0; wait $p
cat /var/tmp/soak-out; echo; echo soak-hit=$hit`, bin, after))
			r := one(out)
			failed = r == nil || r["failed"] == true
		case "full-disk":
			var out string
			out, _ = sh(fmt.Sprintf(`d=/etc/systemd/system/demo.service.d; mkdir -p /var/tmp/soak-keep && cp -a $d/. /var/tmp/soak-keep/ &&
mount -t tmpfs -o size=64k soak-full $d && cp -a /var/tmp/soak-keep/. $d/ && dd if=/dev/zero of=$d/.fill bs=4k 2>/dev/null
%s /var/tmp/soak-args.json; echo; rm -f $d/.fill; cp -a $d/. /var/tmp/soak-keep/; umount $d; cp -a /var/tmp/soak-keep/. $d/; rm -rf /var/tmp/soak-keep; echo soak-hit=0`, bin))
			r := one(out)
			failed = r == nil || r["failed"] == true
			// The write met the full disk: the run failed saying so.
			landed = failed && strings.Contains(out, "no space left on device")
		case "reboot", "power-loss":
			failed = true
			landed = s.restart(ctx, fault, bin, &violation)
		case "kill-rollback":
			// SIGKILL once the rollback service's record says restoring, a random moment
			// into the rollback (its transaction, its files, its restart and probe). It
			// landed when the run was killed with the record still restoring.
			_, landed = sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
restoring() { grep -qs '"phase": *"restoring"' %[2]s/*.json; }
i=0; while [ $i -lt 3000 ] && alive $p && ! restoring; do i=$((i+1)); sleep 0.02; done
sleep %[3]s; kill -9 $p 2>/dev/null; wait $p; rc=$?; cat /var/tmp/soak-out; echo
[ $rc = 137 ] && restoring && echo soak-hit=1 || echo soak-hit=0`, bin, rbRecords, fmt.Sprintf("%.2f", s.rnd.Float64()*1.5)))
			failed = true
		}
		return failed
	})
	return landed, violation
}

// noReloadDropIn takes demo.service's ExecReload= away for the refused-reload fault (a
// drop-in under /run sorts after the service's own and empties the list).
const noReloadDropIn = "/run/systemd/system/demo.service.d/zz-soak-no-reload.conf"

// refusedReload, before the step's own run: demo.service loses its ExecReload= (as a unit
// whose package dropped it), a systemd_lifecycle run with a changed reload_on is refused
// for it, and the unit gets its ExecReload= back. The refused run must leave the unit's
// pending record as it found it: a reload recorded by a run that refused it is a debt no
// later run can pay, and the invariants check that no later run fails over it.
// It landed when the run was refused for the capability.
func (s *soak) refusedReload(ctx context.Context, violation *string) bool {
	bin, err := s.t.InstallModule(ctx, s.bins["systemd_lifecycle"])
	if err != nil {
		*violation = "install module: " + err.Error()
		return false
	}
	reaction := `sed -n 's/.*"reaction": *"\([a-z]*\)".*/\1/p' ` + pendingRecordPath + ` 2>/dev/null; echo`
	before, _ := s.t.Exec(ctx, "/bin/sh", "-c", reaction)
	_ = s.t.WriteFile(ctx, "/var/tmp/soak-refused.json", []byte(`{"unit": "demo.service", "reload_on": [{"changed": true}], "_ansible_diff": true}`), 0o600)
	res, err := s.t.Exec(ctx, "/bin/sh", "-c", fmt.Sprintf(`mkdir -p $(dirname %[1]s) && printf '[Service]\nExecReload=\n' > %[1]s && systemctl daemon-reload
%[2]s /var/tmp/soak-refused.json; echo; rm -f %[1]s; systemctl daemon-reload`, noReloadDropIn, bin))
	if err != nil {
		*violation = "refused-reload: " + err.Error()
		return false
	}
	s.outputs = append(s.outputs, res.Stdout+res.Stderr)
	s.runs++
	r, err := s.result("systemd_lifecycle", strings.TrimSpace(res.Stdout))
	if err != nil {
		*violation = err.Error()
		return false
	}
	after, _ := s.t.Exec(ctx, "/bin/sh", "-c", reaction)
	switch msg := fmt.Sprint(r["msg"]); {
	case r["failed"] != true || !strings.Contains(msg, "reload_on needs demo.service to be reload-capable"):
		*violation = "a reload_on on a unit without ExecReload= was not refused for it: " + msg
	case before.Stdout != after.Stdout:
		*violation = fmt.Sprintf("the refused run changed demo.service's pending record: reaction %q, then %q", strings.TrimSpace(before.Stdout), strings.TrimSpace(after.Stdout))
	default:
		return true
	}
	return false
}

// corruptRecord writes a half record the module reads (the manager-sync record or the
// unit's pending reaction), runs the module and judges its result. A corrupt manager-sync
// record is replaced after the daemon-reload it stands for. A corrupt pending reaction
// cannot be carried out as recorded: a run that restarts the unit anyway serves it and
// clears it; otherwise the run fails once, naming the file and what to do, and marks the
// record reported; the soak then does what it says, as an operator would (a restart), and
// the converging run after it must clear the record.
func (s *soak) corruptRecord(ctx context.Context, bin, module string, sh func(string) (string, bool), one func(string) map[string]any, violation *string) (failed, landed bool) {
	pending := s.rnd.Intn(2) == 1
	target := "/var/lib/richt/manager-sync-due"
	if pending {
		target = pendingRecordPath
	}
	out, _ := sh(fmt.Sprintf(`mkdir -p $(dirname %[1]s) && printf '{"half' > %[1]s; %[2]s /var/tmp/soak-args.json; echo; echo soak-hit=0`, target, bin))
	r := one(out)
	if r == nil {
		return true, false
	}
	failed = r["failed"] == true
	msg := fmt.Sprint(r["msg"])
	left, _ := s.t.Exec(ctx, "/bin/sh", "-c", "cat "+target+" 2>/dev/null")
	switch {
	case pending && !failed && left.Stdout != "":
		*violation = module + " succeeded and left a corrupt pending reaction record it did not serve: " + left.Stdout
	case pending && !failed:
		landed = true // a restart or start of the run served it
	case pending && (!strings.Contains(msg, target) || !strings.Contains(msg, "cannot be carried out as recorded")):
		*violation = module + "'s failure over a corrupt pending record does not name it and what it is: " + msg
	case pending && !strings.Contains(left.Stdout, `"reported":true`):
		*violation = module + " failed over a corrupt pending record and did not mark it reported: " + left.Stdout
	case pending:
		landed = true
		// What the message says: a restart clears it (the converging run after it does).
		s.accounted(ctx, "operator", false, func() bool {
			res, err := s.t.Exec(ctx, "/bin/sh", "-c", "systemctl restart demo.service")
			return err != nil || res.ExitCode != 0
		})
	case failed:
		*violation = module + " failed over a corrupt manager-sync record: " + msg
	case left.Stdout == `{"half`:
		*violation = module + " succeeded and left the corrupt manager-sync record in place"
	default:
		landed = true
	}
	return failed, landed
}

// restart runs the step's module as a unit of its own (a process left behind by an exec
// does not outlive the exec), then restarts the target under it: cleanly (systemd stops
// its units, the transaction's scope among them) or as a power loss (everything killed at
// once). The restart comes a random moment within 0.4 s after the transaction's scope
// appeared, inside the one-second %pre. It reports whether the restart caught DNF at work:
// a new transaction record without a finished outcome, or with the stop its supervisor saw.
func (s *soak) restart(ctx context.Context, fault, bin string, violation *string) bool {
	delay := fmt.Sprintf("%.2f", s.rnd.Float64()*0.4)
	res, _ := s.t.Exec(ctx, "/bin/sh", "-c", fmt.Sprintf(`rm -f /var/tmp/soak-out; ls -d /var/lib/richt/transactions/*/ > /var/tmp/soak-records 2>/dev/null
systemd-run --quiet --unit=soak-run-%d --service-type=oneshot --no-block -p StandardOutput=file:/var/tmp/soak-out %s /var/tmp/soak-args.json
for i in $(seq 150); do systemctl list-units --no-legend 'richt-rpm-transaction-*' | grep -q . && break; sleep 0.02; done; sleep %s`, s.steps, bin, delay))
	s.outputs = append(s.outputs, res.Stdout+res.Stderr)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := s.t.Reboot(rctx, fault == "power-loss", 20*time.Second); err != nil {
		*violation = err.Error()
		return false
	}
	// /run, the timeline with it, is empty again; the journal may be too.
	s.lines = 0
	inst, _ := s.t.Exec(ctx, "/bin/sh", "-c", `cat /usr/share/demo/version`)
	s.led.reboot(strings.TrimSpace(inst.Stdout))
	res, _ = s.t.Exec(ctx, "/bin/sh", "-c", `cat /var/tmp/soak-out 2>/dev/null; for d in /var/lib/richt/transactions/*/; do grep -qxF "$d" /var/tmp/soak-records && continue; [ -f "$d/request.json" ] && { ! grep -qs '"done": *true' "$d/outcome.json" || grep -qs '"stopped"' "$d/outcome.json"; } && echo "soak-caught $d"; done`)
	s.outputs = append(s.outputs, res.Stdout)
	return strings.Contains(res.Stdout, "soak-caught ")
}

// cutLast splits off the last non-empty line.
func cutLast(out string) (body, last string, ok bool) {
	t := strings.TrimRight(out, "\n")
	i := strings.LastIndex(t, "\n")
	if i < 0 {
		return "", t, t != ""
	}
	return t[:i], t[i+1:], true
}
