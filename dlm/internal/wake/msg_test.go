package wake

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The ids of the tests: a manager's, two of its waiters', and another
// manager's waiter's.
var (
	testManager = strings.Repeat("M", script.ManagerIDLen)
	testWaiter  = testManager + "AZaz09-_AZa"
	testWaiter2 = testManager + "bbbbbbbbbbb"
	otherWaiter = strings.Repeat("O", script.ManagerIDLen) + "AZaz09-_AZa"
)

// TestParseBroadcast checks the broadcast messages parseBroadcast accepts,
// with what they announce — the previous release's fair releases, which
// name the head of its line by an id of 22 characters, as releases without
// a count — and that it refuses hostile ones: counts with a sign, too many
// digits, digits that are not ASCII, bytes that are not UTF-8, ids of
// another length or alphabet, and long payloads.
func TestParseBroadcast(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		want    broadcastMsg
		ok      bool
	}{
		{"t", broadcastMsg{grant: true}, true},
		{"", broadcastMsg{}, true},
		{"r0", broadcastMsg{}, true},
		{"r7", broadcastMsg{listening: 7}, true},
		{"r007", broadcastMsg{listening: 7}, true},
		{"r1048576", broadcastMsg{listening: maxListening}, true},
		{"r1048577", broadcastMsg{listening: maxListening}, true},
		{"r" + strings.Repeat("9", 18), broadcastMsg{listening: maxListening}, true},
		{"r" + strings.Repeat("9", 19), broadcastMsg{}, false},
		{"r9223372036854775807", broadcastMsg{}, false},
		{"r" + strings.Repeat("1", 1<<20), broadcastMsg{}, false},
		{"r", broadcastMsg{}, false},
		{"r-1", broadcastMsg{}, false},
		{"r+1", broadcastMsg{}, false},
		{"r 1", broadcastMsg{}, false},
		{"r1\x00", broadcastMsg{}, false},
		{"r1e3", broadcastMsg{}, false},
		{"r\u0661\u0662", broadcastMsg{}, false},
		{"R1", broadcastMsg{}, false},
		{"tt", broadcastMsg{}, false},
		{testWaiter, broadcastMsg{}, true},
		{"Rk1SR9QgExujG-jZdRq91g", broadcastMsg{}, true},
		{"Rk1SR9QgExujG-jZdRq91", broadcastMsg{}, false},
		{"Rk1SR9QgExujG-jZdRq91gA", broadcastMsg{}, false},
		{"Rk1SR9QgExujG+jZdRq91g", broadcastMsg{}, false},
		{"Rk1SR9QgExujG-jZdRq9==", broadcastMsg{}, false},
		{"\xff\xfe\xfd", broadcastMsg{}, false},
		{strings.Repeat("x", 1<<20), broadcastMsg{}, false},
	} {
		got, ok := parseBroadcast(tc.payload)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseBroadcast(%.40q) = %+v, %v; want %+v, %v", tc.payload, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseNamed checks that parseNamed accepts exactly the ids of the
// manager's waiters: of the waiter id's length and alphabet, beginning with
// the manager's id.
func TestParseNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{testWaiter, true},
		{testWaiter2, true},
		{otherWaiter, false},
		{testWaiter[:script.WaiterIDLen-1], false},
		{testWaiter + "A", false},
		{testWaiter[:script.WaiterIDLen-1] + "=", false},
		{testWaiter[:script.WaiterIDLen-1] + "/", false},
		{testWaiter[:script.WaiterIDLen-2] + "é", false},
		{testManager, false},
		{"", false},
		{"r5", false},
		{"t", false},
		{strings.Repeat("\xff", script.WaiterIDLen), false},
		{strings.Repeat("x", 1<<20), false},
	} {
		got, ok := parseNamed(testManager, tc.payload)
		if ok != tc.ok || (ok && got != tc.payload) {
			t.Errorf("parseNamed(%.40q) = %q, %v; want %v", tc.payload, got, ok, tc.ok)
		}
	}
}

// broadcastGrammar and namedGrammar are the grammars of the two kinds of
// channel, written independently of the parsers.
var (
	broadcastGrammar = regexp.MustCompile(`\A(?:t|r[0-9]{1,18}|[A-Za-z0-9_-]{22})?\z`)
	namedGrammar     = regexp.MustCompile(`\A` + testManager + `[A-Za-z0-9_-]{11}\z`)
)

// FuzzWakeMessage feeds arbitrary payloads to both parsers and, as a node's
// subscription delivers them, to a waker with a watcher of the broadcast
// channel and two named waiters. The parsers must accept exactly their
// grammars, with a count in [0, maxListening]; nothing may panic; the wait
// spread after any of them stays within [0, maxSpread) for any attempt; a
// malformed payload wakes nobody and is counted; an id wakes its waiter
// alone; and a well-formed release after the garbage still wakes the
// broadcast watcher, with its count.
func FuzzWakeMessage(f *testing.F) {
	for _, s := range []string{
		"", "t", "r0", "r7", "r" + strings.Repeat("9", 18), "r" + strings.Repeat("9", 19), "r-1", "r", "r+5",
		"r\u0661", testWaiter, otherWaiter, "\xff\xfe", "r1\nr2\nt\n\n", testWaiter + "\n" + testWaiter2,
		"r-9223372036854775808\nr999999999999999999", strings.Repeat("x", 4096),
	} {
		f.Add(s, int64(time.Millisecond))
	}
	f.Add("r999999999999999999", int64(math.MaxInt64))
	f.Add("r3", int64(1))
	f.Add("r3", int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, payload string, attempt int64) {
		b, ok := parseBroadcast(payload)
		if ok != broadcastGrammar.MatchString(payload) {
			t.Fatalf("parseBroadcast(%q) accepted: %v; the grammar says %v", payload, ok, !ok)
		}
		if ok && (b.listening < 0 || b.listening > maxListening) {
			t.Fatalf("parseBroadcast(%q) = %+v; want a count in [0, %d]", payload, b, maxListening)
		}
		if _, ok := parseNamed(testManager, payload); ok != namedGrammar.MatchString(payload) {
			t.Fatalf("parseNamed(%q) accepted: %v; the grammar says %v", payload, ok, !ok)
		}

		w := testWaker(1)
		all := w.Watch([]string{"k"}, "", 0)
		named := w.Watch([]string{"k"}, testWaiter, 1)
		named2 := w.Watch([]string{"k"}, testWaiter2, 1)
		bch, nch := script.WakeChannel("k"), script.ManagerChannel("k", testManager)
		h := handler{w: w}
		malformed := uint64(0)
		for _, p := range append([]string{payload}, strings.Split(payload, "\n")...) {
			for _, ch := range []string{bch, nch} {
				before := w.ignored.Load()
				h.Message(ch, p)
				var ok bool
				if ch == bch {
					_, ok = parseBroadcast(p)
				} else {
					_, ok = parseNamed(testManager, p)
				}
				if !ok {
					malformed++
				}
				if got := w.ignored.Load() - before; got != map[bool]uint64{false: 1}[ok] {
					t.Fatalf("Message(%s, %q) counted %d malformed messages; want %d", ch, p, got, map[bool]uint64{false: 1}[ok])
				}
				if d := all.spread(time.Duration(attempt)); d < 0 || d >= maxSpread {
					t.Fatalf("after Message(%q), spread(%v) = %v; want in [0, %v)", p, time.Duration(attempt), d, maxSpread)
				}
				n1, _, _ := named.named()
				n2, _, _ := named2.named()
				switch {
				case !ok && len(all.c)+len(named.c)+len(named2.c) > 0:
					t.Fatalf("Message(%s, %q), malformed, woke a watcher", ch, p)
				case ch == nch && ok && (len(all.c) > 0 || (p == testWaiter) != (n1 == 1) || (p == testWaiter2) != (n2 == 1)):
					t.Fatalf("Message(%s, %q) heard by [broadcast %d, %s %d, %s %d]; want its waiter alone", ch, p, len(all.c), testWaiter, n1, testWaiter2, n2)
				case ch == bch && ok && (len(all.c) != 1 || n1+n2 > 0):
					t.Fatalf("Message(%s, %q) woke the broadcast watcher %v, the named ones %d, %d; want the broadcast one alone", ch, p, len(all.c) == 1, n1, n2)
				}
				for _, wt := range []*Watcher{all, named, named2} {
					wt.Drain()
				}
			}
		}
		if got := w.ignored.Load(); got != malformed {
			t.Fatalf("counted %d malformed messages; want %d", got, malformed)
		}
		h.Message(bch, "r5")
		if len(all.c) != 1 || all.listening.Load() != 5 {
			t.Fatalf("after garbage %q, then r5: woken %v, listening %d; want woken, 5", payload, len(all.c) == 1, all.listening.Load())
		}
	})
}

// testWaker returns a waker of the test manager over n nodes, whose pumps
// are up but never run: the tests deliver messages themselves.
func testWaker(n int) *Waker {
	w := &Waker{id: testManager, pumps: make([]*pump, n), live: n, chans: map[string]*wakeChan{}, named: map[string]*Watcher{}}
	for i := range w.pumps {
		w.pumps[i] = &pump{w: w, i: i, running: true}
	}
	return w
}

// TestWiden checks that a widened waiter counts the releases announced on
// its keys' broadcast channels as nodes naming it, once per node alongside
// its manager's channel, but not a grant (a new leader, news for the
// observers only, which the reader here hears), and that a waiter that is
// not widened hears nothing there.
func TestWiden(t *testing.T) {
	t.Parallel()
	w := testWaker(3)
	wt := w.Watch([]string{"k"}, testWaiter, 2)
	narrow := w.Watch([]string{"k"}, testWaiter2, 2)
	reader := w.Watch([]string{"k"}, "", 2) // the broadcast channel is watched already
	defer reader.Stop()
	bc, ch := script.WakeChannel("k"), script.ManagerChannel("k", testManager)
	handler{w: w, i: 0}.Message(bc, "r3")
	if n, _, _ := wt.named(); n != 0 {
		t.Fatalf("before Widen, a broadcast release named the waiter on %d nodes; want 0", n)
	}
	w.Widen(wt, []string{"k"})
	w.Widen(wt, []string{"k"}) // twice: no change
	if got := len(wt.chans); got != 2 {
		t.Errorf("after two Widens the waiter listens on %d channels; want 2", got)
	}
	for _, tc := range []struct {
		node    int
		channel string
		payload string
		nheard  int
	}{
		{0, bc, "r3", 1},
		{0, ch, testWaiter, 1}, // node 0 again, on the manager's channel
		{2, bc, script.WakeGrant, 1},
		{1, bc, "r3", 2},
		{2, bc, "not a release", 2},
	} {
		handler{w: w, i: tc.node}.Message(tc.channel, tc.payload)
		if n, _, _ := wt.named(); n != tc.nheard {
			t.Errorf("after node %d heard %q on %s: %d nodes named the widened waiter; want %d", tc.node, tc.payload, tc.channel, n, tc.nheard)
		}
	}
	if n, _, _ := narrow.named(); n != 0 {
		t.Errorf("a waiter that was not widened was named by %d nodes on the broadcast channel; want 0", n)
	}
	if n, _, _ := reader.named(); n != 3 {
		t.Errorf("the reader heard %d nodes announce on the broadcast channel, the grant included; want 3", n)
	}
	wt.Stop()
	if wc := w.chans[bc]; len(wc.watchers) != 1 {
		t.Errorf("after Stop, the broadcast channel has %d watchers; want the reader alone", len(wc.watchers))
	}
}
