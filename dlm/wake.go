package dlm

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// The wake channel of a lock key ([script.WakeChannel]) carries what the
// scripts announce, and what the in-memory node of package memlock
// announces likewise: grants ([script.WakeGrant]) and releases
// ([script.WakeRelease] and a count, [script.WakeAll], or a fair waiter's
// id, a release for that waiter alone). The waker passes [script.WakeAll]
// to its own watchers after a subscription failed, since releases may have
// gone unheard meanwhile. [waker.notify] reads them with [parseWake], which
// tells an id from a release by its length.

// announcers returns the mask of the nodes that should announce: the two of
// lowest index among those marked in among (nodes 0 to 63; all of them when
// none is marked). Every waiter listens on every node, so two nodes are
// enough to reach them, and one spare.
func announcers(among uint64) uint64 {
	if among == 0 {
		among = ^uint64(0)
	}
	first := among & -among
	rest := among &^ first
	return first | rest&-rest
}

// Timing of the subscriptions behind the wake-up of waiters.
const (
	// wakeLinger is how long a channel stays subscribed after its last
	// waiter left, so that a busy key is not subscribed and unsubscribed
	// for every waiter.
	wakeLinger = 10 * time.Second
	// minReopen and maxReopen bound the pause before a node's failed
	// subscription is opened again; it doubles after each failure, and
	// starts again from minReopen after a subscription that lasted
	// healthySub.
	minReopen = 100 * time.Millisecond
	maxReopen = 5 * time.Second
	// healthySub is how long a subscription must have lasted for its
	// failure to be followed by another at once; one that failed sooner is
	// opened again only after the pause, which doubles up to maxReopen while
	// subscriptions keep failing young.
	healthySub = maxReopen
	// openTimeout bounds the opening of a subscription connection.
	openTimeout = 5 * time.Second
)

// waker tells waiting Lock calls that a lock they wait for was released.
// It holds one subscription per node that implements [driver.Subscriber],
// shared by all of the manager's waiters, each owned by a goroutine (a
// pump) that keeps it subscribed to the channels waiters need and opens it
// again when it fails. A pump ends when no channel has been needed for
// wakeLinger, or when the manager closes.
type waker struct {
	ctx     context.Context // ends when the manager closes
	cancel  context.CancelFunc
	spawn   func(func())
	timeout time.Duration // bounds SUBSCRIBE and UNSUBSCRIBE writes
	pumps   []*pump       // by node; nil where the node cannot subscribe
	live    int           // pumps that are not nil

	logger *slog.Logger // nil for none
	// ignored counts the malformed wake messages heard (see [parseWake]).
	ignored atomic.Uint64

	mu     sync.Mutex
	closed bool
	chans  map[string]*wakeChan
}

// wakeChan is one channel and the waiters listening on it.
type wakeChan struct {
	watchers map[*watcher]struct{}
	idle     time.Time // when the last watcher left; zero while watched
	// answered marks, by node, a confirmed subscription or a failure to
	// subscribe; ready is closed when every pump has answered.
	answered []bool
	left     int
	ready    chan struct{}
}

// watcher is one waiting Lock call's interest in its keys' channels.
type watcher struct {
	w     *waker
	chans []string
	id    string        // waiter id for targeted wakes; "" wakes on any
	c     chan struct{} // receives a value when a channel hears a release
	taken chan struct{} // receives a value when a channel hears a grant
	// listening is how many clients listened on the channel of the last
	// release heard, by the node's count; 0 when the release did not say.
	listening atomic.Int64
}

// newWaker returns a waker for the nodes, or nil when none can subscribe.
func newWaker(m *Manager) *waker {
	w := &waker{spawn: m.work.Spawn, timeout: m.cfg.timeout(), logger: m.cfg.logger, pumps: make([]*pump, len(m.nodes)), chans: map[string]*wakeChan{}}
	for i, n := range m.nodes {
		if s, ok := n.(driver.Subscriber); ok {
			w.pumps[i] = &pump{w: w, i: i, node: s, kick: make(chan struct{}, 1)}
			w.live++
		}
	}
	if w.live == 0 {
		return nil
	}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	return w
}

// close stops the pumps; the manager's Close waits for them.
func (w *waker) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
}

// watch registers interest in the release of rkeys and makes sure the
// pumps subscribe to their channels. It returns nil once the manager is
// closing.
func (w *waker) watch(rkeys []string, id string) *watcher {
	wt := &watcher{w: w, chans: make([]string, len(rkeys)), id: id, c: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	fresh := false
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	for i, k := range rkeys {
		ch := script.WakeChannel(k)
		wt.chans[i] = ch
		wc := w.chans[ch]
		if wc == nil {
			wc = w.newChan()
			w.chans[ch] = wc
			fresh = true
		}
		wc.watchers[wt] = struct{}{}
		wc.idle = time.Time{}
	}
	var start []*pump
	if fresh {
		for _, p := range w.pumps {
			switch {
			case p == nil:
			case !p.running:
				p.running = true
				start = append(start, p)
			default:
				signal(p.kick)
			}
		}
	}
	w.mu.Unlock()
	for _, p := range start {
		w.spawn(p.run)
	}
	return wt
}

// newChan returns a channel record in which the pumps known to be down have
// answered already. Called with w.mu held.
func (w *waker) newChan() *wakeChan {
	wc := &wakeChan{watchers: map[*watcher]struct{}{}, answered: make([]bool, len(w.pumps)), left: w.live, ready: make(chan struct{})}
	for i, p := range w.pumps {
		if p != nil && p.down {
			wc.answered[i] = true
			wc.left--
		}
	}
	if wc.left == 0 {
		close(wc.ready)
	}
	return wc
}

// await waits until every node has confirmed the watcher's channels (or
// failed to), for at most bound; a release published after that wakes the
// watcher.
func (wt *watcher) await(ctx context.Context, bound time.Duration) {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for _, ch := range wt.chans {
		wt.w.mu.Lock()
		ready := wt.w.chans[ch].ready
		wt.w.mu.Unlock()
		select {
		case <-ready:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// drain forgets a wake-up already received, before a new attempt.
func (wt *watcher) drain() {
	select {
	case <-wt.c:
	default:
	}
}

// spread returns how long to wait, after a release was announced, before
// trying again: a random share of as many half attempts (each of about
// attempt) as other clients listened for the release, at most maxSpread.
// Every waiter wakes at the same announcement; spread over time, the first
// takes the lock alone, and its grant, announced in turn, sends the others
// back to waiting without a request. Waiting for a release meant for this
// watcher alone (fairness) is not spread. The count comes from whoever
// published the release: whatever it says, the wait is within
// [0, maxSpread).
func (wt *watcher) spread(attempt time.Duration) time.Duration {
	// Two clients competing at once always leave one with a majority (of
	// the nodes that answer), so spreading starts at three listeners — of
	// which one may be the releaser, still listening for a while.
	listening := min(wt.listening.Load(), maxListening)
	if listening <= 2 || attempt <= 0 {
		return 0
	}
	others := listening - 2
	// Half an attempt: about when a grant is announced to the others. The
	// product is taken only when it is at most 2*maxSpread: no overflow.
	share := maxSpread
	if others <= int64(2*maxSpread/attempt) {
		share = time.Duration(others) * attempt / 2
	}
	if share <= 0 {
		return 0
	}
	return rand.N(share)
}

// maxSpread bounds the wait spread drawn by [watcher.spread].
const maxSpread = 25 * time.Millisecond

// stop ends the watcher's interest; channels nobody watches linger for a
// while before they are unsubscribed.
func (wt *watcher) stop() {
	now := time.Now()
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	for _, ch := range wt.chans {
		wc := wt.w.chans[ch]
		delete(wc.watchers, wt)
		if len(wc.watchers) == 0 {
			wc.idle = now
		}
	}
}

// notify passes what channel heard to its watchers: [script.WakeGrant] a
// grant; [script.WakeAll], or [script.WakeRelease] and a count, a release
// for every watcher; a fair waiter's id a release meant for the fair waiter of that id, which wakes
// no other fair waiter. It ignores, and counts, a payload [parseWake] does
// not accept: anyone allowed to publish on the channel may have sent it.
func (w *waker) notify(channel, payload string) {
	msg, ok := parseWake(payload)
	if !ok {
		w.malformed(channel, len(payload))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wc := w.chans[channel]
	if wc == nil {
		return
	}
	for wt := range wc.watchers {
		switch {
		case msg.kind == wakeTaken:
			signal(wt.taken)
			continue
		case msg.kind == wakeAny:
			wt.listening.Store(msg.listening)
		case wt.id != "" && wt.id != msg.id:
			continue
		default:
			wt.listening.Store(0)
		}
		signal(wt.c)
	}
}

// malformed counts a wake message that [parseWake] refused, and logs it at
// debug level by its channel and length only: its bytes are whatever a
// publisher chose to send.
func (w *waker) malformed(channel string, length int) {
	n := w.ignored.Add(1)
	ctx := context.Background()
	if w.logger == nil || !w.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	w.logger.LogAttrs(ctx, slog.LevelDebug, "dlm: malformed wake message ignored",
		slog.String("channel", channel), slog.Int("length", length), slog.Uint64("ignored", n))
}

// signal sends on c unless a value is waiting there already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// answer records that node i confirmed channel, or failed to subscribe to
// it. A confirmation that comes after the channel was ready is a
// subscription made again after a failure: releases may have been missed
// meanwhile, so its watchers are woken to try again.
func (w *waker) answer(i int, channel string, confirmed bool) {
	w.mu.Lock()
	wc := w.chans[channel]
	if wc == nil {
		w.mu.Unlock()
		return
	}
	if !wc.answered[i] {
		wc.answered[i] = true
		if wc.left--; wc.left == 0 {
			close(wc.ready)
		}
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	if confirmed {
		w.notify(channel, script.WakeAll)
	}
}

// setDown records whether node i's subscription is down.
func (w *waker) setDown(i int, down bool) {
	w.mu.Lock()
	w.pumps[i].down = down
	w.mu.Unlock()
}

// failed records that node i cannot subscribe at the moment.
func (w *waker) failed(i int) {
	w.mu.Lock()
	w.pumps[i].down = true
	names := make([]string, 0, len(w.chans))
	for ch, wc := range w.chans {
		if !wc.answered[i] {
			names = append(names, ch)
		}
	}
	w.mu.Unlock()
	for _, ch := range names {
		w.answer(i, ch, false)
	}
}

// wanted returns the channels p's subscription should hold, dropping those
// that lingered long enough. When there are none, it marks p stopped and
// returns false: p's goroutine ends, and the next watch starts another.
func (w *waker) wanted(p *pump) ([]string, bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.chans))
	for ch, wc := range w.chans {
		if len(wc.watchers) == 0 && now.Sub(wc.idle) >= wakeLinger {
			delete(w.chans, ch)
			continue
		}
		names = append(names, ch)
	}
	if len(names) == 0 || w.closed {
		p.running = false
		return nil, false
	}
	return names, true
}

// pump owns one node's subscription.
type pump struct {
	w       *waker
	i       int
	node    driver.Subscriber
	kick    chan struct{} // a channel was added
	running bool          // guarded by w.mu
	down    bool          // the last subscription failed; guarded by w.mu
}

// handler passes what node i hears to the waker.
type handler struct {
	w *waker
	i int
}

func (h handler) Message(channel, payload string) { h.w.notify(channel, payload) }
func (h handler) Subscribed(channel string)       { h.w.answer(h.i, channel, true) }

func (p *pump) run() {
	var sub driver.Subscription
	have := map[string]bool{}
	defer func() {
		if sub != nil {
			sub.Close()
		}
	}()
	sweep := time.NewTicker(wakeLinger / 2)
	defer sweep.Stop()
	reopen := minReopen
	var opened time.Time // when sub was opened
	// lost ends sub, which failed, and waits before the next is opened:
	// not at all after a subscription that lasted (one cut costs no
	// announcement), reopen after one that failed soon after it was opened.
	// Each subscription made again wakes the waiters of its channels (see
	// [waker.answer]), so a node that keeps dropping them must not set the
	// pace of its waiters' attempts. It returns false when the manager
	// closes meanwhile.
	lost := func() bool {
		sub.Close()
		sub = nil
		p.w.failed(p.i)
		if time.Since(opened) >= healthySub {
			reopen = minReopen
			return true
		}
		ok := p.pause(reopen)
		reopen = min(2*reopen, maxReopen)
		return ok
	}
	for {
		want, ok := p.w.wanted(p)
		if !ok {
			return
		}
		if sub == nil {
			var err error
			if sub, err = p.open(); err != nil {
				p.w.failed(p.i)
				if !p.pause(reopen) {
					return
				}
				reopen = min(2*reopen, maxReopen)
				continue
			}
			opened = time.Now()
			clear(have)
			p.w.setDown(p.i, false)
		}
		if err := p.update(sub, want, have); err != nil {
			if !lost() {
				return
			}
			continue
		}
		select {
		case <-p.kick:
		case <-sweep.C:
		case <-sub.Done():
			if !lost() {
				return
			}
		case <-p.w.ctx.Done():
			return
		}
	}
}

func (p *pump) open() (driver.Subscription, error) {
	ctx, cancel := context.WithTimeout(p.w.ctx, openTimeout)
	defer cancel()
	return p.node.Subscribe(ctx, handler{p.w, p.i})
}

// update subscribes to the wanted channels sub does not hold yet and
// unsubscribes from those no longer wanted.
func (p *pump) update(sub driver.Subscription, want []string, have map[string]bool) error {
	var add, drop []string
	wanted := make(map[string]bool, len(want))
	for _, ch := range want {
		wanted[ch] = true
		if !have[ch] {
			add = append(add, ch)
		}
	}
	for ch := range have {
		if !wanted[ch] {
			drop = append(drop, ch)
		}
	}
	ctx, cancel := context.WithTimeout(p.w.ctx, p.w.timeout)
	defer cancel()
	if len(add) > 0 {
		if err := sub.Subscribe(ctx, add...); err != nil {
			return err
		}
		for _, ch := range add {
			have[ch] = true
		}
	}
	if len(drop) > 0 {
		if err := sub.Unsubscribe(ctx, drop...); err != nil {
			return err
		}
		for _, ch := range drop {
			delete(have, ch)
		}
	}
	return nil
}

// pause waits d, or returns false when the manager closes first.
func (p *pump) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.w.ctx.Done():
		return false
	}
}
