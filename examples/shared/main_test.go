package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/internal/leakcheck"
)

// TestShared runs the program: the readers share the catalog, the writer
// runs alone and before the late reader, and at most two encoders run at
// once (the program checks these itself and fails otherwise).
func TestShared(t *testing.T) {
	leaks := leakcheck.Take()
	var out bytes.Buffer
	err := run(context.Background(), &out)
	leaks.Check(t, 5*time.Second)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"order: reader", "writer, late reader", "each permit needs 4 of the 5 nodes", "ok: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q", want)
		}
	}
}
