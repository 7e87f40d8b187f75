package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/memlock"
)

// replyError is an error reply as client libraries type it (go-redis'
// proto.RedisError is a string too): its text is the node's.
type replyError string

func (e replyError) Error() string { return string(e) }

// opaqueError says nothing of what it wraps: only errors.As reaches the
// node's text.
type opaqueError struct{ inner error }

func (e *opaqueError) Error() string { return "opaque failure" }
func (e *opaqueError) Unwrap() error { return e.inner }

// bothError wraps two errors, as driver.ContextError's does.
type bothError struct{ a, b error }

func (e *bothError) Error() string   { return e.a.Error() + ": " + e.b.Error() }
func (e *bothError) Unwrap() []error { return []error{e.a, e.b} }

// echoNode fails every script with the error fail makes of the request's
// arguments, and records the arguments. It says a run_id of its own, so
// that the manager counts it.
type echoNode struct {
	addr, runID string
	fail        func(args []string) error

	mu   sync.Mutex
	args []string
}

func (n *echoNode) Addr() string { return n.addr }
func (n *echoNode) Close() error { return nil }

func (n *echoNode) Eval(_ context.Context, s *driver.Script, keys, args []string) (any, error) {
	if len(keys) == 0 && len(args) == 0 {
		return n.runID, nil // the run_id script
	}
	n.mu.Lock()
	n.args = append(n.args, args...)
	n.mu.Unlock()
	return nil, n.fail(args)
}

// hiddenArgs returns the arguments nodes were sent that must never show:
// all but the scripts' numbers and flags, with each part of an election's
// "SECRET:VALUE" too.
func hiddenArgs(nodes ...*echoNode) []string {
	var out []string
	for _, n := range nodes {
		n.mu.Lock()
		for _, a := range n.args {
			for _, p := range append([]string{a}, strings.Split(a, ":")...) {
				if _, err := strconv.ParseInt(p, 10, 64); err != nil && len(p) >= 8 {
					out = append(out, p)
				}
			}
		}
		n.mu.Unlock()
	}
	return out
}

// quoted quotes args as Redis' "with args beginning with:" does, cutting
// the list at 128 bytes, an argument in the middle.
func quoted(args []string) string {
	var b strings.Builder
	for _, a := range args {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	return b.String()
}

// first returns the first of args, or "" for none (the status script).
func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// levelHandlers logs every record to a text and a JSON handler at each
// level from Debug to Error, all into one buffer.
type levelHandlers []slog.Handler

func newLevelHandlers(w *secretLog) levelHandlers {
	var hs levelHandlers
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		o := &slog.HandlerOptions{Level: l}
		hs = append(hs, slog.NewTextHandler(w, o), slog.NewJSONHandler(w, o))
	}
	return hs
}

func (hs levelHandlers) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range hs {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (hs levelHandlers) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range hs {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (hs levelHandlers) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(levelHandlers, len(hs))
	for i, h := range hs {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (hs levelHandlers) WithGroup(name string) slog.Handler {
	out := make(levelHandlers, len(hs))
	for i, h := range hs {
		out[i] = h.WithGroup(name)
	}
	return out
}

// TestNodeErrorHidesScriptArgs fails one node of three, then two, with
// errors that quote the request's arguments in every way a node's text or a
// client library can hold them, through every kind of lock memlock's nodes grant, and checks
// that no argument but the scripts' numbers and flags shows in a returned
// error (any string it reaches, through Unwrap, errors.As or its fields),
// an event, a Status or a log record at any level, while the node's own
// words stay and errors.Is and errors.As still classify the failure.
func TestNodeErrorHidesScriptArgs(t *testing.T) {
	t.Parallel()
	// walkStrings reads the events' times down to time.Local, which the
	// first log record initialises; initialise it before any subtest runs.
	_ = time.Local.String()
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	cases := []struct {
		name  string
		fail  func(args []string) error
		keep  string // the node's words that must stay
		class func(err error) bool
	}{
		{
			name: "renamed EVALSHA",
			fail: func(a []string) error {
				return fmt.Errorf("resp: %w", replyError("ERR unknown command 'evalsha', with args beginning with: '"+sha+"' '1' 'redlock:{k}' "+quoted(a)))
			},
			keep: "ERR unknown command 'evalsha', with args beginning with: [redacted]",
		},
		{
			name: "argument cut short",
			fail: func(a []string) error {
				return replyError("ERR unknown command 'eval', with args beginning with: " + quoted(append([]string{strings.Repeat("x", 100), "1"}, a...)))
			},
			keep: "ERR unknown command 'eval'",
		},
		{
			name: "refusal",
			fail: func(a []string) error {
				return fmt.Errorf("client: %w", replyError("NOPERM no permissions to access one of the keys used as arguments: "+strings.Join(a, " ")))
			},
			keep:  "NOPERM no permissions",
			class: func(err error) bool { return errors.Is(err, dlm.ErrPermission) },
		},
		{
			name: "timeout",
			fail: func(a []string) error {
				return &bothError{context.DeadlineExceeded, fmt.Errorf("read tcp: i/o timeout after %q", a)}
			},
			keep:  "i/o timeout",
			class: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		},
		{
			name: "network",
			fail: func(a []string) error {
				return fmt.Errorf("%w, sending %s", &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}, strings.Join(a, ","))
			},
			keep: "connection reset",
			class: func(err error) bool {
				var op *net.OpError
				var ne net.Error
				return errors.As(err, &op) && errors.As(err, &ne) && errors.Is(err, syscall.ECONNRESET)
			},
		},
		{
			name: "hostile text",
			fail: func(a []string) error {
				return replyError("ERR <" + strings.Join(a, "><") + "> x" + first(a) + "y\n" + first(a))
			},
			keep: "ERR <",
		},
		{
			name: "hidden behind a wrapper",
			fail: func(a []string) error { return &opaqueError{replyError("ERR " + first(a))} },
			keep: "opaque failure",
			class: func(err error) bool {
				var r replyError
				return !errors.As(err, &r)
			},
		},
		{
			name: "panic",
			fail: func(a []string) error { return &driver.PanicError{Client: "echo", Value: "boom " + first(a)} },
			keep: "client library panicked: boom",
			class: func(err error) bool {
				var p *driver.PanicError
				return errors.As(err, &p) && p.Client == "echo"
			},
		},
		{
			name:  "redirection",
			fail:  func(a []string) error { return replyError("MOVED 3999 127.0.0.1:7000 " + first(a)) },
			keep:  "MOVED 3999",
			class: func(err error) bool { return errors.Is(err, dlm.ErrInvalid) },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spy := &secretSpy{}
			log := &secretLog{}
			logger := slog.New(newLevelHandlers(log))
			echo := func(i int) *echoNode {
				return &echoNode{addr: fmt.Sprintf("echo-%d:6379", i), runID: fmt.Sprintf("%040d", i+1), fail: tc.fail}
			}
			newManager := func(nodes ...driver.Node) *dlm.Manager {
				m, err := dlm.New(nodes, dlm.WithTTL(5*time.Second), dlm.WithNodeTimeout(time.Second),
					dlm.WithLogger(logger), dlm.WithHook(spy), dlm.WithRetry(0, dlm.FixedBackoff(10*time.Millisecond)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			must := func(what string, err error) {
				t.Helper()
				spy.sawError(what, err)
				if err != nil {
					t.Fatalf("%s = %v; want success with one node of three failing", what, err)
				}
			}

			// One node of three fails: every kind of lock is granted, and
			// the failures go to the hook and the log only.
			e0 := echo(0)
			m := newManager(e0, memlock.NewNode("mem-1:6379"), memlock.NewNode("mem-2:6379"))
			l, err := m.Lock(ctx, "k", dlm.WithFencing())
			must("Lock", err)
			must("Extend", l.Extend(ctx, 5*time.Second))
			st, err := m.Status(ctx, "k")
			must("Status", err)
			spy.sawValue("Status", st)
			if st[0].Err == nil || !strings.Contains(st[0].Err.Error(), tc.keep) {
				t.Errorf("Status of the failing node: %v; want its error, with %q", st[0].Err, tc.keep)
			}
			must("Unlock", l.Unlock(ctx))
			l, err = m.RLock(ctx, "rw")
			must("RLock", err)
			must("RUnlock", l.Unlock(ctx))
			sem, err := m.Semaphore("sem", 1)
			must("Semaphore", err)
			l, err = sem.Acquire(ctx)
			must("Acquire", err)
			must("Release", l.Unlock(ctx))
			ld, err := campaign(ctx, m, "election", "Vq7-leader-value-0123")
			must("Campaign", err)
			must("Resign", ld.Resign(ctx))

			// Two nodes of three fail: the error returned carries their
			// failures.
			e1, e2 := echo(1), echo(2)
			m2 := newManager(e1, e2, memlock.NewNode("mem-3:6379"))
			_, err = m2.TryLock(ctx, "k")
			spy.sawError("TryLock", err)
			var nerr *dlm.NodeError
			switch {
			case err == nil:
				t.Fatal("TryLock with two nodes of three failing succeeded")
			case !errors.Is(err, dlm.ErrUnavailable):
				t.Errorf("TryLock = %v; want ErrUnavailable", err)
			case !errors.As(err, &nerr) || nerr.Node != e1.addr:
				t.Errorf("TryLock = %v; want the first failing node's *NodeError", err)
			case !strings.Contains(nerr.Error(), tc.keep):
				t.Errorf("node error %q; want the node's words %q kept", nerr, tc.keep)
			case tc.class != nil && !tc.class(err):
				t.Errorf("TryLock = %v: the node's failure lost its class", err)
			case tc.class != nil && !tc.class(nerr):
				t.Errorf("node error %v: the failure lost its class", nerr)
			}

			hidden := hiddenArgs(e0, e1, e2)
			if len(hidden) < 5 {
				t.Fatalf("the failing nodes were sent %d arguments to hide; want the secrets of every kind of lock", len(hidden))
			}
			spy.mu.Lock()
			shown := append(strings.Split(log.String(), "\n"), spy.shown...)
			spy.mu.Unlock()
			shownArgs := 0
			for _, text := range shown {
				for _, a := range hidden {
					// Its start too, for the argument Redis cut short.
					if strings.Contains(text, a) || strings.Contains(text, a[:6]) {
						if shownArgs++; shownArgs <= 5 {
							t.Errorf("%q shows the argument %q, or its start", text, a)
						}
					}
				}
			}
			if shownArgs > 5 {
				t.Errorf("... and %d more", shownArgs-5)
			}
			if !strings.Contains(log.String(), tc.keep) {
				t.Errorf("the log has no record with the node's words %q:\n%s", tc.keep, log)
			}
		})
	}
}
