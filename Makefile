# make test: everything CI runs. It installs redis-server when missing (as
# root, through apt-get), then runs go vet, staticcheck and the race-enabled
# tests in every module of the repository.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         := $(CURDIR)/.bin
# Every module but the benchmark harness, which has its own target.
MODULES     := $(shell find . -name go.mod -not -path './.bin/*' -not -path './internal/bench/*' -exec dirname {} \; | sort)
# Each module is tested on its own, through its replace directives, as a
# user of that module would build it.
export GOWORK = off

.PHONY: test deps vet staticcheck unit tidy-check

test: deps vet staticcheck unit

deps: $(BIN)/staticcheck
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing redis-server with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else \
	    echo "redis-server is missing: install it (Debian: sudo apt-get install redis-server) and run make test again" >&2; exit 1; \
	  fi; }
	@redis-server --version

$(BIN)/staticcheck:
	GOBIN=$(BIN) GOFLAGS= $(GO) install $(STATICCHECK)

vet:
	@set -e; for m in $(MODULES); do echo "== vet $$m"; (cd $$m && $(GO) vet ./...); done
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

staticcheck: $(BIN)/staticcheck
	@set -e; for m in $(MODULES); do echo "== staticcheck $$m"; (cd $$m && $(BIN)/staticcheck ./...); done

unit:
	@set -e; for m in $(MODULES); do echo "== test $$m"; (cd $$m && $(GO) test -race -count=1 ./...); done
