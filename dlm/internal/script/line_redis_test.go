package script_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// The line's rules, on a redis-server: each step runs one script and checks
// its reply, the lock key and the line afterwards, and what was announced.

const (
	lk      = "redlock:{k}"
	life    = "2000" // ms, a place's life
	ttl     = "10000"
	reserve = "500" // ms, a key handed on
	bound   = "1024"
)

// waiter ids: a manager's id of script.ManagerIDLen characters, then the
// waiter's own part.
var (
	mgrA = strings.Repeat("A", script.ManagerIDLen)
	mgrB = strings.Repeat("B", script.ManagerIDLen)
	w1   = mgrA + strings.Repeat("1", script.WaiterIDLen-script.ManagerIDLen)
	w2   = mgrB + strings.Repeat("2", script.WaiterIDLen-script.ManagerIDLen)
	w3   = mgrA + strings.Repeat("3", script.WaiterIDLen-script.ManagerIDLen)
)

// heard collects what a subscription hears, by channel.
type heard struct {
	mu      sync.Mutex
	got     []string // "channel payload"
	markers int      // published by take so far
}

func (h *heard) Message(channel, payload string) {
	h.mu.Lock()
	h.got = append(h.got, channel+" "+payload)
	h.mu.Unlock()
}
func (h *heard) Subscribed(string) {}

// takeMarker begins the payload of take's markers.
const takeMarker = "take-marker-"

// take returns what was heard since the last take: it publishes a marker on
// channel, which the subscription listens on, through s, and waits for it.
// The server sends a subscriber its messages in the order it published
// them, so the marker comes after every message of the scripts run before
// take. The wait is bounded by bound only to keep the test from hanging.
func (h *heard) take(t *testing.T, s *redistest.Server, channel string, bound time.Duration) []string {
	t.Helper()
	h.mu.Lock()
	h.markers++
	marker := channel + " " + takeMarker + strconv.Itoa(h.markers)
	h.mu.Unlock()
	if _, err := s.Do("PUBLISH", channel, takeMarker+strconv.Itoa(h.markers)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(bound); ; time.Sleep(time.Millisecond) {
		h.mu.Lock()
		for i, m := range h.got {
			if m == marker {
				out := h.got[:i:i]
				h.got = h.got[i+1:]
				h.mu.Unlock()
				return out
			}
		}
		h.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the subscription did not hear %q within %v", marker, bound)
		}
	}
}

// awaitListeners waits until channel has n subscribers on s, for at most
// bound: a subscription's change is in effect once the server counts it.
func awaitListeners(t *testing.T, s *redistest.Server, channel string, n int64, bound time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(bound); ; time.Sleep(time.Millisecond) {
		v, err := s.Do("PUBSUB", "NUMSUB", channel)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := v.([]any)[1].(int64); got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has not %d subscribers within %v", channel, n, bound)
		}
	}
}

func TestLine(t *testing.T) {
	t.Parallel()
	s, n, h, sub, hang := startLineServer(t)
	ctx := context.Background()
	chA := script.ManagerChannel(lk, mgrA)

	loud := script.Flag{Mode: script.Loud}.Arg()
	keys := append([]string{lk}, script.LinesOf([]string{lk})...)
	acquire := func(secret, id, held, fair string) any {
		t.Helper()
		v, err := n.Eval(ctx, script.Acquire, keys, []string{secret, ttl, id, life, held, bound, fair, loud})
		if err != nil {
			t.Fatalf("Acquire(%s, %q): %v", secret, id, err)
		}
		return v
	}
	release := func(secret, id, ticket, how string) any {
		t.Helper()
		v, err := n.Eval(ctx, script.Release, keys, []string{secret, id, ticket, life, reserve, how, loud})
		if err != nil {
			t.Fatalf("Release(%s, %q, %s): %v", secret, id, how, err)
		}
		return v
	}
	get := func(k string) string {
		v, _ := s.Do("GET", k)
		str, _ := v.(string)
		return str
	}
	line := func() []string {
		v, err := s.Do("ZRANGE", script.LineKeys(lk)[0], "0", "-1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range v.([]any) {
			out = append(out, m.(string))
		}
		return out
	}
	check := func(step string, reply, wantReply any, wantKey string, wantLine []string, wantHeard []string) {
		t.Helper()
		if !equal(reply, wantReply) {
			t.Errorf("%s: reply %v; want %v", step, reply, wantReply)
		}
		if got := get(lk); got != wantKey {
			t.Errorf("%s: key %q; want %q", step, got, wantKey)
		}
		if got := line(); strings.Join(got, ",") != strings.Join(wantLine, ",") {
			t.Errorf("%s: line %v; want %v", step, got, wantLine)
		}
		if got := h.take(t, s, chA, hang); strings.Join(got, "|") != strings.Join(wantHeard, "|") {
			t.Errorf("%s: heard %q; want %q", step, got, wantHeard)
		}
	}

	// Tickets: w3 asked first (10), then w1 (20), then w2 (30); the
	// releaser asking again has a new one (40).
	check("uncontended, not fair: no place", acquire("s-free", w2, "5", "0"), []any{int64(1), int64(0)}, "s-free", nil, nil)
	check("its release", release("s-free", w2, "5", script.ReleaseLock), int64(1), "", nil, nil)
	check("fair: the holder takes a free key, no place", acquire("s-holder", w3, "10", "1"), []any{int64(1), int64(0)}, "s-holder", nil, nil)
	check("w2 refused, placed", acquire("s-w2", w2, "30", "0"), []any{int64(0), int64(30), heldFor, int64(0)}, "s-holder", []string{w2}, nil)
	check("w1 refused, placed by its ticket, ahead of w2", acquire("s-w1", w1, "20", "0"), []any{int64(0), int64(20), heldFor, int64(0)}, "s-holder", []string{w1, w2}, nil)
	check("TryLock refused, no place", acquire("s-try", "", "0", "0"), []any{int64(0), int64(0), heldFor}, "s-holder", []string{w1, w2}, nil)
	check("release hands the key to w1", release("s-holder", w3, "10", script.ReleaseLock), int64(1), script.ReservedFor(w1), []string{w2}, []string{chA + " " + w1})
	check("the releaser is refused, placed last", acquire("s-holder2", w3, "40", "0"), []any{int64(0), int64(40), reservedFor, int64(0)}, script.ReservedFor(w1), []string{w2, w3}, nil)
	check("w2 refused by w1's reservation", acquire("s-w2b", w2, "30", "0"), []any{int64(0), int64(30), reservedFor, int64(0)}, script.ReservedFor(w1), []string{w2, w3}, nil)
	check("w1 takes its reservation, out of the line", acquire("s-w1", w1, "20", "0"), []any{int64(1), int64(0)}, "s-w1", []string{w2, w3}, nil)
	check("w1's failed attempt keeps its turn, back in line by its ticket", release("s-w1", w1, "20", script.ReleaseKeepTurn), int64(1), script.ReservedFor(w1), []string{w1, w2, w3}, nil)
	check("w1 takes it again, keeping its place", acquire("s-w1c", w1, "20", "0"), []any{int64(1), int64(0)}, "s-w1c", []string{w1, w2, w3}, nil)
	check("w1's failed attempt", release("s-w1c", w1, "20", script.ReleaseAttempt), int64(1), "", []string{w1, w2, w3}, nil)
	check("fair: w2 refused, w1 heads the line", acquire("s-w2c", w2, "30", "1"), []any{int64(0), int64(30), int64(0), int64(0)}, "", []string{w1, w2, w3}, nil)
	check("not fair: w2 takes the free key", acquire("s-w2d", w2, "30", "0"), []any{int64(1), int64(0)}, "s-w2d", []string{w1, w2, w3}, nil)
	check("w2's release hands it to w1", release("s-w2d", w2, "30", script.ReleaseLock), int64(1), script.ReservedFor(w1), []string{w3}, []string{chA + " " + w1})
	if _, err := n.Eval(ctx, script.Leave, keys, []string{w1, reserve, loud}); err != nil {
		t.Fatal(err)
	}
	check("w1 leaves: w3 gets the key", nil, nil, script.ReservedFor(w3), nil, []string{chA + " " + w3})
	for _, k := range script.LineKeys(lk) {
		if v, _ := s.Do("EXISTS", k); v != int64(0) {
			t.Errorf("EXISTS %s of an empty line = %v; want 0: nothing stays behind", k, v)
		}
	}
	// A client of the broadcast channel listens from now on: a reader, or
	// a waiter of the previous release.
	if err := sub.Subscribe(ctx, script.WakeChannel(lk)); err != nil {
		t.Fatal(err)
	}
	awaitListeners(t, s, script.WakeChannel(lk), 1, hang)
	if _, err := n.Eval(ctx, script.Leave, keys, []string{w3, reserve, loud}); err != nil {
		t.Fatal(err)
	}
	check("w3 leaves an empty line: the key is free, announced", nil, nil, "", nil, []string{script.WakeChannel(lk) + " " + script.WakeRelease + "1"})
	check("w2 takes the key, fair", acquire("s-w2f", w2, "30", "1"), []any{int64(1), int64(0)}, "s-w2f", nil, nil)
	check("w1 refused, told that the broadcast channel has a listener", acquire("s-w1f", w1, "20", "0"), []any{int64(0), int64(20), heldFor, int64(1)}, "s-w2f", []string{w1}, nil)
	check("with a broadcast listener, w2's release names w1 and frees the key for all", release("s-w2f", w2, "30", script.ReleaseLock), int64(1), "", nil,
		[]string{chA + " " + w1, script.WakeChannel(lk) + " " + script.WakeRelease + "1"})
	if err := sub.Unsubscribe(ctx, script.WakeChannel(lk)); err != nil {
		t.Fatal(err)
	}
	awaitListeners(t, s, script.WakeChannel(lk), 0, hang)
	release("s-w1f", w1, "20", script.ReleaseLock)
	h.take(t, s, chA, hang)
	// A ticket that is no positive integer below 2^53 reads as the node's
	// clock in microseconds: behind every waiter whose ticket was taken
	// earlier.
	check("w1 takes the key, fair", acquire("s-w1g", w1, "20", "1"), []any{int64(1), int64(0)}, "s-w1g", nil, nil)
	check("w3 refused, placed", acquire("s-w3g", w3, "40", "0"), []any{int64(0), int64(40), heldFor, int64(0)}, "s-w1g", []string{w3}, nil)
	for _, bad := range []string{"9223372036854775807", "9007199254740992", "0", "-5", "x"} {
		v := acquire("s-w2g", w2, bad, "0")
		pair, _ := v.([]any)
		tk, _ := pair[1].(int64)
		if len(pair) != 4 || pair[0] != int64(0) || tk < 1e15 || tk >= 1<<53 || !equal(pair[2], heldFor) {
			t.Errorf("acquire with ticket %s = %v; want refused, under the node's clock in µs", bad, v)
		}
		if got := line(); strings.Join(got, ",") != w3+","+w2 {
			t.Errorf("line after a ticket %s: %v; want %s then %s", bad, got, w3, w2)
		}
	}
	// A full line takes no more waiters, and the release of an attempt the
	// bound refused (one that failed on other nodes) gives it no place.
	full, err := n.Eval(ctx, script.Acquire, keys, []string{"s-w1h", ttl, w1, life, "20", "2", "0", loud})
	if err != nil {
		t.Fatal(err)
	}
	check("w1 refused by a line bounded to 2: no place", full, []any{int64(0), int64(-1), heldFor, int64(0)}, "s-w1g", []string{w3, w2}, nil)
	bounded := func(secret, id, ticket, how string) any {
		t.Helper()
		v, err := n.Eval(ctx, script.Release, keys, []string{secret, id, ticket, life, reserve, how, "2", loud})
		if err != nil {
			t.Fatalf("Release(%s, %q, %s): %v", secret, id, how, err)
		}
		return v
	}
	check("the release of w1's refused attempt: still no place", bounded("s-w1h", w1, "20", script.ReleaseAttempt), int64(0), "s-w1g", []string{w3, w2}, nil)
	check("the release of w3's failed attempt: its place kept", bounded("s-w3h", w3, "40", script.ReleaseAttempt), int64(0), "s-w1g", []string{w3, w2}, nil)
	check("a release keeping w1's turn places it whatever the bound", bounded("s-w1h", w1, "20", script.ReleaseKeepTurn), int64(0), "s-w1g", []string{w1, w3, w2}, nil)
}

// A pttlUpTo in a wanted reply stands for a PTTL (the refusing key's)
// above 0 and at most its value, in ms.
type pttlUpTo int64

const (
	heldFor     = pttlUpTo(10000) // ttl: a key a holder holds
	reservedFor = pttlUpTo(500)   // reserve: a key handed to a waiter
)

// equal compares two replies; b may hold pttlUpTo elements.
func equal(a, b any) bool {
	if up, ok := b.(pttlUpTo); ok {
		v, ok := a.(int64)
		return ok && v > 0 && v <= int64(up)
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok != bok {
		return false
	}
	if !aok {
		return a == b
	}
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if !equal(as[i], bs[i]) {
			return false
		}
	}
	return true
}

// startLineServer starts a redis-server with a node on it and a
// subscription of that node listening on the channels of managers A and B,
// and returns them with how long a wait for a message may take before it
// counts as lost (the waits only keep a lost message from hanging a test).
func startLineServer(t *testing.T) (*redistest.Server, *resp.Node, *heard, driver.Subscription, time.Duration) {
	t.Helper()
	s := redistest.StartServer(t)
	cfg, err := driver.ParseURL("redis://" + s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	h := &heard{}
	sub, err := n.Subscribe(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	chA, chB := script.ManagerChannel(lk, mgrA), script.ManagerChannel(lk, mgrB)
	if err := sub.Subscribe(ctx, chA, chB); err != nil {
		t.Fatal(err)
	}
	hang := redistest.MeasurePace(t, s).Stretch(5 * time.Second)
	awaitListeners(t, s, chA, 1, hang)
	awaitListeners(t, s, chB, 1, hang)
	return s, n, h, sub, hang
}
