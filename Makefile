# make test: everything CI runs. It installs redis-server and redis-sentinel when missing (as
# root, through apt-get), then runs go vet, staticcheck and the race-enabled
# tests in every module of the repository, and the release check: the
# README's install commands, run as a new user against a module proxy built
# from this commit (docs/releasing.md).

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := $(CURDIR)/.bin
# Every module, the benchmark harness too: make test runs its unit tests and a
# seconds-long smoke run of every case (make bench is the real measurement).
MODULES     := $(shell find . -name go.mod -not -path './.bin/*' -exec dirname {} \; | sort)
# The go.mod files carry no replace directives: each module requires the
# released versions of the others, as its users build it. Inside the
# repository the modules are built from this checkout through the nearest
# go.work (the root's; internal/bench and internal/release have their own),
# so a GOWORK from the environment is not passed on; make release-check
# builds them as users do.
unexport GOWORK

.PHONY: test deps covered vet staticcheck build-tests unit unit-workspace unit-bench unit-release unit-refusal bench fuzz release-check test-load safety soak

# Bash, so that a pipeline fails when go test does.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

# The workspace's modules, as one go test, go vet or staticcheck pattern; the
# two modules with workspaces of their own run beside it. make test fails if a
# module is in neither (see covered).
WORKSPACE   := github.com/dlmgo/redlock/...
OWN_WORK    := internal/bench internal/release
# Test binaries run at once (go test -p) and parallel tests at once within
# one (-parallel). The suites wait on TTLs, expiries and failovers far more
# than they compute, so both are above the core count; on two cores, more
# than four of each left node timeouts of 200-500 ms expiring under the
# race detector, so four it is.
TEST_P        ?= 4
TEST_PARALLEL ?= 4
REPORT      := $(BIN)/report
# timed runs its command and appends "TARGET SECONDS EXIT" to the report's
# steps, keeping the command's exit status.
timed = start=$$(date +%s); rc=0; ( $(1) ) || rc=$$?; \
	echo "$@ $$(( $$(date +%s) - start )) $$rc" >> $(REPORT)/steps; exit $$rc

# make test prints at its end one table: each package and step with its
# seconds and tests, and the total. It fails when any step did. The steps
# that only compute run beside the tests at the lowest CPU priority (LOW),
# in the cores the tests, which wait on TTLs, expiries and failovers far
# more than they compute, leave idle: a test never waits for them. First
# the build of every test binary (build-tests), beside the release check;
# then the tests (UNIT_STEPS), which find their binaries built, beside vet
# and staticcheck, which find the packages compiled (see vet).
test: deps
	@rm -rf $(REPORT) $(BIN)/chaos-figures.txt && mkdir -p $(REPORT) && date +%s > $(REPORT)/start
	@rc=0; $(MAKE) --no-print-directory -k -j 8 --output-sync=line release-check test-steps || rc=$$?; \
	  $(chaos_figures); $(BIN)/testreport -report $(REPORT) || rc=1; exit $$rc

# test-steps: make test's steps after build-tests. The tests run even when
# a test binary failed to build, so that the table shows every package.
.PHONY: test-steps
test-steps:
	@rc=0; $(MAKE) --no-print-directory build-tests || rc=$$?; \
	  $(MAKE) --no-print-directory -k -j 8 --output-sync=line $(UNIT_STEPS) vet staticcheck || rc=$$?; exit $$rc

# LOW runs a step that only computes at the lowest CPU priority: whatever
# else of the session's wants a core gets it first.
LOW := nice -n 19

deps: $(BIN)/staticcheck $(BIN)/testreport
	@{ command -v redis-server && command -v redis-sentinel; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server and redis-sentinel with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel >/dev/null; \
	  else \
	    echo "redis-server or redis-sentinel is missing: install them (Debian: sudo apt-get install redis-server redis-sentinel) and run make test again" >&2; exit 1; \
	  fi; }
	@redis-server --version
	@redis-sentinel --version

$(BIN)/testreport: internal/testreport/main.go
	@mkdir -p $(BIN) && $(GO) build -o $@ ./internal/testreport

$(BIN)/staticcheck:
	GOBIN=$(BIN) GOFLAGS= $(GO) install $(STATICCHECK)

# covered: every module (MODULES) is in the root go.work or in OWN_WORK, so
# that the workspace pattern and the OWN_WORK steps test them all.
covered:
	@used=" $(OWN_WORK) "; for u in $$($(GO) work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p'); do used="$$used$${u#./} "; done; \
	for m in $(MODULES); do case "$$used" in *" $${m#./} "*) ;; \
	  *) echo "module $${m#./} is neither in go.work nor in OWN_WORK: make test would not test it" >&2; exit 1;; esac; done

# vet and staticcheck use the race-enabled packages the tests build (-race;
# staticcheck through GOFLAGS, for the export data it asks go list for):
# after build-tests they find every package compiled, instead of compiling
# everything once more without -race. They check what the tests run; the
# one file left out is a !race constant of cmd/redlock's tests.
vet: covered
	@mkdir -p $(REPORT); $(call timed,echo "== vet"; $(LOW) $(GO) vet -race $(WORKSPACE) && \
	  for m in $(OWN_WORK); do (cd $$m && $(LOW) $(GO) vet -race ./...) || exit 1; done && \
	  { test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }; })

staticcheck: $(BIN)/staticcheck
	@mkdir -p $(REPORT); $(call timed,echo "== staticcheck"; export GOFLAGS="$$GOFLAGS -race"; $(LOW) $(BIN)/staticcheck $(WORKSPACE) && \
	  for m in $(OWN_WORK); do (cd $$m && $(LOW) $(BIN)/staticcheck ./...) || exit 1; done)

# unit: every module's race-enabled tests, the workspace's in one go test and
# the benchmark harness's (its unit tests and a seconds-long smoke run of
# every case; make bench is the real measurement) in another, at once,
# after build-tests. The chaos suite appends its figures (operations
# checked, faults injected, violations, recovery times) to CHAOS_FIGURES;
# they are printed at the end.
UNIT_STEPS := unit-workspace unit-bench unit-release unit-refusal
chaos_figures = if [ -f $(BIN)/chaos-figures.txt ]; then echo "== chaos figures"; cat $(BIN)/chaos-figures.txt; fi
unit: deps
	@rm -f $(BIN)/chaos-figures.txt; mkdir -p $(REPORT)
	@rc=0; $(MAKE) --no-print-directory build-tests || rc=$$?; \
	  $(MAKE) --no-print-directory -k -j 4 --output-sync=line $(UNIT_STEPS) || rc=$$?; $(chaos_figures); exit $$rc

GOTEST = $(GO) test -race -count=1 -json -p $(TEST_P) -parallel $(TEST_PARALLEL)
# go test starts its packages in the order they are named, TEST_P at a
# time: the packages whose tests take longest (measured by make test's
# table) come first, so that none of them starts last and runs alone; the
# rest of the workspace follows. The three backends whose suites run on
# Redis Clusters start beside backends/redigo, whose suite is short, and
# dlm and internal/chaos follow as slots free up: dlm beside all three
# cluster suites, or internal/chaos beside more than two, left the
# machine's run queues long enough under make test-load that 500 ms node
# timeouts expired, and TestChaosFast, whose clients work to 100 ms node
# timeouts through in-process proxies, got no grant in 25 s.
SLOW_FIRST := backends/valkeygo backends/rueidis backends/goredis backends/redigo dlm internal/chaos \
	dlm/dlmtest cmd/redlock examples/mixed dlm/memlock examples/longjob dlm/internal/wake
WORKSPACE_TESTS := $(addprefix github.com/dlmgo/redlock/,$(SLOW_FIRST)) $(WORKSPACE)
# build-tests compiles and links every test binary of the unit steps
# (running none of their tests) into the build cache, where the unit steps
# find them: no test runs while a compiler competes with it for the cores.
build-tests:
	@mkdir -p $(REPORT); $(call timed,echo "== build tests"; $(GO) test -race -count=1 -run '^$$' $(WORKSPACE) >/dev/null && \
	  for m in $(OWN_WORK); do (cd $$m && $(GO) test -race -count=1 -run '^$$' ./... >/dev/null) || exit 1; done && \
	  cd internal/bench && $(GO) test -race -count=1 -run '^$$' github.com/dlmgo/redlock/backends/goredis >/dev/null)
unit-workspace:
	@$(call timed,echo "== test $(WORKSPACE)"; CHAOS_FIGURES=$(BIN)/chaos-figures.txt $(GOTEST) $(WORKSPACE_TESTS) | $(BIN)/testreport -stream -o $(REPORT)/workspace.json)
unit-bench:
	@$(call timed,echo "== test internal/bench"; cd internal/bench && $(GOTEST) ./... | $(BIN)/testreport -stream -o $(REPORT)/bench.json)
unit-release:
	@$(call timed,echo "== test internal/release"; cd internal/release && $(GOTEST) ./... | $(BIN)/testreport -stream -o $(REPORT)/release.json)
# The goredis backend's refusal tests again, with internal/bench's newer go-redis.
unit-refusal:
	@$(call timed,echo "== test backends/goredis refusal with internal/bench's newer go-redis"; cd internal/bench && \
	  $(GOTEST) -run '^(TestRefusedNodeReported|TestDialOnce)$$' github.com/dlmgo/redlock/backends/goredis | \
	  $(BIN)/testreport -stream -o $(REPORT)/refusal.json)

# make fuzz: each fuzz target for FUZZTIME; make test already runs their
# committed corpora (testdata/fuzz) as regression tests. Minimizing is
# capped, or each new input could take a minute of the budget. With Go
# before 1.27 a duration may end in a spurious "context deadline exceeded"
# that wrote no failing input (golang/go#75804); a count such as
# FUZZTIME=200000x cannot.
FUZZTIME ?= 10s
FUZZ_TARGETS := FuzzParseURL:./dlm/driver FuzzRedact:./dlm/driver FuzzOptions:./dlm FuzzWakeMessage:./dlm/internal/wake

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $${t%%:*}"; \
	  $(GO) test -run=NONE -fuzz="^$${t%%:*}\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1000x $${t#*:}; \
	done

# make bench: the side-by-side benchmark (redlock over each backend, in its
# default and fair modes, against redsync, on five redis-server processes it
# starts itself, the contention cases also with up to 256 contender
# processes), and the held-locks cases (10,000, 50,000 and 200,000
# auto-extended locks held by one Manager). It takes about twenty minutes
# and rewrites docs/benchmarks.md and docs/benchmarks.svg. The contention
# cases alone, at 8 and 64 contenders, in a few minutes:
#   cd internal/bench && go run ./cmd/lockbench -run 'hotkey/procs/' -proc-cases 8x1,64x1 -out /tmp/bench
# and one held-locks case:
#   cd internal/bench && go run ./cmd/lockbench -run '^held/' -held 200000 -held-duration 60s
bench: deps
	cd internal/bench && $(GO) run ./cmd/lockbench -out ../../docs

# make chaos: the chaos suite's soak (internal/chaos, TestSoak): the real
# manager through all three backends under every fault for CHAOS_SOAK (at
# least 5m), with the safety checker; -v prints its figures (lines starting
# "chaos:") and every fault applied. make test runs the same suite's fast
# part, with a seconds-long soak.
CHAOS_SOAK ?= 5m
.PHONY: chaos
chaos: deps
	cd internal/chaos && $(GO) test -race -count=1 -v -run '^TestSoak$$' -chaos.soak=$(CHAOS_SOAK) -timeout 30m .

# make safety: the safety matrix (internal/chaos, TestSafetyMatrix): every
# scenario in which a Redis lock is known to fail (a holder process frozen
# past its validity, a node's clock jump, a node restarted without its data,
# delayed replies, a Sentinel failover, a holder frozen under
# auto-extension), under each configuration that applies, on real
# redis-server processes, SAFETY_TRIALS trials per cell the docs call safe.
# It fails if a documented limit does not show or a safe cell accepts a
# stale write, and rewrites docs/safety.md. The full log is in
# .bin/safety.log; the figures (lines starting "safety:") and failures are
# printed. make test runs two trials per cell.
SAFETY_TRIALS ?= 200
safety: deps
	@mkdir -p $(BIN)
	@cd internal/chaos && $(GO) test -race -count=1 -v -run '^TestSafetyMatrix$$' -safety.trials=$(SAFETY_TRIALS) \
	  -safety.out=$(CURDIR)/docs/safety.md -timeout 40m . >$(BIN)/safety.log 2>&1; rc=$$?; \
	  grep -E '^(safety:|--- FAIL|FAIL|ok|PASS)|_test.go:[0-9]+:' $(BIN)/safety.log; exit $$rc

# make soak: TestSoak for SOAK_TIME (25m, within 30): the mutex, read-write
# locks, semaphores and elections through all three backends, with plain
# and fenced callers handing locks over within each manager and extensions
# to varying TTLs, under every fault, every grant checked (and porcupine
# over the mutex and the elections). It fails below SOAK_GRANTS checked
# grants or on any violation, and prints its figures (the line starting
# "chaos:"); the full log is in .bin/soak.log. Built without -race, which
# would halve the grants a 2-core machine checks in the time; make chaos
# runs the same test with it.
SOAK_TIME   ?= 25m
SOAK_GRANTS ?= 100000
soak: deps
	@mkdir -p $(BIN)
	@cd internal/chaos && $(GO) test -count=1 -v -run '^TestSoak$$' -chaos.soak=$(SOAK_TIME) -chaos.mingrants=$(SOAK_GRANTS) \
	  -timeout 40m . >$(BIN)/soak.log 2>&1; rc=$$?; \
	  grep -E '^(chaos:|--- FAIL|FAIL|ok|PASS)|violation' $(BIN)/soak.log; exit $$rc

# make release-check: the README's install commands (go get of the core and
# each backend in a new module, a build of its Usage snippet, go install of
# the CLI), run with an empty module cache against a module proxy that
# internal/release builds on disk from HEAD (uncommitted changes to tracked
# files included), under the version the go.mod files require. No git tag is
# needed. RELEASE_REF=v0.2.0 checks a tag or another commit.
RELEASE_REF ?= HEAD
release-check:
	@mkdir -p $(REPORT); $(call timed,echo "== release-check"; cd internal/release && $(LOW) $(GO) run . -repo $(CURDIR) -ref $(RELEASE_REF))

# make test-load: every module's race-enabled tests while LOAD_HOGS busy
# loops (one per core by default) keep every core busy: the timing tests
# take their margins from the configured timeouts, and must pass like this.
LOAD_HOGS ?= $(shell nproc 2>/dev/null || echo 2)
test-load: deps
	@pids=; for i in $$(seq $(LOAD_HOGS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids' EXIT; \
	echo "== load: $(LOAD_HOGS) busy loops (pids$$pids)"; \
	rm -rf $(REPORT) && mkdir -p $(REPORT) && date +%s > $(REPORT)/start; \
	start=$$(date +%s); $(MAKE) --no-print-directory unit; rc=$$?; \
	$(BIN)/testreport -report $(REPORT) || rc=1; \
	echo "== test-load: exit $$rc after $$(( $$(date +%s) - start ))s"; exit $$rc
