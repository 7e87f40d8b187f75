package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// memNodes returns n in-memory nodes.
func memNodes(n int) []*memlock.Node {
	out := make([]*memlock.Node, n)
	for i := range out {
		out[i] = memlock.NewNode(fmt.Sprintf("mem-%d:6379", i))
	}
	return out
}

func asDriverNodes(ns []*memlock.Node) []driver.Node {
	out := make([]driver.Node, len(ns))
	for i, n := range ns {
		out[i] = n
	}
	return out
}

// TestSemaphoreNoFailureToleranceLogged checks that a semaphore whose
// permits need every node, where the manager's locks would survive a node
// down, is reported once per manager at Warn on the manager's logger, and
// that semaphores that tolerate a failure, or whose quorum was asked for,
// are not.
func TestSemaphoreNoFailureToleranceLogged(t *testing.T) {
	t.Parallel()
	const warning = "permits need every node"
	for _, tc := range []struct {
		name   string
		nodes  int
		limits []int // a semaphore of each, twice
		opts   []dlm.SemaphoreOption
		want   int // warnings
	}{
		{"3 nodes, limit 2", 3, []int{2}, nil, 1},
		{"3 nodes, limits 2 and 5", 3, []int{2, 5}, nil, 1},
		{"3 nodes, limit 1", 3, []int{1}, nil, 0},
		{"5 nodes, limit 3", 5, []int{3}, nil, 0},
		{"5 nodes, limit 4", 5, []int{4}, nil, 1},
		{"1 node, limit 3", 1, []int{3}, nil, 0}, // no lock survives a failure
		{"3 nodes, quorum asked", 3, []int{1}, []dlm.SemaphoreOption{dlm.WithPermitQuorum(3)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf secretLog // a concurrency-safe buffer
			logger := slog.New(slog.NewTextHandler(&buf, nil))
			m, err := dlm.New(asDriverNodes(memNodes(tc.nodes)), dlm.WithLogger(logger))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			for i, limit := range tc.limits {
				for range 2 {
					if _, err := m.Semaphore(fmt.Sprintf("encoders-%d", i), limit, tc.opts...); err != nil {
						t.Fatalf("Semaphore(limit %d) = %v", limit, err)
					}
				}
			}
			out := buf.String()
			if got := strings.Count(out, warning); got != tc.want {
				t.Fatalf("log has %d warnings %q; want %d:\n%s", got, warning, tc.want, out)
			}
			if tc.want > 0 {
				for _, s := range []string{"level=WARN", `semaphore=encoders-0`, fmt.Sprintf("nodes=%d", tc.nodes), fmt.Sprintf("quorum=%d", tc.nodes)} {
					if !strings.Contains(out, s) {
						t.Errorf("warning %q does not say %s", out, s)
					}
				}
			}
		})
	}
}

// standaloneLock matches "lock" as a word of its own: the noun of a mutex,
// not part of "unlock" or of a node's name.
var standaloneLock = regexp.MustCompile(`\block\b`)

// ownWords returns err's text without the texts of the sentinels it may
// wrap, which are one for every kind of lock ("dlm: lock lost").
func ownWords(err error) string {
	s := err.Error()
	for _, sentinel := range []error{dlm.ErrNotObtained, dlm.ErrLockLost, dlm.ErrNotHeld} {
		s = strings.ReplaceAll(s, sentinel.Error(), "")
	}
	return s
}

// TestSemaphoreErrorsSayPermit checks that the errors of a semaphore's
// permits, from TryAcquire, Acquire, Extend and Unlock, name a permit and
// never call it a lock, but in the text of the sentinel they wrap.
func TestSemaphoreErrorsSayPermit(t *testing.T) {
	t.Parallel()
	nodes := memNodes(1)
	m, err := dlm.New(asDriverNodes(nodes), dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s, err := m.Semaphore("encoders", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	acquire := func() *dlm.Lock {
		t.Helper()
		p, err := s.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("TryAcquire = %v", err)
		}
		return p
	}
	check := func(what string, err, target error) {
		t.Helper()
		switch {
		case target == nil && err == nil:
		case target == nil || !errors.Is(err, target):
			t.Errorf("%s = %v; want %v", what, err, target)
		case !strings.Contains(err.Error(), `permit "encoders"`) || standaloneLock.MatchString(ownWords(err)):
			t.Errorf("%s = %q; want it to name permit \"encoders\", and to call it a lock only in a sentinel's text", what, err)
		}
	}

	held := acquire()
	_, err = s.TryAcquire(ctx)
	check("TryAcquire while full", err, dlm.ErrNotObtained)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Acquire(short)
	cancel()
	check("Acquire while full, until its context ends", err, context.DeadlineExceeded)
	_, err = s.Acquire(ctx, dlm.WithRetry(2, nil))
	check("Acquire while full, out of retries", err, dlm.ErrNotObtained)
	check("Unlock", held.Unlock(ctx), nil)
	check("second Unlock", held.Unlock(ctx), dlm.ErrNotHeld)
	check("Extend after Unlock", held.Extend(ctx, time.Minute), dlm.ErrNotHeld)

	lost := acquire()
	nodes[0].FlushAll()
	check("Extend of a permit the node forgot", lost.Extend(ctx, time.Minute), dlm.ErrLockLost)
	check("Unlock of a lost permit", lost.Unlock(ctx), dlm.ErrLockLost)

	forgotten := acquire()
	nodes[0].FlushAll()
	check("Unlock of a permit the node forgot", forgotten.Unlock(ctx), dlm.ErrLockLost)

	expired := acquire()
	if err := expired.Extend(ctx, 20*time.Millisecond); err != nil {
		t.Fatalf("Extend = %v", err)
	}
	<-expired.Lost()
	check("Extend after the validity ended", expired.Extend(ctx, time.Minute), dlm.ErrLockLost)
	check("Unlock after the validity ended", expired.Unlock(ctx), dlm.ErrLockLost)
}
