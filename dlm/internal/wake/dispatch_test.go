package wake

import (
	"math"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestNotifyPayloads checks how a waker passes what a channel heard to its
// watchers: a grant ("t") to all of them as taken, a release ("" or "r"
// and a count) to all of them with the count, capped, and a fair release
// naming a waiter to that waiter only; a malformed payload to none of them,
// counted instead.
func TestNotifyPayloads(t *testing.T) {
	t.Parallel()
	w := &Waker{pumps: make([]*pump, 1), chans: map[string]*wakeChan{}}
	any := w.Watch([]string{"k"}, "")
	fair := w.Watch([]string{"k"}, "waiter-id-of-twenty-22")
	other := w.Watch([]string{"k"}, "another-id-of-twenty-2")
	heard := func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	for _, tc := range []struct {
		payload             string
		anyWoken, fairWoken bool
		otherWoken, taken   bool
		malformed           bool
		listening           int64
	}{
		{payload: "t", taken: true},
		{payload: "r7", anyWoken: true, fairWoken: true, otherWoken: true, listening: 7},
		{payload: "", anyWoken: true, fairWoken: true, otherWoken: true},
		{payload: "waiter-id-of-twenty-22", anyWoken: true, fairWoken: true},
		{payload: "r999999999999999999", anyWoken: true, fairWoken: true, otherWoken: true, listening: maxListening},
		{payload: "r-1", malformed: true},
		{payload: "r", malformed: true},
		{payload: "r1x", malformed: true},
		{payload: "waiter-id-of-twenty-2!", malformed: true},
		{payload: "waiter-id-of-twenty-two", malformed: true},
		{payload: "x", malformed: true},
	} {
		ignored := w.ignored.Load()
		w.notify(script.WakeChannel("k"), tc.payload)
		want := uint64(0)
		if tc.malformed {
			want = 1
		}
		if got := w.ignored.Load() - ignored; got != want {
			t.Errorf("notify(%q) counted %d malformed messages; want %d", tc.payload, got, want)
		}
		if got := [3]bool{heard(any.c), heard(fair.c), heard(other.c)}; got != [3]bool{tc.anyWoken, tc.fairWoken, tc.otherWoken} {
			t.Errorf("notify(%q) woke [any fair other] = %v; want %v", tc.payload, got, [3]bool{tc.anyWoken, tc.fairWoken, tc.otherWoken})
		}
		if got := heard(any.taken); got != tc.taken {
			t.Errorf("notify(%q) signalled taken: %v; want %v", tc.payload, got, tc.taken)
		}
		heard(fair.taken)
		heard(other.taken)
		if tc.anyWoken {
			if got := any.listening.Load(); got != tc.listening {
				t.Errorf("notify(%q): listening = %d; want %d", tc.payload, got, tc.listening)
			}
		}
	}
}

// TestSpread checks the wait a woken watcher draws before trying again:
// none with at most two listeners, at most half an attempt per other
// listener beyond two, and never more than maxSpread — also for counts and
// attempts whose product overflows, and shares that round to nothing.
func TestSpread(t *testing.T) {
	t.Parallel()
	wt := &Watcher{}
	for _, tc := range []struct {
		listening int64
		attempt   time.Duration
		bound     time.Duration
	}{
		{0, time.Millisecond, 0},
		{2, time.Millisecond, 0},
		{3, time.Millisecond, 500 * time.Microsecond},
		{12, time.Millisecond, 5 * time.Millisecond},
		{1000, time.Millisecond, maxSpread},
		{12, 0, 0},
		{3, time.Nanosecond, 0},
		{math.MaxInt64, time.Millisecond, maxSpread},
		{999999999999999999, time.Hour, maxSpread},
		{maxListening, math.MaxInt64, maxSpread},
		{math.MinInt64, time.Millisecond, 0},
		{51, time.Millisecond, maxSpread},
		{52, time.Millisecond, maxSpread},
	} {
		wt.listening.Store(tc.listening)
		for range 200 {
			if d := wt.spread(tc.attempt); d < 0 || d > tc.bound || (tc.bound == 0 && d != 0) {
				t.Fatalf("spread with %d listening, attempts of %v = %v; want in [0, %v]", tc.listening, tc.attempt, d, tc.bound)
			}
		}
	}
}
