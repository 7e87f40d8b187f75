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

.PHONY: test deps covered vet _vet staticcheck _staticcheck build-tests _build-tests run-tests _run-tests unit bench fuzz \
	release-check _release-check test-load test-fresh safety soak

# Bash, so that a pipeline fails when go test does.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

# The workspace's modules, as one go test, go vet or staticcheck pattern; the
# two modules with workspaces of their own run beside it. make test fails if a
# module is in neither (see covered).
WORKSPACE   := github.com/dlmgo/redlock/...
OWN_WORK    := internal/bench internal/release
# make test runs in two phases, so that no compiler, vet, staticcheck or
# release-check build ever runs while a test does: the tests wait on TTLs,
# expiries and timeouts, and a build beside them takes the cores whenever
# they wait (nice 19 does not keep it off). First everything that computes
# (compute: the release check, beside the build of every test binary and
# then vet and staticcheck, which find the packages it compiled), then the
# prebuilt test binaries alone (run-tests). The table at the end shows each
# step's and each package's wall and CPU seconds.
#
# Test binaries run at once (TEST_P) and parallel tests at once within one
# (TEST_PARALLEL). The suites on real redis-server processes take their
# bounds from the machine's pace, measured on the run, so these set how
# long make test takes, not whether it passes; measured on a 2-core
# machine, 3 binaries of 4 parallel tests keep the cores busy without
# queueing (see the note on the run's load average in the table).
TEST_P        ?= 3
TEST_PARALLEL ?= 4
REPORT      := $(BIN)/report
# The prebuilt test binaries, and the manifest run-tests reads: one line
# per binary, "PACKAGE DIR BINARY [FLAG...]" (internal/testreport).
TESTS       := $(BIN)/tests
MANIFEST    := $(TESTS)/manifest
# step runs the recipe of _TARGET through testreport, which appends the
# step's wall and CPU seconds and exit status to the report's steps.
step = $(BIN)/testreport -step $@ -report $(REPORT) -- $(MAKE) --no-print-directory _$@

# make test prints at its end one table: each package and step with its
# wall and CPU seconds and tests, the total, and the load average while
# the tests ran. It fails when any step did.
test: deps
	@rm -rf $(REPORT) $(BIN)/chaos-figures.txt && mkdir -p $(REPORT) && date +%s > $(REPORT)/start
	@rc=0; $(MAKE) --no-print-directory -k -j 3 --output-sync=line release-check checks || rc=$$?; \
	  $(MAKE) --no-print-directory run-tests || rc=$$?; \
	  $(chaos_figures); $(BIN)/testreport -report $(REPORT) || rc=1; exit $$rc

# checks: the test binaries, then vet and staticcheck over the packages
# they compiled (at once, in make test's job slots); vet runs even when a
# test binary did not build, to say why.
.PHONY: checks
checks:
	@rc=0; $(MAKE) --no-print-directory build-tests || rc=$$?; \
	  $(MAKE) --no-print-directory -k --output-sync=line vet staticcheck || rc=$$?; exit $$rc

# LOW runs a step that only computes at the lowest CPU priority.
LOW := nice -n 19

deps: $(BIN)/staticcheck $(BIN)/testreport $(BIN)/test2json
	@{ command -v redis-server && command -v redis-sentinel; } >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server and redis-sentinel with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel >/dev/null; \
	  else \
	    echo "redis-server or redis-sentinel is missing: install them (Debian: sudo apt-get install redis-server redis-sentinel) and run make test again" >&2; exit 1; \
	  fi; }
	@redis-server --version
	@redis-sentinel --version

$(BIN)/testreport: $(wildcard internal/testreport/*.go)
	@mkdir -p $(BIN) && $(GO) build -o $@ ./internal/testreport

# test2json turns a test binary's output into go test -json's stream.
$(BIN)/test2json:
	@mkdir -p $(BIN) && $(GO) build -o $@ cmd/test2json

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
vet: covered $(BIN)/testreport
	@mkdir -p $(REPORT); $(step)
_vet:
	@echo "== vet"; $(LOW) $(GO) vet -race $(WORKSPACE) && \
	  for m in $(OWN_WORK); do (cd $$m && $(LOW) $(GO) vet -race ./...) || exit 1; done && \
	  { test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }; }

staticcheck: $(BIN)/staticcheck $(BIN)/testreport
	@mkdir -p $(REPORT); $(step)
_staticcheck:
	@echo "== staticcheck"; export GOFLAGS="$$GOFLAGS -race"; $(LOW) $(BIN)/staticcheck $(WORKSPACE) && \
	  for m in $(OWN_WORK); do (cd $$m && $(LOW) $(BIN)/staticcheck ./...) || exit 1; done

# The packages whose tests take longest (measured by make test's table)
# come first in the manifest, so that none of them starts last and runs
# alone; the rest of the workspace, the modules with workspaces of their
# own (internal/bench: its unit tests and a seconds-long smoke run of
# every case; make bench is the real measurement) and the goredis
# backend's refusal tests with internal/bench's newer go-redis follow.
SLOW_FIRST := dlm backends/valkeygo backends/rueidis internal/chaos backends/goredis cmd/redlock backends/redigo \
	dlm/dlmtest examples/mixed dlm/memlock examples/longjob dlm/internal/wake
WORKSPACE_TESTS := $(addprefix github.com/dlmgo/redlock/,$(SLOW_FIRST)) $(WORKSPACE)
LIST_TESTS := $(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}} $$PWD{{end}}'
REFUSAL := github.com/dlmgo/redlock/backends/goredis
REFUSAL_RUN := -test.run=^(TestRefusedNodeReported|TestDialOnce)$$

# build-tests compiles and links every test binary that run-tests runs,
# and the redlock binary cmd/redlock's tests run (REDLOCK_TEST_BINARY),
# into $(TESTS), and writes the manifest: after it, nothing is compiled
# until the tests have ended.
build-tests: $(BIN)/testreport
	@mkdir -p $(REPORT); $(step)
_build-tests:
	@echo "== build tests"; rm -rf $(TESTS) && mkdir -p $(TESTS) && \
	  { $(LIST_TESTS) $(WORKSPACE_TESTS) && for m in $(OWN_WORK); do (cd $$m && $(LIST_TESTS) ./...) || exit 1; done; } > $(TESTS)/packages && \
	  xargs -P 2 -L 1 sh -c 'cd "$$2" && exec $(GO) test -race -c -o "$$0/$$(echo "$$1" | tr / _).test" "$$1"' $(TESTS) < $(TESTS)/packages && \
	  (cd internal/bench && $(GO) test -race -c -o $(TESTS)/refusal.test $(REFUSAL)) && \
	  $(GO) build -race -o $(TESTS)/redlock ./cmd/redlock && \
	  { while read -r pkg dir mod; do bin="$(TESTS)/$$(echo "$$pkg" | tr / _).test"; \
	      test -x "$$bin" && echo "$$pkg $$dir $$bin"; done < $(TESTS)/packages; \
	    echo "$(REFUSAL)@bench $(CURDIR)/backends/goredis $(TESTS)/refusal.test $(REFUSAL_RUN)"; } > $(MANIFEST)

# run-tests runs the binaries that build-tests made, TEST_P at once, with
# nothing else of make test beside them. The chaos suite appends its
# figures (operations checked, faults injected, violations, recovery
# times) to CHAOS_FIGURES; make test prints them at the end.
run-tests: $(BIN)/testreport
	@mkdir -p $(REPORT); $(step)
_run-tests:
	@echo "== tests ($(TEST_P) binaries at once, -parallel $(TEST_PARALLEL))"; \
	  CHAOS_FIGURES=$(BIN)/chaos-figures.txt REDLOCK_TEST_BINARY=$(TESTS)/redlock \
	  $(BIN)/testreport -run $(MANIFEST) -test2json $(BIN)/test2json -p $(TEST_P) -parallel $(TEST_PARALLEL) -o $(REPORT)/tests.json -report $(REPORT)

# unit: the tests alone, built first.
chaos_figures = if [ -f $(BIN)/chaos-figures.txt ]; then echo "== chaos figures"; cat $(BIN)/chaos-figures.txt; fi
unit: deps
	@rm -rf $(REPORT) $(BIN)/chaos-figures.txt && mkdir -p $(REPORT) && date +%s > $(REPORT)/start
	@rc=0; $(MAKE) --no-print-directory build-tests || rc=$$?; \
	  $(MAKE) --no-print-directory run-tests || rc=$$?; $(chaos_figures); \
	  $(BIN)/testreport -report $(REPORT) || rc=1; exit $$rc

# make fuzz: each fuzz target for FUZZTIME; make test already runs their
# committed corpora (testdata/fuzz) as regression tests. Minimizing is
# capped, or each new input could take a minute of the budget. With Go
# before 1.27 a duration may end in a spurious "context deadline exceeded"
# that wrote no failing input (golang/go#75804); a count such as
# FUZZTIME=200000x cannot.
FUZZTIME ?= 10s
FUZZ_TARGETS := FuzzParseURL:./dlm/driver FuzzRedact:./dlm/driver FuzzOptions:./dlm FuzzWakeMessage:./dlm/internal/wake \
	FuzzLimitReplies:./internal/adapterkit

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $${t%%:*}"; \
	  $(GO) test -run=NONE -fuzz="^$${t%%:*}\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=1000x $${t#*:}; \
	done

# make bench: the side-by-side benchmark (redlock over each backend, in its
# default and fair modes, against redsync, on five redis-server processes it
# starts itself, the contention cases also with up to 256 contender
# processes), the cold bursts (256 and 64 processes started at once on one
# key, five 10 s runs of each library) and the held-locks cases (10,000,
# 50,000 and 200,000 auto-extended locks held by one Manager). It takes
# about fifty minutes, the cold bursts half of it, and rewrites
# docs/benchmarks.md and docs/benchmarks.svg. The contention
# cases alone, at 8 and 64 contenders, in a few minutes:
#   cd internal/bench && go run ./cmd/lockbench -run 'hotkey/procs/' -proc-cases 8x1,64x1 -out /tmp/bench
# and one held-locks case (asked, admitted, refused with ErrOverloaded, lost,
# and the Manager's Warn lines), then one that ends with Close while its
# locks are held, counting Close's Warn lines:
#   cd internal/bench && go run ./cmd/lockbench -run '^held/' -held 200000 -held-duration 60s
#   cd internal/bench && go run ./cmd/lockbench -run '^held/' -held 100000 -held-close
bench: deps
	cd internal/bench && $(GO) run ./cmd/lockbench -out ../../docs

# make bench-burst: the cold-burst case alone (BURST processes started at
# once on one key, no warm-up, every backend and redsync in the same run,
# 10 s runs), its report printed rather than written into docs.
# BURST=64x1,256x1 runs each size once, in a few minutes.
BURST ?= 256x5,64x5
.PHONY: bench-burst
bench-burst: deps
	cd internal/bench && $(GO) run ./cmd/lockbench -run '^burst/' -burst $(BURST)

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
release-check: $(BIN)/testreport
	@mkdir -p $(REPORT); $(step)
_release-check:
	@echo "== release-check"; cd internal/release && $(LOW) $(GO) run . -repo $(CURDIR) -ref $(RELEASE_REF)

# make test-load: every module's race-enabled tests while LOAD_HOGS busy
# loops (two per core by default) keep every core busy: the tests on real
# processes take their bounds from the pace they measure, and must pass
# like this. The test binaries are built before the loops start.
LOAD_HOGS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))
test-load: deps
	@rm -rf $(REPORT) $(BIN)/chaos-figures.txt && mkdir -p $(REPORT) && date +%s > $(REPORT)/start
	@start=$$(date +%s); rc=0; $(MAKE) --no-print-directory build-tests || rc=$$?; \
	pids=; for i in $$(seq $(LOAD_HOGS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT; \
	echo "== load: $(LOAD_HOGS) busy loops (pids$$pids)"; \
	$(MAKE) --no-print-directory run-tests || rc=$$?; kill $$pids; $(chaos_figures); \
	$(BIN)/testreport -report $(REPORT) || rc=1; \
	echo "== test-load: exit $$rc after $$(( $$(date +%s) - start ))s"; exit $$rc

# make test-fresh: make test as a new machine runs it: a fresh clone of
# this repository's HEAD, with the module and build caches in empty
# directories and staticcheck installed anew (redis-server, when missing,
# is installed as make test does). The clone and caches are removed after.
test-fresh:
	@tmp=$$(mktemp -d); trap 'chmod -R u+w "$$tmp" 2>/dev/null; rm -rf "$$tmp"' EXIT; \
	git clone -q "$(CURDIR)" "$$tmp/redlock" && echo "== test-fresh: $$(git -C "$$tmp/redlock" log -1 --format='%h %s') in $$tmp" && \
	start=$$(date +%s); rc=0; GOMODCACHE="$$tmp/mod" GOCACHE="$$tmp/cache" GOPATH="$$tmp/gopath" \
	  $(MAKE) --no-print-directory -C "$$tmp/redlock" test || rc=$$?; \
	echo "== test-fresh: exit $$rc after $$(( $$(date +%s) - start ))s"; exit $$rc
