package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestElection runs the demo on its embedded nodes: three leaders in turn,
// never two at once, each observed; nothing left running.
func TestElection(t *testing.T) {
	leaks := leakcheck.Take()
	var out bytes.Buffer
	err := run(context.Background(), &out, nil)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	for _, want := range []string{"host-a: leading, term", "observer: leader is host-a", "host-b: crashing without resigning", "ok: three leaders in turn"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	leaks.Check(t, 5*time.Second)
}
