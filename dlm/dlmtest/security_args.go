package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// leaderValue is the value the suite campaigns with: an argument too, which
// a node's error must not show.
const leaderValue = "Vq7-leader-value-0123"

// testNodeErrorHidesScriptArgs runs every kind of lock through the driver
// on two servers with scripting renamed away and two that run scripts,
// recording every argument sent to the refusing ones, and checks that none
// but the scripts' numbers and flags (nor the start of one, as Redis cuts
// its quotation at 128 bytes) shows in an error returned, in any string an
// event, a returned error or a Status reaches, or in a log record at any
// level from Debug to Error, text or JSON; while the nodes' errors still say
// what they refused, and classify as before.
func (s *secure) testNodeErrorHidesScriptArgs(t *testing.T) {
	refusing := redistest.StartServers(t, 2, redistest.WithoutScripting())
	healthy := redistest.StartServers(t, 2)
	sent := &sentArgs{}
	open := func(srv *redistest.Server, record bool) driver.Node {
		n, err := dlm.OpenNode("redis+" + s.driver + "://" + srv.Addr())
		if err != nil {
			t.Fatalf("OpenNode(%s) = %v", srv.Addr(), err)
		}
		t.Cleanup(func() { n.Close() })
		if record {
			return &argsSpy{Node: n, sent: sent}
		}
		return n
	}
	r0, r1 := open(refusing[0], true), open(refusing[1], true)
	h0, h1 := open(healthy[0], false), open(healthy[1], false)

	log := &logSink{}
	logger := slog.New(newAllLevels(log))
	seen := &seenTexts{}
	newManager := func(nodes ...driver.Node) *dlm.Manager {
		m, err := dlm.New(nodes, dlm.WithTTL(s.ttl()), dlm.WithNodeTimeout(s.nodeTimeout),
			dlm.WithLogger(logger), dlm.WithHook(seen), dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
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
		seen.saw(what, err)
		if err != nil {
			t.Fatalf("%s = %v; want success with one node of three refusing scripts", what, err)
		}
	}

	// One node of three refuses: locks of every kind are granted, and its
	// errors go to the hook and the log.
	m := newManager(r0, h0, h1)
	l, err := m.Lock(ctx, "k", dlm.WithFencing())
	must("Lock", err)
	must("Extend", l.Extend(ctx, s.ttl()))
	st, err := m.Status(ctx, "k")
	must("Status", err)
	seen.saw("Status", st)
	if st[0].Err == nil || !strings.Contains(st[0].Err.Error(), "unknown command") {
		t.Errorf("Status on the refusing node: %v; want its error", st[0].Err)
	}
	must("Unlock", l.Unlock(ctx))

	fair := dlm.WithFairness(dlm.Fairness{})
	first, err := m.Lock(ctx, "fair", fair)
	must("Lock(fair)", err)
	next := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx, "fair", fair)
		if err == nil {
			err = l.Unlock(ctx)
		}
		next <- err
	}()
	time.Sleep(100 * time.Millisecond) // the second takes its place in line
	must("Unlock(fair)", first.Unlock(ctx))
	must("the waiter's Lock(fair) and Unlock", <-next)

	l, err = m.RLock(ctx, "rw")
	must("RLock", err)
	must("Unlock(rw)", l.Unlock(ctx))
	sem, err := m.Semaphore("sem", 1)
	must("Semaphore", err)
	l, err = sem.Acquire(ctx)
	must("Acquire", err)
	must("Unlock(permit)", l.Unlock(ctx))
	el, err := m.Election("election")
	must("Election", err)
	ld, err := el.Campaign(ctx, leaderValue)
	must("Campaign", err)
	must("Resign", ld.Resign(ctx))
	must("Do", m.Do(ctx, "job", func(ctx context.Context) error {
		l := dlm.LockFromContext(ctx)
		first := l.Until()
		for deadline := time.Now().Add(2 * s.ttl()); !l.Until().After(first); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("no auto-extension within %v (%v)", 2*s.ttl(), ctx.Err())
			}
		}
		return nil
	}))

	// Two nodes of three refuse: the error returned carries their errors.
	m2 := newManager(r0, r1, h0)
	_, err = m2.TryLock(ctx, "k")
	seen.saw("TryLock", err)
	var nerr *dlm.NodeError
	switch {
	case err == nil:
		t.Fatal("TryLock with two nodes of three refusing scripts succeeded")
	case !errors.Is(err, dlm.ErrUnavailable):
		t.Errorf("TryLock = %v; want ErrUnavailable", err)
	case !errors.As(err, &nerr) || nerr.Node != r0.Addr():
		t.Errorf("TryLock = %v; want the *NodeError of %s", err, r0.Addr())
	case !strings.Contains(strings.ToLower(nerr.Error()), "unknown command 'evalsha', with args beginning with: [redacted]"):
		t.Errorf("node error %q; want the server's words, its quotation of the arguments removed", nerr)
	}
	st, err = m2.Status(ctx, "k")
	must("Status", err)
	seen.saw("Status", st)

	hidden := sent.hidden()
	if len(hidden) < 5 {
		t.Fatalf("%d arguments to hide were sent to the refusing nodes; want the secrets of every kind of lock", len(hidden))
	}
	if !strings.Contains(strings.ToLower(log.String()), "unknown command 'evalsha'") {
		t.Errorf("no log record of the refusing node's error:\n%s", log)
	}
	texts := append(strings.Split(log.String(), "\n"), seen.all()...)
	shownArgs := 0
	for _, text := range texts {
		for _, a := range hidden {
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
}

// sentArgs records the arguments of the scripts sent to nodes.
type sentArgs struct {
	mu   sync.Mutex
	args []string
}

// hidden returns the arguments that must not show: all but numbers and
// those shorter than 8 bytes (the scripts' flags), and each part of an
// election's "SECRET:VALUE".
func (s *sentArgs) hidden() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.args {
		for _, p := range append([]string{a}, strings.Split(a, ":")...) {
			if _, err := strconv.ParseInt(p, 10, 64); err != nil && len(p) >= 8 {
				out = append(out, p)
			}
		}
	}
	return out
}

// argsSpy passes scripts to its node and records their arguments. It is a
// driver.Node only: the node's optional interfaces are not used through it,
// as with an adapter of a user's that wraps another.
type argsSpy struct {
	driver.Node
	sent *sentArgs
}

func (n *argsSpy) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	n.sent.mu.Lock()
	n.sent.args = append(n.sent.args, args...)
	n.sent.mu.Unlock()
	return n.Node.Eval(ctx, s, keys, args)
}

// seenTexts is a Hook that records every string an event reaches, and of
// whatever else it is shown.
type seenTexts struct {
	mu    sync.Mutex
	texts []string
}

func (s *seenTexts) OnEvent(_ context.Context, e *dlm.Event) {
	// The event is valid only during the call: read it now.
	s.saw("event "+e.Kind.String(), e)
}

// saw records every string v reaches, through pointers, interfaces,
// structs (unexported fields too), slices and maps, and the text of every
// error on the way.
func (s *seenTexts) saw(where string, v any) {
	var texts []string
	walkStrings(reflect.ValueOf(v), map[uintptr]bool{}, func(str string) { texts = append(texts, where+": "+str) })
	s.mu.Lock()
	s.texts = append(s.texts, texts...)
	s.mu.Unlock()
}

func (s *seenTexts) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

var (
	errorType    = reflect.TypeFor[error]()
	locationType = reflect.TypeFor[time.Location]()
)

// walkStrings calls f with every string v reaches, and with the text of
// every error.
func walkStrings(v reflect.Value, seen map[uintptr]bool, f func(string)) {
	if !v.IsValid() || v.Type() == locationType {
		// A time's location holds no secret, and time.Local is
		// initialised lazily, by whichever goroutine needs it first.
		return
	}
	// An interface is read through its dynamic value, below.
	if v.Kind() != reflect.Interface && v.Type().Implements(errorType) && v.CanInterface() && (v.Kind() != reflect.Pointer || !v.IsNil()) {
		f(v.Interface().(error).Error())
	}
	switch v.Kind() {
	case reflect.String:
		f(v.String())
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		walkStrings(v.Elem(), seen, f)
	case reflect.Interface:
		walkStrings(v.Elem(), seen, f)
	case reflect.Struct:
		for i := range v.NumField() {
			walkStrings(v.Field(i), seen, f)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			f(fmt.Sprintf("%s", v))
			return
		}
		for i := range v.Len() {
			walkStrings(v.Index(i), seen, f)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkStrings(it.Key(), seen, f)
			walkStrings(it.Value(), seen, f)
		}
	}
}

// allLevels is a handler that writes every record to a text and a JSON
// handler at each level from Debug to Error, all on one writer: what a
// program logging at any of them would show.
type allLevels []slog.Handler

func newAllLevels(w *logSink) allLevels {
	var hs allLevels
	for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
		o := &slog.HandlerOptions{Level: l}
		hs = append(hs, slog.NewTextHandler(w, o), slog.NewJSONHandler(w, o))
	}
	return hs
}

func (hs allLevels) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range hs {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (hs allLevels) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range hs {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (hs allLevels) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(allLevels, len(hs))
	for i, h := range hs {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (hs allLevels) WithGroup(name string) slog.Handler {
	out := make(allLevels, len(hs))
	for i, h := range hs {
		out[i] = h.WithGroup(name)
	}
	return out
}
