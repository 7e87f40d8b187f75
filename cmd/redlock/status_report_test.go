package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// TestStatusReportReserved checks that a node whose key a release handed to
// a waiter (reserved, held by no one) counts as no holder's, in the JSON
// fields and the table alike.
func TestStatusReportReserved(t *testing.T) {
	t.Parallel()
	st := []dlm.NodeStatus{
		{Node: "a:1", Held: true, TTL: 900 * time.Millisecond, Counter: 3},
		{Node: "b:1", Reserved: true, Counter: 3},
		{Node: "c:1"},
	}
	rep := newStatusReport("k", st, secrets{})
	if rep.Held || rep.HeldOn != 1 {
		t.Errorf("report Held %v, HeldOn %d; want false and 1: a reserved key is held by no one", rep.Held, rep.HeldOn)
	}
	if n := rep.Nodes[1]; n.Held || !n.Reserved {
		t.Errorf("reserved node's report %+v; want Reserved and not Held", n)
	}
	var b bytes.Buffer
	if err := rep.writeTable(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 4 || !strings.Contains(lines[0], "held: no (on 1 of 3 nodes") || !strings.Contains(lines[3], "reserved") {
		t.Errorf("table:\n%s\nwant the key not held, on 1 node, and node b:1 reserved", b.String())
	}
}
