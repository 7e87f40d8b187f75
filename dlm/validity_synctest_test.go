//go:build go1.25

// The validity and the loss signal after failed extensions, slow hooks and
// loggers, on testing/synctest's fake clock with fake nodes (see
// synctest_test.go for the build constraint and its go:debug line).

package dlm

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// keyExpiries returns when each fake node expires key; the zero time where
// it does not hold it.
func keyExpiries(fs []*fakeNode, key string) []time.Time {
	out := make([]time.Time, len(fs))
	for i, f := range fs {
		if _, exp, ok := f.get(key); ok {
			out[i] = exp
		}
	}
	return out
}

// quorumExpiry is the moment by which a quorum of fs no longer holds key:
// the quorum-th latest expiry.
func quorumExpiry(fs []*fakeNode, key string) time.Time {
	exps := keyExpiries(fs, key)
	q := quorum(len(fs))
	// Sort descending by hand: few nodes.
	for i := range exps {
		for j := i + 1; j < len(exps); j++ {
			if exps[j].After(exps[i]) {
				exps[i], exps[j] = exps[j], exps[i]
			}
		}
	}
	return exps[q-1]
}

// TestFailedExtendShortensValidity checks the invariant of Extend: after an
// extension that fails while the nodes applied its TTL (replies lost, or a
// quorum that answered too late), Until is no later than start + ttl −
// drift, and Lost closes at once when that leaves less than the loss guard.
// Otherwise the holder keeps acting on the old validity while the nodes let
// another client in: two holders. The real-Redis form is in
// lifetime_redis_test.go.
func TestFailedExtendShortensValidity(t *testing.T) {
	t.Parallel()
	const ttl = 10 * time.Second
	t.Run("replies lost", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			fs := newFakes(5)
			m := newManager(t, fs, WithTTL(ttl))
			l, err := m.TryLock(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			lost := l.Lost()
			for _, f := range fs {
				f.inject(loseReply, 0)
			}
			const short = 500 * time.Millisecond
			start := time.Now()
			if err := l.Extend(context.Background(), short); err == nil {
				t.Fatal("Extend with every reply lost = nil; want an error")
			}
			want := start.Add(short - m.cfg.drift(short))
			if got := l.Until(); got.After(want) {
				t.Errorf("Until() after the failed Extend(%v) = start+%v; want at most start+%v", short, got.Sub(start), want.Sub(start))
			}
			if exp := quorumExpiry(fs, rkey("k")); l.Until().After(exp) {
				t.Errorf("Until() = start+%v, after a quorum's keys expire at start+%v", l.Until().Sub(start), exp.Sub(start))
			}
			if got, limit := lostAt(l, start), short-m.cfg.drift(short)-m.cfg.lossGuard(); got > limit || !isClosed(lost) {
				t.Errorf("Lost() closed at start+%v; want by start+%v", got, limit)
			}
		})
	})
	t.Run("validity used up", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			fs := newFakes(5)
			m := newManager(t, fs, WithTTL(ttl), WithNodeTimeout(time.Second))
			l, err := m.TryLock(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			const short = 50 * time.Millisecond
			for _, f := range fs {
				f.inject(healthy, 60*time.Millisecond) // a quorum says yes, too late
			}
			err = l.Extend(context.Background(), short)
			var qerr *QuorumError
			if !errors.As(err, &qerr) || !qerr.Expired || !errors.Is(err, ErrLockLost) {
				t.Fatalf("Extend(%v) answered after 60ms = %v; want a QuorumError with Expired, wrapping ErrLockLost", short, err)
			}
			if !isClosed(l.Lost()) {
				t.Error("Lost() open after an extension that used up the validity; want it closed, as the error says")
			}
			if got := l.Until(); got.After(time.Now()) {
				t.Errorf("Until() = now+%v after an extension that used up the validity; want it in the past", time.Until(got))
			}
		})
	})
	t.Run("MaxHold", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			const ttl, maxHold = time.Second, 800 * time.Millisecond
			fs := newFakes(5)
			m := newManager(t, fs, WithTTL(ttl))
			start := time.Now()
			l, err := m.Lock(context.Background(), "k", WithAutoExtend(AutoExtend{MaxHold: maxHold}))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock(context.Background())
			for _, f := range fs {
				f.inject(loseReply, 0) // the last, shortened, extension is applied but not confirmed
			}
			at := lostAt(l, start)
			if got := l.Until(); got.After(start.Add(maxHold)) {
				t.Errorf("Until() = start+%v after MaxHold's extension failed; the nodes expire the lock at start+%v", got.Sub(start), maxHold)
			}
			if limit := maxHold - m.cfg.lossGuard(); at > limit {
				t.Errorf("Lost() closed at start+%v; want by start+%v, a guard before MaxHold, when the nodes let go", at, limit)
			}
			if countAll(fs, "extend") == 0 {
				t.Error("no extension was sent")
			}
		})
	})
	t.Run("Resume", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			fs := newFakes(5)
			m1 := newManager(t, fs, WithTTL(ttl))
			m2 := newManager(t, fs, WithTTL(ttl))
			orig, err := m1.TryLock(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			l, err := m2.Resume(context.Background(), orig.Handle())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				f.inject(loseReply, 0)
			}
			const short = 300 * time.Millisecond
			start := time.Now()
			if err := l.Extend(context.Background(), short); err == nil {
				t.Fatal("Extend with every reply lost = nil; want an error")
			}
			if got, want := l.Until(), start.Add(short-m2.cfg.drift(short)); got.After(want) {
				t.Errorf("Until() of the resumed lock after the failed Extend = start+%v; want at most start+%v", got.Sub(start), want.Sub(start))
			}
			if got, limit := lostAt(l, start), short-m2.cfg.drift(short)-m2.cfg.lossGuard(); got > limit {
				t.Errorf("Lost() of the resumed lock closed at start+%v; want by start+%v", got, limit)
			}
		})
	})
}

// slowHook takes 30ms over every loss it observes.
type slowHook struct{}

func (slowHook) OnEvent(_ context.Context, e *Event) {
	if e.Kind == EventLost {
		time.Sleep(30 * time.Millisecond)
	}
}

// slowHandler is a slog handler that takes 30ms over every record.
type slowHandler struct{}

func (slowHandler) Enabled(context.Context, slog.Level) bool { return true }
func (slowHandler) Handle(context.Context, slog.Record) error {
	time.Sleep(30 * time.Millisecond)
	return nil
}
func (h slowHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h slowHandler) WithGroup(string) slog.Handler      { return h }

// slowEnabled is a slog handler whose Enabled takes 30ms over the levels of
// failures and losses (Warn and above), and that drops every record.
type slowEnabled struct{}

func (slowEnabled) Enabled(_ context.Context, l slog.Level) bool {
	if l >= slog.LevelWarn {
		time.Sleep(30 * time.Millisecond)
	}
	return false
}
func (slowEnabled) Handle(context.Context, slog.Record) error { return nil }
func (h slowEnabled) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h slowEnabled) WithGroup(string) slog.Handler           { return h }

// TestLostNotDelayedBySlowHook checks that a Hook or slog handler that takes
// 30ms over the loss event, in Handle or in Enabled, delays neither Lost nor
// the cancellation of Do's context: both come exactly a loss guard before
// Until.
func TestLostNotDelayedBySlowHook(t *testing.T) {
	t.Parallel()
	const ttl = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"hook", WithHook(slowHook{})},
		{"logger", WithLogger(slog.New(slowHandler{}))},
		{"logger Enabled", WithLogger(slog.New(slowEnabled{}))},
	} {
		t.Run(tc.name+"/Lost", func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m := newManager(t, fs, WithTTL(ttl), tc.opt)
				start := time.Now()
				l, err := m.TryLock(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				want := l.Until().Sub(start) - m.cfg.lossGuard()
				if got := lostAt(l, start); got != want {
					t.Errorf("Lost() closed at start+%v; want start+%v, a guard before Until", got, want)
				}
			})
		})
		t.Run(tc.name+"/Do", func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newFakes(5)
				m := newManager(t, fs, WithTTL(ttl), tc.opt)
				start := time.Now()
				var got, want time.Duration
				m.Do(context.Background(), "k", func(ctx context.Context) error {
					l := LockFromContext(ctx)
					for _, f := range fs {
						f.inject(refuse, 0) // no extension succeeds
					}
					want = l.Until().Sub(start) - m.cfg.lossGuard()
					<-ctx.Done()
					got = time.Since(start)
					return nil
				})
				if got != want {
					t.Errorf("Do's context cancelled at start+%v; want start+%v, a guard before Until", got, want)
				}
			})
		})
	}
}

// TestErrorMessages checks the errors a user reads: a loss found after the
// validity ended says how long ago, without a negative duration, and does
// not speak of extensions that were never asked for; Do's error carries the
// last extension's QuorumError.
func TestErrorMessages(t *testing.T) {
	t.Parallel()
	t.Run("ended ago", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			fs := newFakes(3)
			m := newManager(t, fs, WithTTL(100*time.Millisecond))
			l, err := m.TryLock(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(600 * time.Millisecond)
			<-l.Lost() // asked for only now: the loss is found past the validity
			err = l.Unlock(context.Background())
			if !errors.Is(err, ErrLockLost) {
				t.Fatalf("Unlock() 600ms after a 100ms TTL = %v; want ErrLockLost", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "ended") || !strings.Contains(msg, "ago") || strings.Contains(msg, "in -") || strings.Contains(msg, "extension") {
				t.Errorf("Unlock() = %q; want how long ago the validity ended, no negative duration, no word of extensions never asked for", msg)
			}
		})
	})
	t.Run("lost after failed extensions", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			fs := newFakes(3)
			m := newManager(t, fs, WithTTL(100*time.Millisecond))
			err := m.Do(context.Background(), "k", func(ctx context.Context) error {
				for _, f := range fs {
					f.inject(refuse, 0)
				}
				<-ctx.Done()
				var qerr *QuorumError
				if cause := context.Cause(ctx); !errors.As(cause, &qerr) || qerr.Op != opExtend {
					t.Errorf("context.Cause(fn's ctx) = %v; want it to carry the extension's QuorumError", cause)
				}
				return nil
			})
			var qerr *QuorumError
			if !errors.Is(err, ErrLockLost) || !errors.As(err, &qerr) || qerr.Op != opExtend || len(nodeErrors(qerr)) < 2 {
				t.Errorf("Do() with every extension refused = %v; want ErrLockLost and the last extension's QuorumError with its node errors", err)
			}
			if strings.Contains(err.Error(), "in -") {
				t.Errorf("Do() = %q; want no negative duration", err)
			}
		})
	})
}
