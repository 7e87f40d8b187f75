package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// secretsPassword is the servers' password in TestSecretsNeverShown.
const secretsPassword = "Sh0wn-N0where/#@%"

// TestSecretsNeverShown runs locks through their whole life on three real
// redis-servers — obtained, refused to a rival, extended by hand and in the
// background, lost to expiry and to a vanished key, unlocked twice, handed
// over and resumed, inspected, refused by failing nodes — with a Debug
// logger and a hook on every manager. No lock secret, of any attempt, may
// appear in a log record, in an event (any string it reaches), in a
// published wake-up message or in any error returned (any string it
// reaches); nor may the servers' password.
func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3, redistest.WithArgs("--requirepass", secretsPassword))
	sp := &secretSpy{}
	log := &secretLog{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	newManager := func() *dlm.Manager {
		nodes := make([]driver.Node, len(srvs))
		for i, s := range srvs {
			cfg, err := driver.ParseURL("redis://:" + url.QueryEscape(secretsPassword) + "@" + s.Addr() + "?dial_timeout=1s")
			if err != nil {
				t.Fatal(err)
			}
			n := resp.NewNode(cfg)
			t.Cleanup(func() { n.Close() })
			nodes[i] = &spyNode{Node: n, spy: sp}
		}
		m, err := dlm.New(nodes, dlm.WithTTL(2*time.Second), dlm.WithNodeTimeout(500*time.Millisecond),
			dlm.WithLogger(logger), dlm.WithHook(sp), dlm.WithRetry(0, dlm.FixedBackoff(20*time.Millisecond)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	m, rival := newManager(), newManager()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var handles []dlm.Handle
	obtained := func(what string) func(*dlm.Lock, error) *dlm.Lock {
		return func(l *dlm.Lock, err error) *dlm.Lock {
			t.Helper()
			if err != nil {
				t.Fatalf("%s = %v; want a lock", what, err)
			}
			handles = append(handles, l.Handle())
			return l
		}
	}
	failed := func(what string, err error, want error) {
		t.Helper()
		sp.sawError(what, err)
		if !errors.Is(err, want) {
			t.Errorf("%s = %v; want %v", what, err, want)
		}
	}
	// Node 2 answers every script on "k" with an error reply.
	if _, err := srvs[2].Do("HSET", "redlock:{k}", "f", "v"); err != nil {
		t.Fatal(err)
	}

	l := obtained("Lock(k) WithFencing")(m.Lock(ctx, "k", dlm.WithFencing()))
	_, err := rival.TryLock(ctx, "k")
	failed("rival's TryLock(k)", err, dlm.ErrNotObtained)
	if err := l.Extend(ctx, 2*time.Second); err != nil {
		t.Errorf("Extend(k) = %v", err)
	}
	sts, err := m.Status(ctx, "k")
	if err != nil {
		t.Fatalf("Status(k) = %v", err)
	}
	sp.sawValue("Status(k)", sts)

	// A waiter of the rival's, which gets the lock when l is released.
	type waited struct {
		h   dlm.Handle
		err error
	}
	done := make(chan waited, 1)
	attempts := sp.count(dlm.EventAttempt)
	go func() {
		w, err := rival.Lock(ctx, "k")
		if err != nil {
			done <- waited{err: err}
			return
		}
		done <- waited{w.Handle(), w.Unlock(ctx)}
	}()
	// The waiter's first attempt, then its subscription to the wake channel
	// on every node, so that the release is announced to it.
	for deadline := time.Now().Add(10 * time.Second); sp.count(dlm.EventAttempt) == attempts || sp.subscribed("redlock:{k}:wake") < len(srvs); {
		if time.Now().After(deadline) {
			t.Fatalf("10s on, the waiter has not made its first attempt and subscribed on every node (%d)", sp.subscribed("redlock:{k}:wake"))
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Errorf("Unlock(k) = %v", err)
	}
	if w := <-done; w.err != nil {
		t.Errorf("rival's Lock(k) after the release, then Unlock = %v", w.err)
	} else {
		handles = append(handles, w.h)
	}
	failed("second Unlock(k)", l.Unlock(ctx), dlm.ErrNotHeld)

	// Auto-extension, then the key vanishes under it: the next extension
	// finds it gone and the lock is lost.
	a := obtained("Lock(auto) WithAutoExtend")(m.Lock(ctx, "auto", dlm.WithTTL(600*time.Millisecond), dlm.WithAutoExtend(dlm.AutoExtend{})))
	first := a.Until()
	for deadline := time.Now().Add(5 * time.Second); !a.Until().After(first); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no auto-extension of auto within 5s")
		}
	}
	for _, s := range srvs {
		if _, err := s.Do("DEL", "redlock:{auto}"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-a.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("auto not reported lost within 5s of its key's deletion")
	}
	failed("Unlock(auto) after its loss", a.Unlock(ctx), dlm.ErrLockLost)

	// Lost to expiry.
	e := obtained("TryLock(expire)")(m.TryLock(ctx, "expire", dlm.WithTTL(600*time.Millisecond)))
	<-e.Lost()
	failed("Extend(expire) after expiry", e.Extend(ctx, time.Second), dlm.ErrLockLost)

	// Resumed: the rival resumes it from its Handle and releases it; the
	// first holder's copy is then lost.
	h := obtained("Lock(resume)")(m.Lock(ctx, "resume"))
	r := obtained("Resume(resume)")(rival.Resume(ctx, h.Handle()))
	if err := r.Extend(ctx, 2*time.Second); err != nil {
		t.Errorf("Extend of the resumed lock = %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Errorf("Unlock of the resumed lock = %v", err)
	}
	failed("Extend(resume) by the first holder after the Resume", h.Extend(ctx, time.Second), dlm.ErrLockLost)
	stale := h.Handle()
	stale.Until = time.Now().Add(-time.Second)
	_, err = rival.Resume(ctx, stale)
	failed("Resume of an expired Handle", err, dlm.ErrLockLost)

	err = m.Do(ctx, "do", func(ctx context.Context) error {
		handles = append(handles, dlm.LockFromContext(ctx).Handle())
		return nil
	})
	if err != nil {
		t.Errorf("Do(do) = %v", err)
	}

	// A node dies: attempts fail on two nodes of three.
	srvs[1].Kill()
	_, err = m.TryLock(ctx, "k")
	failed("TryLock(k) with node 1 dead and node 2 refusing", err, dlm.ErrUnavailable)
	sts, err = m.Status(ctx, "k")
	if err != nil {
		t.Fatalf("Status(k) = %v", err)
	}
	sp.sawValue("Status(k)", sts)

	if err := m.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := rival.Close(); err != nil {
		t.Errorf("rival's Close = %v", err)
	}
	sp.check(t, handles, log.String())
}

// spyNode passes calls to its node and tells its spy the secret of every
// script run (its first argument; each entry's of a batch) and what its subscriptions hear.
type spyNode struct {
	driver.Node
	spy *secretSpy
}

func (n *spyNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	switch {
	case s == script.ExtendBatch:
		// Groups of a kind, a TTL, a count, then each entry's secret.
		for rest := args; len(rest) >= script.BatchHeader; {
			count, err := strconv.Atoi(rest[2])
			if err != nil || count > len(rest)-script.BatchHeader {
				break
			}
			for _, secret := range rest[script.BatchHeader : script.BatchHeader+count] {
				n.spy.sawSecret(secret)
			}
			rest = rest[script.BatchHeader+count:]
		}
	case len(args) > 0:
		n.spy.sawSecret(args[0])
	}
	v, err := n.Node.Eval(ctx, s, keys, args)
	n.spy.sawValue("Eval's error", err)
	return v, err
}

func (n *spyNode) Subscribe(ctx context.Context, h driver.PubSubHandler) (driver.Subscription, error) {
	return n.Node.(driver.Subscriber).Subscribe(ctx, spyHandler{h, n.spy})
}

type spyHandler struct {
	driver.PubSubHandler
	spy *secretSpy
}

func (h spyHandler) Message(channel, payload string) {
	h.spy.mu.Lock()
	h.spy.messages++
	h.spy.mu.Unlock()
	h.spy.sawValue("message on "+channel, payload)
	h.PubSubHandler.Message(channel, payload)
}

func (h spyHandler) Subscribed(channel string) {
	h.spy.mu.Lock()
	if h.spy.subs == nil {
		h.spy.subs = map[string]int{}
	}
	h.spy.subs[channel]++
	h.spy.mu.Unlock()
	h.PubSubHandler.Subscribed(channel)
}

// secretSpy collects the secrets sent to the nodes and every string the
// library showed: in events, errors, statuses and messages. It is the
// managers' Hook.
type secretSpy struct {
	mu      sync.Mutex
	secrets map[string]bool
	shown   []string // "WHERE: TEXT"
	kinds   map[dlm.EventKind]int
	// subs counts the confirmed subscriptions by channel, messages the
	// messages heard.
	subs     map[string]int
	messages int
}

func (s *secretSpy) OnEvent(_ context.Context, e *dlm.Event) {
	s.mu.Lock()
	if s.kinds == nil {
		s.kinds = map[dlm.EventKind]int{}
	}
	s.kinds[e.Kind]++
	s.mu.Unlock()
	// The event is valid only during the call: read it now.
	s.sawValue("event "+e.Kind.String(), e)
}

// subscribed returns how many subscriptions to channels beginning with
// prefix the spy saw.
func (s *secretSpy) subscribed(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ch, c := range s.subs {
		if strings.HasPrefix(ch, prefix) {
			n += c
		}
	}
	return n
}

// count returns how many events of kind k the spy saw.
func (s *secretSpy) count(k dlm.EventKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kinds[k]
}

func (s *secretSpy) sawSecret(secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[string]bool{}
	}
	s.secrets[secret] = true
}

func (s *secretSpy) sawError(where string, err error) {
	s.sawValue(where, err)
}

// sawValue records every string v reaches, through pointers, interfaces,
// structs (unexported fields too), slices and maps, and the text of every
// error on the way.
func (s *secretSpy) sawValue(where string, v any) {
	var texts []string
	walkStrings(reflect.ValueOf(v), map[uintptr]bool{}, func(str string) { texts = append(texts, str) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, str := range texts {
		s.shown = append(s.shown, where+": "+str)
	}
}

var errorType = reflect.TypeFor[error]()

func walkStrings(v reflect.Value, seen map[uintptr]bool, f func(string)) {
	if !v.IsValid() {
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

// check fails t if a secret or the password shows in what the spy saw or in
// log, and checks that the spy saw what the test says it did: every
// Handle's secret among the secrets sent, and every kind of event.
func (s *secretSpy) check(t *testing.T, handles []dlm.Handle, log string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range handles {
		if !s.secrets[h.Secret] {
			t.Errorf("the secret of Handle %+v was never sent to a node; the spy misses scripts", h.Keys)
		}
	}
	if s.messages == 0 {
		t.Error("no message heard on a wake channel; the test does not cover them")
	}
	for k := dlm.EventAttempt; k <= dlm.EventNodeError; k++ {
		if s.kinds[k] == 0 {
			t.Errorf("no %s event; the test does not cover it", k)
		}
	}
	secrets := []string{secretsPassword, url.QueryEscape(secretsPassword), url.PathEscape(secretsPassword)}
	for tok := range s.secrets {
		secrets = append(secrets, tok)
	}
	texts := append(strings.Split(log, "\n"), s.shown...)
	for _, text := range texts {
		for _, sec := range secrets {
			if strings.Contains(text, sec) {
				t.Errorf("%q shows the secret %q", text, sec)
			}
		}
	}
	t.Logf("%d secrets sent; %d strings from events, errors, statuses and %d messages, and %d log records checked",
		len(s.secrets), len(s.shown), s.messages, strings.Count(log, "\n"))
}

// secretLog is a concurrency-safe buffer for a slog handler's output.
type secretLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *secretLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *secretLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
