# tooljail: one static binary (cgo, libseccomp linked in statically).
GO        ?= go
# VERSION is the release (the VERSION file); `make build` says it is a
# development build of it: 0.1.0-dev+<git describe>. COMMIT is the full hash,
# "-dirty" when tracked files have uncommitted changes (`tooljail version`).
VERSION   := $(shell cat VERSION)
DEV_VERSION := $(VERSION)-dev+$(shell git describe --always --dirty 2>/dev/null || echo unknown)
COMMIT    := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo -dirty)
BIN       := bin/tooljail
HELPER    := bin/tjhelper
TJSYSBIN  := bin/tjsys
TAGS      := osusergo,netgo
LDFLAGS   := -X github.com/tooljail/tooljail/jail.Version=$(DEV_VERSION) -X main.commit=$(COMMIT) -linkmode external -extldflags "-static"
GOFILES   := $(shell find . \( -name '*.go' -o -name '*.c' -o -name '*.h' \) -not -path './integration/*' 2>/dev/null) $(wildcard profiles/*.toml)
# Integration tests run the built binary as root and as this unprivileged uid.
export TOOLJAIL := $(CURDIR)/$(BIN)
export TJHELPER := $(CURDIR)/$(HELPER)
export TJSYS    := $(CURDIR)/$(TJSYSBIN)

.PHONY: node dist-npm test-npm mcp-js all build deps test test-online unit fuzz integration python vm demo bench clean fmt vet

all: build
build: $(BIN)

# Rewritten only when the version or commit changes, so a commit with no
# file changed still relinks what `tooljail version` reports.
bin/.buildstamp: FORCE
	@mkdir -p bin
	@echo '$(DEV_VERSION) $(COMMIT)' | cmp -s - $@ || echo '$(DEV_VERSION) $(COMMIT)' >$@

$(BIN): $(GOFILES) go.mod go.sum bin/.buildstamp
	@$(MAKE) --no-print-directory deps
	CGO_ENABLED=1 $(GO) build -tags $(TAGS) -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/tooljail

# The test build: the same binary, plus the allow mode resolving made-up
# names from TOOLJAIL_TEST_HOSTS (jail/testhooks.go). Never shipped.
TESTHOOKS := bin/tooljail-testhooks
export TOOLJAIL_TESTHOOKS := $(CURDIR)/$(TESTHOOKS)
$(TESTHOOKS): $(GOFILES) go.mod go.sum bin/.buildstamp
	@$(MAKE) --no-print-directory deps
	CGO_ENABLED=1 $(GO) build -tags $(TAGS),tooljail_testhooks -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/tooljail

# The test helper runs inside jails and VMs: static, no cgo.
$(HELPER): $(wildcard integration/tjhelper/*.go)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./integration/tjhelper

# The raw system call prober the policy tests run in jails (and the VMs).
$(TJSYSBIN): $(wildcard integration/tjsys/*.go)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./integration/tjsys

# What the build and the tests need, installed with apt-get when missing.
deps:
	@./.ci/deps.sh

# go.mod and go.sum must be what `go mod tidy` writes (requires marked
# direct or indirect as they are used, no stale sums).
vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting"; exit 1; }
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy (diff above): run \`go mod tidy\` and commit the result"; exit 1; }

# The jail package twice: as embedders link it (dynamic), and linked like
# the binary (static), where the init's fork leaves the supervisor's heap out.
unit: deps
	$(GO) test -count=1 -timeout 8m ./internal/... ./hostpath/... ./hostmount/... ./hostprobe/... ./hostprotect/... ./hostside/... ./changes/... ./toolchain/... ./packaging/... ./profiles/... ./jail/... ./seccomp/... ./landlock/... ./cgroup/... ./serve/... ./network/... ./tools/... ./report/... ./auditlog/... ./cmd/... ./bench/...
	CGO_ENABLED=1 $(GO) test -count=1 -timeout 8m -tags $(TAGS) -ldflags '-linkmode external -extldflags "-static"' ./jail/...
	@$(MAKE) --no-print-directory fuzz

# A bounded run of each fuzz target over user input (one -fuzz per go test):
# run's whole argument list, profile files, a tool call's arguments, an audit
# log, and what a jailed command will send the network allow mode (a TLS
# ClientHello, a DNS query). Minimizing a new input is capped, or it would
# take the whole budget. The budgets are counts of executions, not times:
# Go 1.26's fuzzing coordinator can fail a run whose time budget ends while a
# starved worker is mid-input ("context deadline exceeded", no crasher:
# go.dev/issue/75804, fixed in 1.27), which a busy CI host hit. A count has
# no deadline to race; each took 8 to 20 s here beside two CPU hogs. The whole
# run is bounded by -timeout. FuzzRunFlags runs about 1,000 inputs a second
# (each parses a run's flags, loads profiles and builds a Spec): 60000 took
# 62 s of fuzzing on a quiet host and over 100 s beside a CPU hog, where the
# others take 10 to 16 s, so it runs 20000.
FUZZFLAGS = -run=NONE -fuzzminimizetime=1s -timeout=8m
fuzz:
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzRunFlags -fuzztime=20000x ./cmd/tooljail
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzLoad -fuzztime=20000x ./profiles
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzCheck -fuzztime=300000x ./tools
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzReader -fuzztime=300000x ./auditlog
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzParse -fuzztime=300000x ./network/hello
	$(GO) test $(FUZZFLAGS) -fuzz=FuzzQuery -fuzztime=300000x ./network/resolver

integration: $(BIN) $(TESTHOOKS) $(HELPER) $(TJSYSBIN)
	$(GO) test -count=1 -timeout 15m ./integration/

# The Python client (python/): its unittest suite, through the CLI and a real
# `tooljail serve` it starts.
python: $(BIN)
	cd python && TOOLJAIL_BIN=$(CURDIR)/$(BIN) timeout -s ABRT -k 10 10m python3 -X faulthandler -m unittest discover -s tests

# The TypeScript client (node/): compiled with tsc (a dev dependency, at the
# version package-lock.json pins), tested with node --test through the CLI
# and a real `tooljail serve`, as root and as other users.
node: $(BIN)
	cd node && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent && TOOLJAIL_BIN=$(CURDIR)/$(BIN) timeout -k 10 10m node --test test/*.test.js

# tooljail mcp driven by the official MCP TypeScript SDK's client
# (integration/mcpjs): over stdio and --listen, every example tool called
# with valid and invalid arguments, a running call cancelled. The SDK comes
# from the npm registry at the version package-lock.json pins.
mcp-js: $(BIN)
	cd integration/mcpjs && npm ci --no-audit --no-fund --loglevel=error && TOOLJAIL=$(CURDIR)/$(BIN) timeout -k 10 5m node --test --test-concurrency=1

# The integration suite, static, for the VMs.
bin/integration.test: $(wildcard integration/*.go) $(wildcard integration/tjhelper/*.go)
	CGO_ENABLED=0 $(GO) test -c -o $@ ./integration

# The integration suite under Debian's 6.1 and 6.12 kernels with pure cgroup v2,
# as root, as uid 65534, and both again with user namespaces switched off.
# Both guests at once: an emulated guest keeps less than one core busy. Four
# tests at a time: many wait on timeouts. TestJSONMemoryBound and
# TestServeMemoryBound measure the supervisor's and the server's own memory,
# TestOutputBytesExact compares 16 MiB outputs by hash through every path,
# and TestFullTmpfsNamed and TestServedReportNotes fill tmpfs mounts of up
# to 64 MiB to see them named: what they test is the same on every kernel,
# and under emulation they were a third of a suite's CPU (the last two the
# two slowest of a 6.12 root suite, 50 s and 21 s against 1.4 s and 0.2 s
# on the host): they run on the host only. So do the tests whose subject no
# kernel changes, which the host suite covers: flag and input checks
# (TestBadInput), toolchain discovery from files (TestToolchain*), the MCP
# and tools protocol (TestMCP*), the readonly profile's workloads, caches,
# a missing command's hint, client profiles, the audit log's appends and the
# server's admission order: about a fifth of a guest suite's test time
# (180 of 840 s in a 6.12 user suite). A guest's four suites took about
# 1050 s beside a CPU hog before that: VM_TIMEOUT leaves room above it.
# TestChangesApplyKilled kills `tooljail changes apply` mid-way and checks
# the recovery: file work of a host process, with no jail at the kill, the
# same on every kernel (the kernels' overlays are tested by the other change
# set tests). It was the guests' longest test (100 s, among parallel tests, of
# a 300 s suite), though leaving it out took only a few seconds off a suite.
VMHOSTONLY = TestJSONMemoryBound|TestServeMemoryBound|TestOutputBytesExact|TestFullTmpfsNamed|TestServedReportNotes|TestBadInput|TestToolchain.*|TestMCP.*|TestWorkloadReadonly.*|TestCachesSurviveRuns|TestDanglingCommandNamed|TestServeClientProfile|TestAuditLogConcurrent|TestServeFairAdmission|TestChangesApplyKilled
# -test.timeout bounds each suite: a test that hangs in a live guest (its
# heartbeat goes on) is named with the tests still running and a goroutine
# dump, and /init lists what the suite left running (run.sh prints both),
# where VM_TIMEOUT would end the guest with no word of where it hung. A root
# suite took about 200 s here quiet and 300 s beside a CPU hog; on a slower
# machine a whole guest (four suites, the root one the longest) took about
# 1050 s beside a hog. 1000 s leaves room above those, and a hung root suite
# still leaves the suites after it time inside VM_TIMEOUT.
VMTESTFLAGS = -test.parallel 4 -test.timeout 1000s -test.skip '^($(VMHOSTONLY))$$'
vm: $(BIN) $(TESTHOOKS) $(HELPER) $(TJSYSBIN) bin/integration.test
	./integration/vm/deps.sh
	VM_PARALLEL=$${VM_PARALLEL:-1} VM_TIMEOUT=$${VM_TIMEOUT:-1500} VM_USERS="$${VM_USERS:-root user root-nouserns user-nouserns}" ./integration/vm/run-matrix.sh bin/integration.test $(VMTESTFLAGS)

# The integration suite on Debian's arm64 cloud kernels (6.1 and 6.12) in a
# qemu-system-aarch64 guest (-M virt, TCG), as root and as uid 65534, with
# the release arm64 binary (dist/bin/linux-arm64/tooljail) and the suite and
# helpers cross-compiled. An arm64 guest keeps both cores busy (multi-threaded
# TCG), so the kernels boot one after the other. Not part of `test` (which
# runs vm-arm64-smoke): about 6 min per kernel alone (integration/vm/README.md).
ARM64_VMBIN  := bin/arm64
ARM64_VMDEPS := dist/bin/linux-arm64/tooljail $(ARM64_VMBIN)/tooljail-testhooks $(ARM64_VMBIN)/tjhelper $(ARM64_VMBIN)/tjsys $(ARM64_VMBIN)/integration.test
ARM64_VMENV   = VM_ARCH=arm64 TOOLJAIL=$(CURDIR)/dist/bin/linux-arm64/tooljail TOOLJAIL_TESTHOOKS=$(CURDIR)/$(ARM64_VMBIN)/tooljail-testhooks \
	TJHELPER=$(CURDIR)/$(ARM64_VMBIN)/tjhelper TJSYS=$(CURDIR)/$(ARM64_VMBIN)/tjsys
$(ARM64_VMBIN)/tooljail-testhooks: $(GOFILES) go.mod go.sum bin/.buildstamp | dist-deps
	$(ARM64_ENV) $(GO) build -tags $(TAGS),tooljail_testhooks -trimpath -ldflags '$(LDFLAGS)' -o $@ ./cmd/tooljail
$(ARM64_VMBIN)/tjhelper: $(wildcard integration/tjhelper/*.go)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -trimpath -o $@ ./integration/tjhelper
$(ARM64_VMBIN)/tjsys: $(wildcard integration/tjsys/*.go)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -trimpath -o $@ ./integration/tjsys
$(ARM64_VMBIN)/integration.test: $(wildcard integration/*.go) $(wildcard integration/tjhelper/*.go)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -c -o $@ ./integration
.PHONY: vm-arm64 vm-arm64-smoke
vm-arm64: $(ARM64_VMDEPS)
	VM_ARCH=arm64 ./integration/vm/deps.sh
	$(ARM64_VMENV) VM_TIMEOUT=$${VM_TIMEOUT:-1500} VM_USERS="$${VM_USERS:-root user root-nouserns user-nouserns}" ./integration/vm/run-matrix.sh $(ARM64_VMBIN)/integration.test $(VMTESTFLAGS)

# The arm64 smoke run in `make test`: Debian 12's arm64 kernel (6.1), as
# root and as uid 65534, the suite's set-up (`tooljail check --json` as
# each user) and the tests of what differs by architecture: the jailed
# identity (uid 1000, no capabilities), the seccomp policy against arm64's
# syscall table (denied calls reported by name, each one killed), aarch32
# calls killed as a foreign entry point, Landlock, the cgroup v2 memory kill
# and the PID namespace. 45 s alone, 105 s beside a CPU hog (boot included);
# after `vm`, as its arm64 guest keeps both cores busy.
ARM64_SMOKE = ^(TestNoCapabilities|TestSeccompDeniedCalls|TestSeccompKillEach|TestSeccompForeignArch|TestLandlockReadOnlyPaths|TestCgroupMemoryBomb|TestPIDNamespace|TestExitCodes)$$
vm-arm64-smoke: $(ARM64_VMDEPS)
	VM_ARCH=arm64 ./integration/vm/deps.sh
	$(ARM64_VMENV) VM_QUIET=1 VM_TIMEOUT=$${VM_TIMEOUT:-600} ./integration/vm/run.sh 6.1 $(ARM64_VMBIN)/integration.test -test.v -test.parallel 4 -test.run '$(ARM64_SMOKE)'

# Every stage is bounded (go test -timeout, timeout(1) with a traceback for
# the Python suite, VM_TIMEOUT for each guest): a hang fails with where it
# hung, well inside CI's 90 minutes.
test: deps vet unit unit-arm64 integration python node mcp-js dist-check test-wheel test-npm vm vm-arm64-smoke

# The online workloads (integration/online_test.go): npm install of a package
# and a Go build of a module with a dependency (the fetch profile), pip
# download (the network profile), from the registries this machine reaches
# (npm config get registry, go env GOPROXY, pip's index), through the
# network allow mode, as root and as uid 65534. Not part
# of `test`, which needs no network: each skips, saying why, when its registry
# cannot be reached. -v prints each workload's memory peak and wall time.
test-online: $(BIN) $(TESTHOOKS) $(HELPER) $(TJSYSBIN)
	TOOLJAIL_TEST_ONLINE=1 $(GO) test -count=1 -timeout 20m -v -run 'Online' ./integration/

# The README's first command: build, then run one jailed command and show its report.
demo: $(BIN)
	./$(BIN) run --report - -- /bin/sh -c 'echo "hello from $$(id -un) (uid $$(id -u)) on $$(hostname), pid $$$$"; ls /'

bench: $(BIN) $(HELPER)
	./bench/run.sh

clean:
	rm -rf bin dist

# ---- Releases: make dist (docs/install.md) ----
# Static binaries for each target, a tarball and a .deb of each, and
# SHA256SUMS over every artefact, reproducibly: the same commit gives the
# same bytes (-trimpath, no VCS stamp, stripped; archives written by
# packaging/mkdist with every time SOURCE_DATE_EPOCH, the commit's time).
# dist/ is output only. The arm64 build uses Debian's cross compiler and the
# arm64 libseccomp (packaging/deps.sh installs them); this host is amd64.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
export SOURCE_DATE_EPOCH
DIST_ARCHES   := amd64 arm64
DIST_BINS     := $(DIST_ARCHES:%=dist/bin/linux-%/tooljail)
DIST_TARBALLS := $(DIST_ARCHES:%=dist/tooljail-$(VERSION)-linux-%.tar.gz)
DIST_DEBS     := $(DIST_ARCHES:%=dist/tooljail_$(VERSION)_%.deb)
# What `make dist` makes before the sums; each packaging target joins here.
DIST_PARTS    := dist-tarballs dist-debs dist-python dist-npm
RELEASE_LDFLAGS := -s -w -X github.com/tooljail/tooljail/jail.Version=$(VERSION) -X main.commit=$(COMMIT) -linkmode external -extldflags "-static"
CC_amd64      := gcc
CC_arm64      := aarch64-linux-gnu-gcc
PKGCONFIG_amd64 := /usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig
PKGCONFIG_arm64 := /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
MKDIST        := $(GO) run ./packaging/mkdist
DEB_MAINTAINER ?= tooljail maintainers <maintainers@tooljail.invalid>

.PHONY: dist dist-deps dist-bin dist-tarballs dist-debs dist-sums dist-check FORCE
FORCE:

# Everything anew: nothing of an older version or commit is left to be summed.
dist:
	rm -rf dist
	@$(MAKE) --no-print-directory $(DIST_PARTS)
	@$(MAKE) --no-print-directory dist-sums

dist-deps: deps
	@./packaging/deps.sh

dist-bin: $(DIST_BINS)

# Always relinked: the commit is in the binary, and make cannot see it change.
dist/bin/linux-%/tooljail: FORCE | dist-deps
	CGO_ENABLED=1 GOOS=linux GOARCH=$* CC=$(CC_$*) PKG_CONFIG_LIBDIR=$(PKGCONFIG_$*) $(GO) build -tags $(TAGS) -trimpath -buildvcs=false -ldflags '$(RELEASE_LDFLAGS)' -o $@ ./cmd/tooljail

# The completions, printed by the amd64 binary (packaging/completions.sh).
dist/completions: dist/bin/linux-amd64/tooljail
	./packaging/completions.sh $< $@

dist-tarballs: $(DIST_TARBALLS)
dist/tooljail-$(VERSION)-linux-%.tar.gz: dist/bin/linux-%/tooljail dist/completions
	$(MKDIST) -kind tarball -version $(VERSION) -arch $* -bin $< -completions dist/completions -o $@

dist-debs: $(DIST_DEBS)
dist/tooljail_$(VERSION)_%.deb: dist/bin/linux-%/tooljail dist/completions
	$(MKDIST) -kind deb -version $(VERSION) -arch $* -bin $< -completions dist/completions -maintainer '$(DEB_MAINTAINER)' -o $@

# Over every artefact at the top of dist/, whichever targets made them.
# The npm package: one tarball with the client and both static binaries
# (node/scripts/pack.sh says why one), and its install-and-run test.
dist-npm: dist-bin
	./node/scripts/pack.sh $(CURDIR)/dist
test-npm: dist-npm
	./node/scripts/test-install.sh $(CURDIR)/dist

dist-sums:
	cd dist && find . -maxdepth 1 -type f \( -name '*.tar.gz' -o -name '*.deb' -o -name '*.whl' -o -name '*.tgz' \) -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum >SHA256SUMS
	@test -s dist/SHA256SUMS || { echo "dist: no artefacts to sum in dist/"; exit 1; }

# The unit tests built for arm64 and run here under qemu-user (binfmt_misc):
# the code whose behaviour depends on the architecture, seccomp's filters
# compiled against arm64's syscall table first among it. Debian 12's
# qemu-user (7.2) emulates no seccomp(2), openat2(2), open_tree(2) nor
# namespaces, so what cannot run there is left out, and runs on the amd64
# host and in the VM guests instead:
# - hostpath, hostmount, profiles, tools, jail, serve, cmd: every host path is
#   opened with openat2 (RESOLVE_BENEATH), or a test makes a jail;
# - seccomp TestDeniedCalls, TestDenySockets: they load a filter; the others
#   compile filters with libseccomp told API level 6 (TOOLJAIL_TEST_SECCOMP_API),
#   as it cannot ask a kernel that has no seccomp(2);
# - cgroup TestMemoryPeakAccuracy: the peak counts the emulator's own memory
#   (the stale clean-up's tests run: cgroup reads /proc/PID/stat through a
#   /proc descriptor, which qemu-user passes to the kernel, where an open of
#   "/proc/<own pid>/stat" gets a made-up start time);
# - internal/tcppeer TestOfOtherProcess: it re-executes /proc/self/exe, the
#   emulator there.
# About 20 s beside a CPU hog once the test binaries are cached.
ARM64_ENV  := CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=$(CC_arm64) PKG_CONFIG_LIBDIR=$(PKGCONFIG_arm64)
ARM64_PKGS := ./seccomp ./landlock ./cgroup ./network/... ./internal/... ./toolchain ./auditlog
ARM64_SKIP := ^(TestDeniedCalls|TestDenySockets|TestMemoryPeakAccuracy|TestOfOtherProcess)$$
.PHONY: unit-arm64
unit-arm64: dist-deps
	$(ARM64_ENV) TOOLJAIL_TEST_SECCOMP_API=6 $(GO) test -count=1 -timeout 8m -skip '$(ARM64_SKIP)' $(ARM64_PKGS)

# What `make dist` made, installed and run (packaging/disttest: the
# tarballs, the amd64 one jailing `id -u` as root and uid 65534, the arm64 one
# under qemu-user; the .debs through dpkg --root; SHA256SUMS), then the
# whole dist built again from another path and umask and compared byte for
# byte (packaging/repro.sh).
dist-check: dist
	TOOLJAIL_DIST=$(CURDIR)/dist $(GO) test -count=1 -timeout 5m ./packaging/...
	./packaging/repro.sh

# The seccomp filters of the shipped profiles, compiled into the binary
# (seccomp/builtin_filters.go); the profiles tests fail while it is stale.
.PHONY: generate
generate:
	$(GO) run ./seccomp/internal/genbuiltin

# The man pages in docs/man, from docs/*.md and the flag tables, and the flag
# tables of docs/cli.md and docs/serve.md
# (cmd/tooljail/manpage_test.go); make unit fails while they are stale.
.PHONY: man
man:
	$(GO) test -count=1 ./cmd/tooljail -run 'TestManPages$$|TestDocsFlagTables$$' -update

# Python platform wheels carrying the static binary as the tooljail console
# script (python/build_backend.py; SOURCE_DATE_EPOCH makes them reproducible).
.PHONY: dist-python test-wheel
dist-python: dist-bin
	python3 python/build_backend.py dist x86_64 dist/bin/linux-amd64/tooljail
	python3 python/build_backend.py dist aarch64 dist/bin/linux-arm64/tooljail

# Installs the wheels from dist/ into fresh venvs (python/tests/test_wheel.py).
test-wheel: dist-python
	cd python/tests && TOOLJAIL_DIST=$(CURDIR)/dist timeout -s ABRT -k 10 5m python3 -m unittest -v test_wheel
