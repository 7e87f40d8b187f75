//go:build go1.25

// synctest needs the Go 1.23 timer channels, which a go 1.22 module turns
// off by default; the go:debug line turns them on for this test binary.

//go:debug asynctimerchan=0

package wake

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestWaitNamed checks, on synctest's fake clock, when a named waiter's
// wait ends: at once once as many nodes as it needs named it; a grace
// after the first of fewer; at once after its subscription was made again;
// at its timer when nobody named it, also after an attempt a wake-up
// started that the nodes' failures cut short, and a grace after one that
// other holders refused (no wake-up: the attempt after it starts none);
// and never sooner than a gap after the previous such attempt, which
// doubles up to the grace. A waiter of the broadcast channels (a lease's)
// is woken alike by the nodes that announce a release: only once as many
// as it needs did, or a grace after the first.
func TestWaitNamed(t *testing.T) {
	t.Parallel()
	const (
		grace = 100 * time.Millisecond
		retry = 10 * time.Second
	)
	type hearing struct {
		at   time.Duration // after Wait began
		node int
	}
	for _, tc := range []struct {
		name      string
		broadcast bool // a waiter without an id, on the broadcast channels
		need      int
		down      int // pumps down, of five
		heard     []hearing
		resub     time.Duration // when the subscription is made again; 0: never
		woken     bool          // the attempt before was woken, and refused
		held      bool          // … by other holders
		gap       time.Duration // the gap before Wait, from earlier refused attempts
		want      time.Duration
		wantWoke  bool
	}{
		{name: "quorum named", need: 3, heard: []hearing{{time.Millisecond, 0}, {2 * time.Millisecond, 3}, {3 * time.Millisecond, 4}}, want: 3 * time.Millisecond, wantWoke: true},
		{name: "one node twice", need: 3, heard: []hearing{{time.Millisecond, 0}, {2 * time.Millisecond, 0}, {3 * time.Millisecond, 0}}, want: time.Millisecond + grace, wantWoke: true},
		{name: "fewer than the quorum", need: 3, heard: []hearing{{5 * time.Millisecond, 1}, {6 * time.Millisecond, 2}}, want: 5*time.Millisecond + grace, wantWoke: true},
		{name: "quorum of the live subscriptions", need: 3, down: 3, heard: []hearing{{4 * time.Millisecond, 1}, {7 * time.Millisecond, 2}}, want: 7 * time.Millisecond, wantWoke: true},
		{name: "nobody named it", need: 3, want: retry},
		{name: "subscription made again", need: 3, resub: 9 * time.Millisecond, want: 9 * time.Millisecond},
		{name: "after a woken attempt the nodes failed", need: 3, woken: true, want: retry},
		{name: "after a woken attempt other holders refused", need: 3, woken: true, held: true, want: grace},
		{name: "after a woken attempt, named at once", need: 3, woken: true, heard: []hearing{{0, 0}, {0, 1}, {0, 2}}, want: minGap, wantWoke: true},
		{name: "gap doubles", need: 3, woken: true, gap: 8 * time.Millisecond, heard: []hearing{{0, 0}, {0, 1}, {0, 2}}, want: 16 * time.Millisecond, wantWoke: true},
		{name: "gap capped at the grace", need: 3, woken: true, gap: grace, heard: []hearing{{0, 0}, {0, 1}, {0, 2}}, want: grace, wantWoke: true},
		{name: "broadcast: a quorum announced", broadcast: true, need: 3, heard: []hearing{{time.Millisecond, 0}, {2 * time.Millisecond, 3}, {4 * time.Millisecond, 4}}, want: 4 * time.Millisecond, wantWoke: true},
		{name: "broadcast: fewer than the quorum", broadcast: true, need: 3, heard: []hearing{{5 * time.Millisecond, 1}, {6 * time.Millisecond, 2}}, want: 5*time.Millisecond + grace, wantWoke: true},
		{name: "broadcast: one node twice", broadcast: true, need: 2, heard: []hearing{{time.Millisecond, 0}, {2 * time.Millisecond, 0}}, want: time.Millisecond + grace, wantWoke: true},
		{name: "gap forgotten after a timer's attempt", need: 3, gap: grace, heard: []hearing{{time.Millisecond, 0}, {time.Millisecond, 1}, {time.Millisecond, 2}}, want: time.Millisecond, wantWoke: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				w := testWaker(5)
				for i := range tc.down {
					w.pumps[i].down = true
				}
				id, ch, payload := testWaiter, script.ManagerChannel("k", testManager), testWaiter
				if tc.broadcast {
					id, ch, payload = "", script.WakeChannel("k"), "r1"
				}
				wt := w.Watch([]string{"k"}, id, tc.need)
				wt.gap = tc.gap
				h := func(i int) handler { return handler{w: w, i: i} }
				for _, hr := range tc.heard {
					time.AfterFunc(hr.at, func() { h(hr.node).Message(ch, payload) })
				}
				if tc.resub > 0 {
					time.AfterFunc(tc.resub, func() { w.resubscribed(ch) })
				}
				timer := time.NewTimer(retry)
				start := time.Now()
				woke, err := wt.Wait(context.Background(), nil, timer, Attempt{Took: time.Millisecond, Woken: tc.woken, Contended: tc.held, Grace: grace})
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tc.want || woke != tc.wantWoke {
					t.Errorf("Wait = %v after %v; want %v after %v", woke, got, tc.wantWoke, tc.want)
				}
			})
		})
	}
}

// TestForgedFloodBound checks, on synctest's fake clock, what a flood of
// forged messages naming a waiter on every node costs it: each wake-up
// starts an attempt, which the nodes refuse (nothing was handed to it),
// and the gap before the next doubles up to the grace, so that over a
// second the waiter makes at most the attempts of the doubling plus one per
// grace.
func TestForgedFloodBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			grace = 50 * time.Millisecond
			span  = time.Second
		)
		w := testWaker(5)
		wt := w.Watch([]string{"k"}, testWaiter, 3)
		ch := script.ManagerChannel("k", testManager)
		attempts := floodAttempts(t, wt, span, grace, func() {
			for i := range 5 { // every node names the waiter
				handler{w: w, i: i}.Message(ch, testWaiter)
			}
		})
		if bound := floodBound(span, grace); attempts > bound {
			t.Errorf("a flood of forged messages drove %d attempts in %v; want at most %d", attempts, span, bound)
		}
	})
}

// TestResubscriptionFloodBound checks, on synctest's fake clock, that
// subscriptions made again as fast as a node can confirm them — every 2
// ms — cannot set a waiter's pace: each wakes it (a release may have gone
// unheard) into an attempt that Wait reports as no wake-up by a release,
// and the gap before the next such wake-up still doubles up to the grace,
// as after a forged message's. Over a second the waiter makes at most the
// attempts of the doubling plus one per grace.
func TestResubscriptionFloodBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			grace = 50 * time.Millisecond
			span  = time.Second
		)
		w := testWaker(3)
		wt := w.Watch([]string{"k"}, testWaiter, 2)
		ch := script.ManagerChannel("k", testManager)
		ctx, cancel := context.WithCancel(context.Background())
		flooding := make(chan struct{})
		defer func() {
			cancel()
			<-flooding
		}()
		go func() { // what the waker does with each confirmation after the first
			defer close(flooding)
			for ctx.Err() == nil {
				w.resubscribed(ch)
				time.Sleep(2 * time.Millisecond)
			}
		}()
		timer := time.NewTimer(time.Hour)
		attempts, woken := 0, false
		for start := time.Now(); time.Since(start) < span; attempts++ {
			wt.Drain()
			time.Sleep(time.Millisecond) // the attempt's round trip, refused
			var err error
			if woken, err = wt.Wait(ctx, nil, timer, Attempt{Took: time.Millisecond, Woken: woken, Grace: grace}); err != nil {
				t.Fatal(err)
			}
			if woken {
				t.Fatal("Wait reported a wake-up by a release after subscriptions made again; want none")
			}
		}
		doubling := 0
		for g := minGap; g < grace; g *= 2 {
			doubling++
		}
		bound := doubling + int(span/grace) + 1
		t.Logf("%d attempts in %v while subscriptions were made again every 2ms; bound %d", attempts, span, bound)
		if attempts > bound {
			t.Errorf("subscriptions made again every 2ms drove %d attempts in %v; want at most %d", attempts, span, bound)
		}
	})
}

// TestNotifyNamed checks how a waker passes what a manager's channel heard:
// an id to its waiter alone, counted once per node; an id on another key's
// channel, or of a waiter that stopped waiting, to nobody and not counted;
// another manager's waiter's id, or garbage, to nobody and counted.
func TestNotifyNamed(t *testing.T) {
	t.Parallel()
	w := testWaker(3)
	wt := w.Watch([]string{"k"}, testWaiter, 2)
	gone := w.Watch([]string{"k"}, testWaiter2, 2)
	gone.Stop()
	onOther := w.Watch([]string{"k2"}, testManager+"ccccccccccc", 2)
	ch, ch2 := script.ManagerChannel("k", testManager), script.ManagerChannel("k2", testManager)
	for _, tc := range []struct {
		node      int
		channel   string
		payload   string
		nheard    int
		malformed uint64
	}{
		{0, ch, testWaiter, 1, 0},
		{0, ch, testWaiter, 1, 0},
		{2, ch, testWaiter, 2, 0},
		{1, ch2, testWaiter, 2, 0},
		{1, ch, testWaiter2, 2, 0},
		{1, ch, otherWaiter, 2, 1},
		{1, ch, "r5", 2, 2},
		{1, ch, "", 2, 3},
		{1, ch, testManager + "ccccccccccc", 2, 3},
	} {
		handler{w: w, i: tc.node}.Message(tc.channel, tc.payload)
		if n, _, _ := wt.named(); n != tc.nheard || w.Ignored() != tc.malformed {
			t.Errorf("after node %d heard %q on %s: %d nodes named the waiter, %d malformed; want %d, %d",
				tc.node, tc.payload, tc.channel, n, w.Ignored(), tc.nheard, tc.malformed)
		}
	}
	if n, _, _ := onOther.named(); n != 0 {
		t.Errorf("the waiter of k2 was named by %d nodes on k's channel; want 0", n)
	}
}

// TestLateNamingIgnored checks, on synctest's fake clock, that the nodes a
// release reached after it woke a waiter do not wake it again: their
// messages, within a grace of the wake-up, belong to that release. A new
// release, which the nodes that had named the waiter name again, does.
func TestLateNamingIgnored(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			grace = 100 * time.Millisecond
			retry = 10 * time.Second
		)
		w := testWaker(3)
		wt := w.Watch([]string{"k"}, testWaiter, 2)
		ch := script.ManagerChannel("k", testManager)
		name := func(i int) { handler{w: w, i: i}.Message(ch, testWaiter) }
		timer := time.NewTimer(retry)
		name(0)
		name(1)
		if woke, err := wt.Wait(context.Background(), nil, timer, Attempt{Grace: grace}); !woke || err != nil {
			t.Fatalf("Wait after two of three nodes named the waiter = %v, %v; want woken", woke, err)
		}
		wt.Drain()
		name(2) // the release reaches the last node during the attempt
		timer.Reset(retry)
		start := time.Now()
		if woke, err := wt.Wait(context.Background(), nil, timer, Attempt{Woken: true, Grace: grace}); woke || err != nil || time.Since(start) != retry {
			t.Errorf("Wait after the late node named the waiter = %v, %v after %v; want the timer, after %v", woke, err, time.Since(start), retry)
		}
		wt.Drain()
		time.AfterFunc(time.Millisecond, func() { name(0); name(1) })
		timer.Reset(retry)
		start = time.Now()
		if woke, err := wt.Wait(context.Background(), nil, timer, Attempt{Grace: grace}); !woke || err != nil || time.Since(start) != time.Millisecond {
			t.Errorf("Wait for a new release = %v, %v after %v; want woken after 1ms", woke, err, time.Since(start))
		}
	})
}

// TestListening checks what a watcher says of its subscriptions: it hears
// as many nodes as it needs while enough of them are up, and it listens
// since a moment only when every channel was subscribed before it.
func TestListening(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := testWaker(3)
		before := time.Now()
		time.Sleep(time.Millisecond)
		wt := w.Watch([]string{"k"}, testWaiter, 2)
		ch := script.ManagerChannel("k", testManager)
		if wt.ListeningSince(time.Now()) {
			t.Errorf("ListeningSince(now) before any node confirmed; want false")
		}
		for i := range 3 {
			w.answer(i, ch, true)
		}
		if wt.ListeningSince(before) {
			t.Errorf("ListeningSince(before the channel was subscribed) = true; want false")
		}
		time.Sleep(time.Millisecond)
		if !wt.ListeningSince(time.Now()) {
			t.Errorf("ListeningSince(after every node confirmed) = false; want true")
		}
		if !wt.Hears() {
			t.Errorf("Hears with 3 of 3 nodes up = false; want true")
		}
		w.failed(0)
		w.failed(1)
		if wt.Hears() {
			t.Errorf("Hears with 1 of 3 nodes up, needing 2 = true; want false")
		}
		var none *Watcher
		if none.Hears() {
			t.Errorf("Hears of a nil watcher = true; want false")
		}
	})
}

// TestNamedBeforeWatch checks, on synctest's fake clock, that a release
// naming a waiter before it watches — after its first attempt was refused,
// on a channel the manager listened on already — counts once it watches,
// per node and on its own key's channel only; that such a naming is kept
// for the reservation's life only; and that the namings kept for waiters
// that never watch are bounded.
func TestNamedBeforeWatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		w := testWaker(3)
		w.timeout = 50 * time.Millisecond
		lingering := w.Watch([]string{"k"}, testManager+"ccccccccccc", 1) // keeps the channel
		defer lingering.Stop()
		ch := script.ManagerChannel("k", testManager)
		for _, i := range []int{0, 2, 2} {
			handler{w: w, i: i}.Message(ch, testWaiter)
		}
		handler{w: w, i: 1}.Message(script.ManagerChannel("k2", testManager), testWaiter)
		wt := w.Watch([]string{"k"}, testWaiter, 2)
		if n, _, _ := wt.named(); n != 2 {
			t.Errorf("a waiter named by nodes 0 and 2 before it watched: %d nodes named it once watching; want 2", n)
		}
		wt.Stop()
		handler{w: w, i: 0}.Message(ch, testWaiter2)
		time.Sleep(2*w.timeout + time.Millisecond)
		late := w.Watch([]string{"k"}, testWaiter2, 1)
		if n, _, _ := late.named(); n != 0 {
			t.Errorf("a naming two node timeouts old counted for %d nodes; want 0: the reservation it spoke of is over", n)
		}
		late.Stop()
		for i := range 2 * maxUnwatched {
			handler{w: w, i: 0}.Message(ch, fmt.Sprintf("%s%011d", testManager, i))
		}
		w.mu.Lock()
		kept := len(w.unwatched)
		w.mu.Unlock()
		if kept > maxUnwatched {
			t.Errorf("%d namings kept for waiters without a watcher; want at most %d", kept, maxUnwatched)
		}
	})
}

// TestWaitWidened checks, on synctest's fake clock, when the wait of a
// waiter widened to the broadcast channel ends (one beside processes of the
// previous release, which announce their releases there on two nodes, and
// whose waiters attempt at the first announcement): at once when one node
// announces a release there, the previous release's fair release (a fair
// waiter's id) included, where a naming on its manager's channel still
// needs a quorum or a grace; at a release heard after the gap that a
// refused woken attempt set, never at one heard before it, whose key was
// free back then; at once for a release heard during the attempt when
// there is no gap. A grant, or a waiter not widened, ends nothing before
// the timer.
func TestWaitWidened(t *testing.T) {
	t.Parallel()
	const (
		grace = 100 * time.Millisecond
		retry = 10 * time.Second
	)
	bc, mc := script.WakeChannel("k"), script.ManagerChannel("k", testManager)
	type message struct {
		at      time.Duration // after Wait began; negative: before it, during the attempt
		node    int
		channel string
		payload string
	}
	for _, tc := range []struct {
		name     string
		narrow   bool // not widened
		heard    []message
		woken    bool          // the attempt before was woken, and refused
		gap      time.Duration // the gap before Wait
		want     time.Duration
		wantWoke bool
	}{
		{name: "one node announced a release", heard: []message{{3 * time.Millisecond, 0, bc, "r2"}}, want: 3 * time.Millisecond, wantWoke: true},
		{name: "the previous release's fair release", heard: []message{{4 * time.Millisecond, 1, bc, "Rk1SR9QgExujG-jZdRq91g"}}, want: 4 * time.Millisecond, wantWoke: true},
		{name: "named by one node", heard: []message{{2 * time.Millisecond, 0, mc, testWaiter}}, want: 2*time.Millisecond + grace, wantWoke: true},
		{name: "a release before the gap ended is not the one", woken: true, gap: 8 * time.Millisecond,
			heard: []message{{time.Millisecond, 0, bc, "r2"}, {10 * time.Millisecond, 1, bc, "r2"}, {20 * time.Millisecond, 0, bc, "r2"}}, want: 20 * time.Millisecond, wantWoke: true},
		{name: "a release during the attempt, no gap", heard: []message{{-time.Millisecond, 2, bc, "r2"}}, want: 0, wantWoke: true},
		{name: "a release during the attempt, then the gap", woken: true, heard: []message{{-time.Millisecond, 2, bc, "r2"}, {5 * time.Millisecond, 2, bc, "r2"}}, want: 5 * time.Millisecond, wantWoke: true},
		{name: "a grant", heard: []message{{3 * time.Millisecond, 0, bc, script.WakeGrant}}, want: retry},
		{name: "not widened", narrow: true, heard: []message{{3 * time.Millisecond, 0, bc, "r2"}}, want: retry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				w := testWaker(3)
				wt := w.Watch([]string{"k"}, testWaiter, 2)
				if !tc.narrow {
					w.Widen(wt, []string{"k"})
				}
				reader := w.Watch([]string{"k"}, "", 2) // the broadcast channel's own watcher
				defer reader.Stop()
				wt.gap = tc.gap
				wt.Drain()
				for _, m := range tc.heard {
					if m.at < 0 {
						handler{w: w, i: m.node}.Message(m.channel, m.payload)
						continue
					}
					time.AfterFunc(m.at, func() { handler{w: w, i: m.node}.Message(m.channel, m.payload) })
				}
				timer := time.NewTimer(retry)
				start := time.Now()
				woke, err := wt.Wait(context.Background(), nil, timer, Attempt{Took: time.Millisecond, Woken: tc.woken, Grace: grace})
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != tc.want || woke != tc.wantWoke {
					t.Errorf("Wait = %v after %v; want %v after %v", woke, got, tc.wantWoke, tc.want)
				}
			})
		})
	}
}

// TestForgedBroadcastFloodBound checks, on synctest's fake clock, that a
// flood of forged releases on the broadcast channel, from every node, costs
// a widened waiter no more than a flood naming it costs a waiter
// (TestForgedFloodBound): one node's announcement wakes it, but each
// wake-up's refused attempt doubles the gap before the next, up to the
// grace.
func TestForgedBroadcastFloodBound(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const (
			grace = 50 * time.Millisecond
			span  = time.Second
		)
		w := testWaker(5)
		wt := w.Watch([]string{"k"}, testWaiter, 3)
		w.Widen(wt, []string{"k"})
		bc := script.WakeChannel("k")
		attempts := floodAttempts(t, wt, span, grace, func() {
			for i := range 5 { // every node announces a release
				handler{w: w, i: i}.Message(bc, "r1")
			}
		})
		if bound := floodBound(span, grace); attempts > bound {
			t.Errorf("a flood of forged broadcast releases drove %d attempts of a widened waiter in %v; want at most %d", attempts, span, bound)
		}
	})
}

// floodAttempts counts the attempts a waiter watching through wt makes in
// span, each refused after a millisecond, while flood runs every 100 µs.
func floodAttempts(t *testing.T, wt *Watcher, span, grace time.Duration, flood func()) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	flooding := make(chan struct{})
	defer func() {
		cancel()
		<-flooding
	}()
	go func() {
		defer close(flooding)
		for ctx.Err() == nil {
			flood()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	timer := time.NewTimer(time.Hour)
	attempts, woken := 0, false
	for start := time.Now(); time.Since(start) < span; attempts++ {
		wt.Drain()
		time.Sleep(time.Millisecond) // the attempt's round trip, refused
		var err error
		if woken, err = wt.Wait(ctx, nil, timer, Attempt{Took: time.Millisecond, Woken: woken, Grace: grace}); err != nil {
			t.Fatal(err)
		}
	}
	return attempts
}

// floodBound is how many attempts a flood may drive in span: those of a
// gap doubling from minGap to grace (1, 2, 4, ... ms), then one per grace.
func floodBound(span, grace time.Duration) int {
	doubling := 0
	for g := minGap; g < grace; g *= 2 {
		doubling++
	}
	return doubling + int(span/grace) + 1
}
