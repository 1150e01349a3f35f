# richt.services — build, test and demo. `make test` and `make demo` install what they need
# (apt packages, a Docker engine) through .ci/setup-host, so both work on a fresh machine.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# The testcontainers reaper image cannot be pulled offline; tests remove their targets.
export TESTCONTAINERS_RYUK_DISABLED := true

GO      ?= go
MODULES := $(sort $(patsubst modules/%/module.go,%,$(wildcard modules/*/module.go)))
# Every architecture EL ships, as GOARCH=`uname -m` (the name a target reports, which names
# the build in bin/).
ARCHES  := amd64=x86_64 arm64=aarch64 ppc64le=ppc64le s390x=s390x
MULTICALL := richt-modules
BUILD   := build
STAGE   := $(BUILD)/ansible_collections/richt/services
VERSION := $(shell awk '/^version:/{print $$2}' galaxy.yml)
DEMO    ?= richt-demo
VERSION_VAR := github.com/richt/services/pkg/ansible.Version

.PHONY: all setup build collection ee test test-before unit fuzz lint demo demo-stop molecule bench bench-testenv soak clean

all: build

setup:
	@bash .ci/setup-host

# The modules, staged into a collection tree: one multi-call binary per architecture
# (cmd/richt-modules holds every module; four architectures of one binary fit Galaxy's size
# limit where four of each module would not, docs/fastpath.md), bin/richt-modules-ARCH with
# ARCH as `uname -m` names it, and bin/ARCH/NAME a relative link to it for each module (the
# binary picks its module by its file name, which Ansible's upload keeps). Each
# plugins/modules/NAME is a relative link to the x86_64 build beside the NAME.py
# documentation stub (the layout ansible-doc and ansible-galaxy handle on ansible-core 2.14
# and later); the action plugin sends the target's own build.
# Builds are static and reproducible: -trimpath, no build ID, no VCS stamp, so two builds
# of one commit are byte for byte the same. bin/SHA256SUMS holds the content hashes the
# fast path (plugins/action) caches binaries under on targets: computed here once, never
# per task.
build:
	# build/ is a module of its own before anything lands in it, so a `go vet ./...` or
	# `go list ./...` running beside this recipe (make -j3 test-before) never sees the
	# staged tree as part of this module, not even on a fresh tree.
	mkdir -p $(BUILD)
	printf 'module richt.invalid/staged\n' > $(BUILD)/go.mod
	rm -rf $(STAGE)
	mkdir -p $(STAGE)/bin
	cp -a collection/. $(STAGE)/
	cp -a galaxy.yml roles playbooks $(STAGE)/
	# The staged tree is a product, not Go code: no test files in it, and build/ is a module
	# of its own (above), so `go list ./...` (make test) never finds a second copy of a package.
	find $(STAGE) -name '*.go' -delete
	rm -rf $(STAGE)/playbooks/testdata
	for pair in $(ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$${pair%=*} $(GO) build -trimpath -buildvcs=false \
	    -ldflags='-s -w -buildid= -X $(VERSION_VAR)=$(VERSION)' -o $(STAGE)/bin/$(MULTICALL)-$${pair#*=} ./cmd/$(MULTICALL) || exit 1; \
	done
	for pair in $(ARCHES); do a=$${pair#*=}; mkdir -p $(STAGE)/bin/$$a; \
	  for m in $(MODULES); do ln -sfn ../$(MULTICALL)-$$a $(STAGE)/bin/$$a/$$m; done; \
	done
	for m in $(MODULES); do ln -sfn ../../bin/x86_64/$$m $(STAGE)/plugins/modules/$$m; done
	cd $(STAGE)/bin && sha256sum $(MULTICALL)-* > SHA256SUMS
	# ansible-test's ignores for each Go binary (every build; it does not test the
	# bin/ARCH/NAME links) and each module's stub come from two templates, so a new module or
	# architecture adds no line here.
	ign=$(STAGE)/tests/sanity/ignore-2.14.txt; \
	  { cat $$ign; for m in $(MODULES); do sed "s/@MODULE@/$$m/g" .ci/sanity-module-ignores.txt; done; \
	    for f in $$(cd $(STAGE) && find bin -type f -name '$(MULTICALL)-*'); do sed "s|@FILE@|$$f|g" .ci/sanity-binary-ignores.txt; done; } \
	  | LC_ALL=C sort > $$ign.new && mv $$ign.new $$ign
	@cd $(STAGE)/bin && for f in $(MULTICALL)-*; do printf 'built %s (%d bytes)\n' $$f $$(stat -c %s $$f); done

collection: build
	cd $(STAGE) && ansible-galaxy collection build --force --output-path $(abspath $(BUILD))
	@echo "collection: $(BUILD)/richt-services-$(VERSION).tar.gz"

# The execution environment for AWX/AAP (docs/ee.md), built from Debian trixie's packages
# as the test targets are: what execution-environment.yml asks for, and the collection
# installed from its own tarball. An image with the same content is reused. Prints the
# image's tag, size and build time.
ee: setup collection
	$(GO) run ./cmd/richt-ee -collection $(BUILD)/richt-services-$(VERSION).tar.gz

# gofmt checks the project's Go files as git lists them (tracked, and new ones not ignored):
# `gofmt -l .` walked build/, where build (beside lint under make -j3 test-before) copies
# playbooks/*.go in and deletes them again. An empty list would make gofmt read stdin.
lint:
	@files=$$(git ls-files --cached --others --exclude-standard '*.go') && test -n "$$files" || { echo "lint: git ls-files lists no Go files"; exit 1; }; \
	  test -z "$$(gofmt -l $$files)" || { echo "gofmt would change:"; gofmt -l $$files; exit 1; }
	$(GO) vet -trimpath ./...

# Everything: unit tests, fuzz seed corpora, and the end-to-end suite on real systemd
# targets. TESTENV_SUITE=bookworm runs the end-to-end suite on the older generation.
# docs/testenv.md ("A suite that stays fast") says where the time goes and why it is run
# so:
# - test-before (lint, the Ansible gates and the execution environment, three at a time:
#   checks without deadlines and a build that reuses its image) runs beside the tests,
#   its output kept until they end; the package list is read before it starts, so the
#   staged tree it builds is never listed. playbooks' execution-environment test waits on
#   the same build lock, so it never runs against a half-built image. Not niced: at nice
#   10 its execution-environment build kept playbooks' test waiting on that lock (56 s
#   instead of 44 s), and the run was no shorter (docs/testenv.md, "Stop 54").
# - go test starts packages in the order given: the end-to-end packages come first,
#   longest first by their measured span (E2E_FIRST: playbooks 271 s, service 141,
#   rpm_exact 106, systemd_lifecycle 101, molecule 92, testenv 64, modules 48,
#   unit_override 18), so no long one starts last beside an idle slot.
# - go test's own vet pass is off (-vet=off): test-before's lint runs the whole of go vet
#   over the same tree beside it, so the subset go test runs per package was CPU spent twice.
# - -trimpath (here and in lint's go vet) keeps the checkout's directory out of the build
#   cache's keys, so a fresh clone or a worktree reuses what another checkout compiled and
#   vetted: a clone's compile and link of every test binary took 40 s of CPU without, 17 s
#   with; its go vet 13 s without, 0.7 s with (measured in fresh clones of one tree).
# - -ldflags=-w: test binaries without DWARF (stack traces and t.Log's file:line come
#   from the runtime's own line table, which stays): linking them is about a third of go test's build
#   CPU (66 links, 16 s per run), and a link without DWARF takes 0.86 s of CPU instead of
#   1.22 s for testenv's test binary.
# - test processes with targets take turns (TESTENV_MAX_TARGET_PROCESSES, docs/testenv.md:
#   one per CPU and one more), and go test runs as many packages at once (-p): with one per
#   CPU, the CPU sat 7.5 % idle while targets waited on systemd, DNF and probes (401 s);
#   with one more, 1.2 % (373 s). A package's -timeout includes its wait for a turn.
# test-before's make, named through a variable so that `make -n test` only prints the
# recipe: a line that names $(MAKE) itself runs under -n, and this one runs the tests.
TEST_BEFORE_MAKE := $(MAKE) --no-print-directory -j3 -Otarget test-before
E2E_FIRST := playbooks modules/service modules/rpm_exact modules/systemd_lifecycle testenv/molecule testenv modules modules/unit_override
test: setup
	@mod=$$($(GO) list -m) && all=$$($(GO) list ./...) || exit 1; \
	  first=$$(for p in $(E2E_FIRST); do echo "$$mod/$$p"; done); \
	  pkgs="$$first $$(echo "$$all" | grep -vxF "$$first")"; \
	  log=$$(mktemp) && trap 'rm -f "$$log"' EXIT; \
	  $(TEST_BEFORE_MAKE) >"$$log" 2>&1 & before=$$!; \
	  echo "$(GO) test -p $$(( $$(nproc) + 1 )) -count=1 -vet=off -trimpath -ldflags=-w -timeout 45m $(E2E_FIRST) …the other packages (test-before beside it)"; \
	  $(GO) test -p $$(( $$(nproc) + 1 )) -count=1 -vet=off -trimpath -ldflags=-w -timeout 45m $$pkgs; rc=$$?; \
	  wait $$before; brc=$$?; echo "--- test-before (exit $$brc):"; cat "$$log"; \
	  [ $$rc -eq 0 ] && [ $$brc -eq 0 ]

# What make test runs beside its tests, three at a time: checks without deadlines and the
# execution environment's build, which waits on the network and the disk more than the CPU.
test-before: lint ansible-gates ee

unit: lint
	$(GO) test -count=1 -short ./...

# Short fuzzing runs of every parser of outside input (.ci/fuzz lists them), with a
# summary line per target; a failing input is kept under the package's testdata/fuzz/.
fuzz:
	bash .ci/fuzz

# The collection against Ansible's built-ins, side by side in one run over SSH with
# pipelining, also under Mitogen, on 1/8/24 targets, and through AWX's job path in the
# execution environment with one and two workers (docs/benchmarks.md): about 35 minutes;
# the report, raw figures and plot land in build/bench. BENCH_ARGS=-rounds 9 for more.
bench: setup
	$(GO) run ./cmd/richt-bench $(BENCH_ARGS)

# A seeded random sequence of module runs with faults injected on one target, checking after
# every step that nothing is half-done (cmd/richt-soak, docs/reliability.md). Not part of
# make test. SOAK_ARGS=-for 30m, -seed N to replay; TESTENV_SUITE=bookworm for the older
# generation.
soak: setup
	$(GO) run ./cmd/richt-soak $(SOAK_ARGS)

# testenv's benchmarks, 5 runs each: the median warm start-to-ready of a target (pooled, as
# tests get it; booted while the test waits; and a bare `docker run` + readiness poll of the
# same image, with the ratio ready/bare) and the median full demo scenario.
# Then 300 execs of a short command through the agent and through Docker's exec API, with
# wall time and the CPU each costs (docs/testenv.md, "How commands reach a target").
bench-testenv: setup
	$(GO) test ./testenv -run '^$$' -bench WarmStart -benchtime 5x -count 1
	$(GO) test ./testenv -run '^$$' -bench Exec -benchtime 300x -count 1
	$(GO) test ./playbooks -run '^$$' -bench DemoScenario -benchtime 5x -count 1

# Build the modules, start a local systemd target (a container named $(DEMO)) and run the
# demo playbook against it. `make demo-stop` removes the target.
demo: setup build
	$(GO) run ./testenv/cmd/richt-target start $(DEMO)
	ANSIBLE_COLLECTIONS_PATH=$(abspath $(BUILD)) ANSIBLE_HOST_KEY_CHECKING=false \
	  ansible-playbook -i playbooks/inventory/demo.yml playbooks/demo.yml

# richt-molecule (Molecule's scenarios on testenv's targets, docs/testenv.md), installed
# with go install (into GOBIN, else GOPATH/bin), then run from roles/service on the role's
# own scenarios against the collection as built. MOLECULE_ARGS picks another run, for
# example MOLECULE_ARGS='converge -s upgrade'; EL_VERSION=9 runs them on the EL 9 target.
MOLECULE_ARGS ?= test --all --parallel 2
molecule: setup build
	$(GO) install ./testenv/cmd/richt-molecule
	bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; \
	  cd roles/service && ANSIBLE_COLLECTIONS_PATH=$(abspath $(BUILD)) "$$bin/richt-molecule" $(MOLECULE_ARGS)

demo-stop:
	$(GO) run ./testenv/cmd/richt-target stop $(DEMO)

clean:
	rm -rf $(BUILD)

# The Ansible gates (docs/ansible-gates.md), offline, on the staged collection: ansible-lint
# with the production profile, ansible-test sanity, and the plugins' unit tests with pytest
# on both controllers (ansible-core 2.14 from the host, 2.19 unpacked by .ci/setup-host).
# `make setup` installs the tools. ansible-lint and ansible-test list a tree's files with
# git, which leaves out the ignored build/, so they run on a copy of the stage in a
# temporary directory (ansible_collections/richt/services, as ansible-test requires).
.PHONY: ansible-gates ansible-lint ansible-sanity ansible-units
HOST_PYTHON ?= /usr/bin/python3
HOST_PYTHON_VERSION = $(shell $(HOST_PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ANSIBLE_219 ?= /opt/richt/ansible-core-2.19
# Runs its argument in a temporary copy of the stage, removed afterwards.
STAGE_COPY = tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir -p "$$tmp/ansible_collections/richt" && \
  cp -a $(STAGE) "$$tmp/ansible_collections/richt/" && cd "$$tmp/ansible_collections/richt/services" && $(1)

ansible-gates: ansible-lint ansible-sanity ansible-units

# The config (.ansible-lint) is copied to the collection root, where ansible-lint looks for
# it and resolves its paths. ANSIBLE_COLLECTIONS_PATH ends in ansible_collections because
# ansible-lint 6.13 takes the parent of that value as the collections root for its own
# checks; ansible-core accepts it either way.
ansible-lint: build
	@$(call STAGE_COPY,cp $(CURDIR)/.ansible-lint . && \
	  XDG_CACHE_HOME="$$tmp/cache" ANSIBLE_COLLECTIONS_PATH="$$tmp/ansible_collections" \
	  ansible-lint --offline --profile production --nocolor)

# Every sanity test of ansible-test except changelog, which needs antsibull-changelog (not
# packaged by Debian). offline_venvs.py prepares the tests' virtual environments from
# Debian's packages so that ansible-test asks no package index; tests/sanity/ignore-2.14.txt
# says what does not apply and why.
ansible-sanity: build
	@$(call STAGE_COPY,$(HOST_PYTHON) tests/sanity/offline_venvs.py && \
	  ansible-test sanity --local --python $(HOST_PYTHON_VERSION) --python-interpreter $(HOST_PYTHON) \
	    --skip-test changelog --color no)

# RICHT_EXPECT_ANSIBLE makes each run check that it imported the controller it is for.
ansible-units: build
	@test -d $(ANSIBLE_219)/root/usr/lib/python3/dist-packages/ansible || \
	  { echo "ansible-core 2.19 not found under $(ANSIBLE_219) (make setup unpacks it)"; exit 1; }
	cd $(STAGE) && RICHT_EXPECT_ANSIBLE=2.14 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$(abspath $(BUILD)) \
	  $(HOST_PYTHON) -m pytest -p no:cacheprovider -q tests/unit
	cd $(STAGE) && RICHT_EXPECT_ANSIBLE=2.19 PYTHONDONTWRITEBYTECODE=1 \
	  PYTHONPATH=$(ANSIBLE_219)/root/usr/lib/python3/dist-packages:$(abspath $(BUILD)) \
	  $(HOST_PYTHON) -m pytest -p no:cacheprovider -q tests/unit
