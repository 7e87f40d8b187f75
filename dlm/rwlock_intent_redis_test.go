package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestWriterIntentRenewedByEveryAttempt checks, on real redis-servers, that
// a writer waiting behind a reader keeps new readers out for as long as it
// waits, whatever path its attempts take: its first attempt, which goes by
// SET NX (its manager has not seen the key contended), and the attempts
// that come after its manager stopped treating the key as contended (a
// retry delay longer than contendedFor, shortened here from 10 s), each
// record or renew its intent. Its intent lives its TTL from its latest
// attempt, so the retry delay and a node timeout are kept below the TTL; a
// reader refused more than two TTLs after the writer's second attempt was
// refused by an intent some later attempt renewed.
//
// The node timeouts are stretched to the pace measured on the run, and the
// writer's TTL with them. A probe that no quorum answered in time proves
// nothing either way: it is skipped, and counted.
func TestWriterIntentRenewedByEveryAttempt(t *testing.T) {
	t.Parallel()
	srvs, nodes := startNodes(t, 3)
	const (
		contended = 50 * time.Millisecond
		retry     = 600 * time.Millisecond // waits of 300–600 ms, each longer than contended
	)
	nt := pacedNodeTimeout(t, srvs[0], 100*time.Millisecond) // the writer's, derived from its TTL on a quiet machine
	var (
		ttl   = max(2*time.Second, 2*(retry+nt)) // the writer's: its intent outlives each wait and attempt
		watch = 2*ttl + time.Second              // the intent of one attempt would have lapsed
	)
	t.Logf("writer's TTL %v, node timeout %v", ttl, nt)
	ctx := context.Background()
	newManager := func(opts ...dlm.ManagerOption) *dlm.Manager {
		m, err := dlm.New(nodes, append([]dlm.ManagerOption{dlm.WithNodeTimeout(pacedNodeTimeout(t, srvs[0], derivedNodeTimeout))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	readers, probe := newManager(), newManager()
	r, err := readers.RLock(ctx, "doc", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	defer r.Unlock(ctx)

	// errNoQuorum marks a probe that no quorum of nodes answered in time.
	errNoQuorum := errors.New("no quorum answered the probe in time")
	// probeReader tries a new read lock, which the writer's intent must
	// refuse, and releases it at once if it was granted.
	probeReader := func() error {
		l, err := probe.TryRLock(ctx, "doc")
		switch {
		case err == nil:
			l.Unlock(ctx)
			return errors.New("a new reader got in")
		case errors.Is(err, dlm.ErrNotObtained):
			return nil
		case errors.Is(err, dlm.ErrUnavailable):
			return fmt.Errorf("%w: %w", errNoQuorum, err)
		}
		return err
	}
	var (
		mu       sync.Mutex
		attempts int
		atFirst  error = errors.New("no attempt seen")
	)
	hook := hookFunc(func(e *dlm.Event) {
		if e.Kind != dlm.EventAttempt || e.Key != "doc" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			// On the writer's goroutine: its next attempt waits for
			// this. A probe no quorum answered is made again, while the
			// first attempt's intent lives.
			for atFirst = probeReader(); errors.Is(atFirst, errNoQuorum) && time.Since(e.Start) < ttl/2; atFirst = probeReader() {
			}
		}
	})
	writers := newManager(dlm.WithHook(hook), dlm.WithNodeTimeout(nt))
	dlm.SetContendedFor(writers, contended)
	// Every node runs the acquire script once: the writer's manager sends
	// SET NX from then on.
	if err := lockUnlock(ctx, writers, "warm-up"); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		l, err := writers.Lock(wctx, "doc", dlm.WithTTL(ttl), dlm.WithRetry(0, dlm.FixedBackoff(retry)))
		if err == nil {
			l.Unlock(ctx)
			err = errors.New("the writer got the lock while a reader held it")
		}
		done <- err
	}()
	// The first attempt is probed by the hook; the others from here, from
	// the second on, which the writer makes at once when the nodes'
	// subscriptions are confirmed.
	poll(t, srvs[0], "the writer's second attempt", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts > 1
	})
	started := time.Now()
	var refused, skipped int
	var lastRefused time.Duration
	for time.Since(started) < watch {
		switch err := probeReader(); {
		case errors.Is(err, errNoQuorum):
			skipped++
		case err != nil:
			mu.Lock()
			n := attempts
			mu.Unlock()
			t.Errorf("TryRLock %v after the writer's second attempt (%d attempts made): %v; want ErrNotObtained", time.Since(started).Round(time.Millisecond), n, err)
		default:
			refused++
			lastRefused = time.Since(started)
		}
		if t.Failed() {
			break
		}
		time.Sleep(20 * time.Millisecond) // the pace of the probes, not a timing assertion
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("writer's Lock = %v; want it still waiting until its context ended", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if atFirst != nil {
		t.Errorf("TryRLock right after the writer's first attempt: %v; want ErrNotObtained", atFirst)
	}
	if lastRefused <= 2*ttl {
		t.Errorf("the last reader refused came %v after the writer's second attempt (%d refused, %d probes no quorum answered); want one after %v, when only a renewed intent refuses it",
			lastRefused.Round(time.Millisecond), refused, skipped, 2*ttl)
	}
	if attempts < 4 {
		t.Errorf("the writer made %d attempts in %v; want at least 4, most of them more than %v apart", attempts, watch, contended)
	}
	t.Logf("%d new readers refused (%d probes no quorum answered in time) while the writer made %d attempts", refused, skipped, attempts)
}

// TestWaitingWriterKeepsIntentThroughFailedAttempt checks, on real
// redis-servers, that the attempt of a waiting writer that one node granted
// but a quorum refused leaves the writer's intent on that node: the
// attempt's release deletes its key there, not the intent. A release of
// the readers that has reached some nodes only leaves them free, and the
// writer's attempts take them and let them go again; if those took the
// intent with them, a new reader could gather a quorum of such nodes and
// overtake the waiting writer.
func TestWaitingWriterKeepsIntentThroughFailedAttempt(t *testing.T) {
	t.Parallel()
	servers, nodes := startNodes(t, 3)
	ctx := context.Background()
	rkey := dlm.DefaultKeyPrefix + "{doc}"
	r, err := rwManager(t, nodes).RLock(ctx, "doc", dlm.WithTTL(time.Minute))
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	defer r.Unlock(ctx)
	// RLock returns at a quorum: its request to the third node may still
	// be under way, and the writer's first attempt would take that node's
	// free key rather than leave its intent there.
	poll(t, servers[0], "reader's lease on every node", func() bool {
		for _, s := range servers {
			n, err := s.Do("EXISTS", rkey+script.ReadersSuffix)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(1) {
				return false
			}
		}
		return true
	})

	attempted := make(chan struct{}, 64)
	hook := hookFunc(func(e *dlm.Event) {
		if e.Kind == dlm.EventAttempt && e.Key == "doc" {
			select {
			case attempted <- struct{}{}:
			default:
			}
		}
	})
	// A minute's TTL: no intent lapses during the test.
	writers := rwManager(t, nodes, dlm.WithHook(hook), dlm.WithTTL(time.Minute))
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l, err := writers.Lock(wctx, "doc"); err == nil {
			l.Unlock(ctx)
		}
	}()
	defer func() { cancel(); <-done }()
	// Refused by the reader everywhere, the writer records its intent on
	// every node. (Its first attempt stops at two refusals, so the third
	// node may run it after the attempt has ended.)
	poll(t, servers[0], "intent of the waiting writer on every node", func() bool {
		for _, s := range servers {
			n, err := s.Do("EXISTS", script.IntentKey(rkey))
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(1) {
				return false
			}
		}
		return true
	})

	// The reader's release reaches node 0 alone.
	if _, err := servers[0].Do("DEL", rkey, rkey+script.ReadersSuffix); err != nil {
		t.Fatal(err)
	}
	for len(attempted) > 0 {
		<-attempted
	}
	for range 3 { // attempts sent after the DEL, which node 0 granted
		<-attempted
	}
	for i, s := range servers {
		n, err := s.Do("EXISTS", script.IntentKey(rkey))
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(1) {
			t.Errorf("node %d: the waiting writer's intent is gone after its failed attempts; want it kept while the writer waits", i)
		}
	}
	// The writer goes on attempting, each attempt granted by node 0 and
	// released: on a loaded machine the next may be under way as the key
	// is read. A failed attempt's key left behind would stay for its TTL,
	// a minute.
	poll(t, servers[0], "moment node 0's lock key is released after the writer's failed attempts", func() bool {
		v, err := servers[0].Do("GET", rkey)
		if err != nil {
			t.Fatal(err)
		}
		return v == nil
	})
}
