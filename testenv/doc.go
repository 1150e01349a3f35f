// Package testenv tests Ansible modules and roles against real systemd, in containers
// started with testcontainers-go, the way Molecule does in Python: create a target,
// converge it, converge it again to prove idempotence, verify, destroy — in Go tests.
//
// This overview is a tutorial: read it top to bottom and you can write a scenario for your
// own module or role. Every snippet is taken from the package's examples, which compile.
//
// # What you need
//
// A Docker engine, reachable the usual way (DOCKER_HOST or the default socket). The
// first target builds testenv's own image from Debian packages with mmdebstrap (as root;
// nothing is pulled from a registry) and reuses it afterwards; or set TESTENV_IMAGE to an
// existing systemd image, such as almalinux/9-init. RPM fixtures need rpmbuild and
// createrepo_c on the host; playbooks need ansible-playbook with the community.docker
// collection.
//
// End-to-end tests need all that; keep them out of `go test -short`:
//
//	if testing.Short() {
//		t.Skip("end-to-end: needs Docker")
//	}
//
// # Start a target
//
// [Start] boots a container with systemd as PID 1 and returns once systemd reports
// running or degraded. The target is removed when the test ends; if the test failed, its
// systemd state (failed units, the journal's end) is logged first.
//
//	tg := testenv.Start(t)
//	tg.MustExec(t, "systemctl", "is-system-running") // fails the test unless it exits 0
//
// Options shape the target. They are functions that check their arguments: a refused
// option fails the test (or, from [StartContext], returns an error) before anything
// starts.
//
//	tg := testenv.Start(t,
//		// In place before systemd boots: a unit, and a drop-in that makes the boot start it.
//		testenv.WithFile("/etc/systemd/system/app.service", []byte(unit), 0o644),
//		testenv.WithFile("/etc/systemd/system/multi-user.target.d/app.conf", []byte("[Unit]\nWants=app.service\n"), 0o644),
//		testenv.WithReadyTimeout(90*time.Second))
//
// The options are [WithImage], [WithPackages] (extra Debian packages in the built image),
// [WithFile], [WithMount], [WithEnv], [WithLabel], [WithName], [WithReadyTimeout] and
// [WithLogger]. Of an option that sets one thing, the last given wins; options that add
// (files, mounts, packages, labels, environment variables) accumulate.
//
// A [Target] runs commands ([Target.Exec], [Target.MustExec], [Target.Shell]) and takes
// files ([Target.WriteFile], [Target.CopyFile], [Target.CopyDir]; they reach tmpfs mounts
// such as /run and get current modification times, which systemd's NeedDaemonReload
// relies on). Outside a test, [StartContext] does the same and leaves [Target.Terminate]
// to you.
//
// # Run a module
//
// A module is a Go program that speaks Ansible's module protocol. [BuildModule] builds it
// as a static Linux binary once per test process (here this collection's multi-call
// binary, named after the module it should run; a module of your own is
// BuildModule(t, "./cmd/NAME")); [Target.RunModule] copies it in and runs it the way
// Ansible does (binary, arguments file, working directory /), and returns its JSON
// [Result]. Ansible's check and diff switches are keys of the arguments.
//
//	module := testenv.BuildModule(t, "./cmd/richt-modules", testenv.Named("systemd_lifecycle"))
//	check := tg.RunModule(t, module, map[string]any{"unit": "app.service", "state": "running", "_ansible_check_mode": true})
//	r := tg.RunModule(t, module, map[string]any{"unit": "app.service", "state": "running"})
//	if r.Failed() {
//		t.Fatalf("module failed: %s", r.Msg())
//	}
//
// Options build for another architecture ([Arch]: the binary then runs under QEMU's
// user-mode emulator), under another file name ([Named]: a multi-call binary, such as this
// collection's cmd/richt-modules, picks its module by its name), or with arguments every
// run gets unless it sets them ([Defaults], as Ansible's module_defaults: for example
// [ModuleTimeout], a deadline that fits a test machine running many targets, for a module
// whose own default is meant for an idle host).
//
// [Result.Changed], [Result.Msg], [Result.String] and friends read the result. To run the
// binary some other way (as another user, in the background), [Target.InstallModule]
// returns its path in the target.
//
// # Tell what happened to a unit
//
// "changed: true" is the module's claim; systemd knows what actually happened. Take a
// [Target.Snapshot] before, another after, and [Classify] tells [Started], [Restarted],
// [Reloaded], [Stopped] or [Untouched]:
//
//	before := tg.Snapshot(t, "dbus.service")
//	tg.MustExec(t, "systemctl", "restart", "dbus.service")
//	fmt.Println(testenv.Classify(before, tg.Snapshot(t, "dbus.service"))) // restarted
//
// [Target.LogUnitOnFailure] adds a unit's status and journal to a failing test's log.
//
// # Build an RPM fixture repository
//
// Targets carry DNF 4 and rpm, with EL's dnf.conf and presets. Describe packages as
// [Package] values, build them into a repository with [BuildRepo] (or [Repo], which
// builds a given set once per process), and [Target.AddRepo] it:
//
//	repo := testenv.BuildRepo(t, testenv.Package{
//		Name: "app", Version: "2.0",
//		Files:        map[string]testenv.File{"/usr/lib/systemd/system/app.service": {Content: unit}},
//		SystemdUnits: []string{"app.service"}, // EL's %systemd_post, %systemd_preun, %systemd_postun_with_restart
//	})
//	if err := tg.AddRepo(context.Background(), "fixtures", repo); err != nil {
//		t.Fatal(err)
//	}
//	tg.MustExec(t, "dnf", "-y", "-q", "install", "app")
//
// A Package can also carry scriptlets, Requires and Provides, an Epoch and a Release;
// [Package.NEVRA] and [Package.EVRA] name the build.
//
// # Run a playbook
//
// A [Playbook] is a value: fill in what you need and call [Playbook.Run] (you judge the
// result) or [Playbook.RunOK] (it fails the test unless every host finished without
// failures). The targets are the hosts of the group "targets", reached through the
// community.docker.docker connection (or SSH, with Connection "ssh").
//
//	r := testenv.Playbook{
//		Path:            "playbooks/demo.yml",
//		Targets:         []*testenv.Target{a, b}, // the hosts of the group "targets"
//		CollectionsPath: "build",                 // the collection under test (make build)
//		ExtraVars:       map[string]any{"demo_version": "0:2.0-1.noarch"},
//		Args:            []string{"--forks", "2"},
//	}.RunOK(t) // fails the test unless every host finished without failures
//	fmt.Println(r.Recap[a.Name()].Changed, r.ChangedTasks)
//
// [PlaybookResult.Recap] is the play recap by host; [PlaybookResult.ChangedTasks] lists
// "TASK NAME (host)" for every result reported changed.
//
// # Write a scenario
//
// A [Scenario] is Molecule's sequence: create the targets → prepare → converge →
// idempotence (the converge step again, which must change nothing; [CheckIdempotent]
// names what did) → verify → destroy. Each step is a playbook or a Go function; a failing
// phase fails the test and names the phase, and the targets are destroyed either way.
//
//	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"))
//	testenv.Scenario{
//		Name:            "demo",
//		CollectionsPath: "build",
//		Prepare: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
//			if err := ts[0].CopyDir(context.Background(), repo, "/srv/richt-repos/fixtures"); err != nil {
//				tb.Fatal(err)
//			}
//			return nil
//		}},
//		Converge: testenv.Step{Playbook: "playbooks/demo.yml"},
//		Verify: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
//			if s := ts[0].Snapshot(tb, "demo.service"); s.ActiveState != "active" {
//				tb.Errorf("demo.service is %s", s.ActiveState)
//			}
//			return nil
//		}},
//	}.Run(t)
//
// A Func step used as converge returns the names of what it changed, so the idempotence
// phase can judge it too. Scenario.Targets starts several targets, Scenario.Options
// shapes them.
//
// # Molecule scenarios
//
// Role authors who write Molecule scenarios (molecule/<scenario>/molecule.yml with
// converge.yml and verify.yml) run them on these targets with the command richt-molecule
// (package [github.com/richt/services/testenv/molecule]): Molecule's sequences,
// sub-commands and exit codes, each platform's image mapped to its EL generation's
// target, and per action the restarts and reloads each unit saw.
//
// # Fixtures
//
// The subpackage [github.com/richt/services/testenv/fixtures] holds the demo package and
// daemon this repository's own tests use, a test daemon that records its starts and
// reloads (fixtures.InstallTestDaemon, fixtures.Events), and a package providing /bin/sh
// for foreign images. They are built on this package's public API only; read them as
// examples for fixtures of your own.
//
// # Options or struct literals
//
// Start and StartContext take functional [Option] values, because they start something
// and must refuse a bad setting before they do. Playbook, Scenario, Step and Package are
// plain structs: they describe a run or a build, a literal shows it whole, and a zero field
// means the documented default.
//
// # Environment
//
// testenv reads these when a target starts, never at import:
//
//   - TESTENV_SUITE: the Debian suite of the built image, trixie (the default; systemd
//     257, DNF 4.23) or bookworm (systemd 252, DNF 4.14).
//   - TESTENV_IMAGE: an existing systemd image to use instead of building one.
//   - TESTENV_VERBOSE: when set, testcontainers' lines about each target are shown
//     (default: discarded; [WithLogger] chooses per target).
//
// testcontainers' reaper (Ryuk) cannot be pulled offline, and targets are removed by
// Terminate anyway. testcontainers-go reads that switch only from the environment, once
// per process, so the first start sets TESTCONTAINERS_RYUK_DISABLED=true unless the
// variable or ryuk.disabled in ~/.testcontainers.properties is already set: set either
// to keep the reaper. That is the only change testenv makes to the process environment.
package testenv
