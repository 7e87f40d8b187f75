package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestRun runs the example as `go run ./otel` does and checks that it
// succeeds and prints every span and metric name, the dead node's failure,
// and no goroutine outlives it.
func TestRun(t *testing.T) {
	leaks := leakcheck.Take()
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	leaks.Check(t, 5*time.Second)
	log := out.String()

	metrics := strings.Index(log, "== metrics")
	if metrics < 0 {
		t.Fatalf("output has no metrics section:\n%s", log)
	}
	spans, tail := log[:metrics], log[metrics:]
	for _, name := range []string{"checkout", "dlm.lock", "dlm.lock.attempt", "dlm.extend", "dlm.unlock", "dlm.do", "dlm.node_error"} {
		if !strings.Contains(spans, `"Name": "`+name+`"`) {
			t.Errorf("spans lack %q", name)
		}
	}
	for _, outcome := range []string{"obtained", "extended", "released", "not_obtained", "lost"} {
		if !strings.Contains(spans, `"Value": "`+outcome+`"`) {
			t.Errorf("spans lack the outcome %q", outcome)
		}
	}
	for _, name := range []string{"dlm.acquire.duration", "dlm.grants", "dlm.contention", "dlm.lost", "dlm.extensions", "dlm.node.errors"} {
		if !strings.Contains(tail, `"Name": "`+name+`"`) {
			t.Errorf("metrics lack %q", name)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", log)
	}
}
