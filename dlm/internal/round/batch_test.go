package round

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// batchReq is a batch of n entries.
func batchReq(n int) *Request {
	return &Request{Op: "extend", Script: script.ExtendBatch, Want: 1, Timeout: time.Minute, Entries: n}
}

// TestBatchReplies checks how a node's reply to a batch is read: an entry
// is yes when its integer is the wanted one, and a reply that is not one
// non-negative integer per entry fails the batch on that node, as does
// the node's own failure.
func TestBatchReplies(t *testing.T) {
	t.Parallel()
	down := errors.New("down")
	for _, tc := range []struct {
		name    string
		reply   any
		want    []bool
		failure string // in the error; "" for none
	}{
		{"each entry its own", []any{int64(1), int64(0), int64(1)}, []bool{true, false, true}, ""},
		{"all refused", []any{int64(0), int64(0), int64(0)}, []bool{false, false, false}, ""},
		{"another count is a no", []any{int64(2), int64(1), int64(0)}, []bool{false, true, false}, ""},
		{"too few entries", []any{int64(1), int64(1)}, nil, "2 replies for 3 entries"},
		{"too many entries", []any{int64(1), int64(1), int64(1), int64(1)}, nil, "4 replies for 3 entries"},
		{"not an array", int64(1), nil, "type int64"},
		{"a string entry", []any{int64(1), "1", int64(1)}, nil, "entry 2 of 3"},
		{"a negative entry", []any{int64(1), int64(1), int64(-1)}, nil, "entry 3 of 3"},
		{"the node failed", down, nil, "down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakes{replies: []any{tc.reply}, gates: make([]chan struct{}, 1)}
			r, _ := newRound(t, f)
			got := make(chan BatchReply, 1)
			r.Batch(context.Background(), 0, batchReq(3), func(b BatchReply) { got <- b })
			b := <-got
			var ne *nodeErr
			switch {
			case tc.failure == "":
				if b.Err != nil || !slices.Equal(b.Yes, tc.want) {
					t.Errorf("Batch = %v, %v; want %v", b.Yes, b.Err, tc.want)
				}
			case b.Err == nil || b.Yes != nil || !errors.As(b.Err, &ne) || ne.node != 0 || !strings.Contains(b.Err.Error(), tc.failure):
				t.Errorf("Batch = %v, %v; want node 0's failure saying %q", b.Yes, b.Err, tc.failure)
			}
			for e := range 3 {
				rep := b.Reply(e)
				if rep.Node != 0 || (rep.Err != nil) != (b.Err != nil) || (b.Err == nil && rep.Yes != b.Yes[e]) {
					t.Errorf("Reply(%d) = %+v; want entry %d's answer of node 0", e, rep, e)
				}
			}
		})
	}
}

// TestSettled checks when an entry's vote is decided: a quorum of yes, or
// no quorum possible once failures alone can no longer change the
// error's class; never before with a quorum still reachable.
func TestSettled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		yes, no, failed int
		left            int
		want            bool
	}{
		{"quorum of yes", 3, 0, 0, 2, true},
		{"quorum still reachable", 2, 1, 0, 2, false},
		{"no quorum left, refusals", 0, 3, 0, 2, true},
		{"three failed: unavailable whatever comes", 0, 0, 3, 2, true},
		{"two failed, one no, two due: the class depends on them", 0, 1, 2, 2, false},
		{"all answered", 2, 2, 1, 0, true},
	} {
		v := Vote{Yes: tc.yes, No: tc.no, Failed: tc.failed}
		if got := v.Settled(5, 3, tc.left); got != tc.want {
			t.Errorf("%s: Settled(5 nodes, quorum 3, %d left) = %v; want %v", tc.name, tc.left, got, tc.want)
		}
	}
}

// TestPendingDone checks that Done reads the replies that came without
// waiting for the others, and is true once none is due.
func TestPendingDone(t *testing.T) {
	t.Parallel()
	late := make(chan struct{})
	f := &fakes{
		replies: []any{int64(1), int64(1), int64(1), int64(1), int64(1)},
		gates:   []chan struct{}{nil, nil, nil, late, late},
	}
	r, _ := newRound(t, f)
	v, p := r.Poll(context.Background(), acquireReq())
	if v.Yes != 3 || p == nil {
		t.Fatalf("Poll with 2 of 5 nodes late = %d yes, pending %v; want 3 yes and a pending", v.Yes, p != nil)
	}
	if p.Done() {
		t.Error("Done() with 2 replies still due = true; want false")
	}
	close(late)
	deadline := time.Now().Add(10 * time.Second)
	for !p.Done() {
		if time.Now().After(deadline) {
			t.Fatal("Done() still false 10s after the late replies were let through")
		}
		time.Sleep(time.Millisecond)
	}
	p.Wait() // returns at once
}
