package wake

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// Timing of the subscriptions behind the wake-up of waiters.
const (
	// Linger is how long a channel stays subscribed after its last waiter
	// left, so that a busy key is not subscribed and unsubscribed for every
	// waiter.
	Linger = 10 * time.Second
	// MinReopen and MaxReopen bound the pause before a node's failed
	// subscription is opened again; it doubles after each failure, and
	// starts again from MinReopen after a subscription that lasted
	// healthySub.
	MinReopen = 100 * time.Millisecond
	MaxReopen = 5 * time.Second
	// healthySub is how long a subscription must have lasted for its
	// failure to be followed by another at once; one that failed sooner is
	// opened again only after the pause, which doubles up to MaxReopen
	// while subscriptions keep failing young.
	healthySub = MaxReopen
	// openTimeout bounds the opening of a subscription connection.
	openTimeout = 5 * time.Second
)

// Waker tells waiting calls that a lock they wait for was released. It
// holds one subscription per node that implements [driver.Subscriber],
// shared by all of its watchers, each owned by a goroutine (a pump) that
// keeps it subscribed to the channels watchers need and opens it again when
// it fails. A pump ends when no channel has been needed for [Linger], or
// when the Waker closes. A Waker is safe for concurrent use.
type Waker struct {
	id      string          // the manager's id, which its waiters' ids begin with
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	spawn   func(func())
	timeout time.Duration // bounds SUBSCRIBE and UNSUBSCRIBE writes
	pumps   []*pump       // by node; nil where the node cannot subscribe
	live    int           // pumps that are not nil

	logger *slog.Logger // nil for none
	// ignored counts the malformed wake messages heard (see [parse]).
	ignored atomic.Uint64

	mu     sync.Mutex
	closed bool
	chans  map[string]*wakeChan
	named  map[string]*Watcher // the watchers with an id, by id
	// unwatched holds, by channel and id, the nodes that named a waiter of
	// this manager that had no watcher yet (see [Waker.keepUnwatched]).
	unwatched map[unwatchedKey]*unwatched
}

// wakeChan is one channel and the waiters listening on it.
type wakeChan struct {
	// named marks a manager's channel, on which releases name waiters; a
	// broadcast channel otherwise.
	named    bool
	watchers map[*Watcher]struct{}
	idle     time.Time // when the last watcher left; zero while watched
	// answered marks, by node, a confirmed subscription or a failure to
	// subscribe; ready is closed when every pump has answered.
	answered []bool
	left     int
	ready    chan struct{}
	readyAt  time.Time // when ready was closed
}

// New returns a Waker for the nodes, or nil when none can subscribe. id is
// the manager's id ([ValidManagerID]), which the ids of the waiters it
// wakes by name begin with. It starts each pump with spawn, whose caller
// waits for the goroutines it started once the Waker is closed; timeout
// bounds each SUBSCRIBE and UNSUBSCRIBE, and logger (nil for none) hears of
// malformed wake messages, at debug level.
func New(id string, nodes []driver.Node, spawn func(func()), timeout time.Duration, logger *slog.Logger) *Waker {
	w := &Waker{id: id, spawn: spawn, timeout: timeout, logger: logger, pumps: make([]*pump, len(nodes)),
		chans: map[string]*wakeChan{}, named: map[string]*Watcher{}}
	for i, n := range nodes {
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

// Close stops the pumps, which end promptly; the goroutines spawned for
// them are for New's caller to wait for. Watch returns nil afterwards.
func (w *Waker) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
}

// Ignored returns how many malformed wake messages w heard and ignored.
func (w *Waker) Ignored() uint64 { return w.ignored.Load() }

// Watch registers interest in the release of the lock keys rkeys. A waiter
// with an id ([ValidWaiterID], beginning with the manager's id) listens on
// its manager's channel of each key, where the releases that hand it a key
// name it; a waiter without an id (id "") listens on the keys' broadcast
// channels, where the releases that hand a key to no waiter announce it.
// need is how many nodes must name the waiter, or announce a release, for
// [Watcher.Wait] to end at once: the quorum of the waiter's attempts, so
// that the attempt comes once the release reached enough nodes. The nodes
// that named a waiter with an id on a channel w listened on already, in
// the two node timeouts before it watched (after its first attempt was
// refused), count as naming it ([Waker.keepUnwatched]). Watch makes sure
// the pumps subscribe to the channels, and returns nil once w is closed.
// The caller stops the Watcher when it no longer waits.
func (w *Waker) Watch(rkeys []string, id string, need int) *Watcher {
	need = max(need, 1)
	wt := &Watcher{w: w, chans: make([]string, len(rkeys)), id: id, need: need, c: make(chan struct{}, 1),
		heard: make([]bool, len(w.pumps)), late: make([]bool, len(w.pumps))}
	fresh := false
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	if id != "" {
		w.named[id] = wt
	}
	var early []int // nodes that named the waiter before it watched
	for i, k := range rkeys {
		ch := script.WakeChannel(k)
		if id != "" {
			ch = script.ManagerChannel(k, w.id)
			early = append(early, w.takeUnwatched(ch, id)...)
		}
		wt.chans[i] = ch
		wc := w.chans[ch]
		if wc == nil {
			wc = w.newChan(id != "")
			w.chans[ch] = wc
			fresh = true
		}
		wc.watchers[wt] = struct{}{}
		wc.idle = time.Time{}
	}
	start := w.kickLocked(fresh)
	w.mu.Unlock()
	for _, p := range start {
		w.spawn(p.run)
	}
	for _, i := range early {
		wt.hear(i, false)
	}
	return wt
}

// Widen makes the waiter wt, which has an id, hear the releases announced
// on the broadcast channels of rkeys too, each counted as a node naming
// it: for a waiter whose keys others wait for on those channels (a process
// of the previous release, whose releases name nobody of this one), so
// that it need not find the keys free by its retry pace alone. One node
// announcing such a release wakes it ([Watcher.Wait]), as it wakes the
// previous release's own waiters, which would otherwise take every key
// first. Widening twice, or a watcher of the broadcast channels, changes
// nothing.
func (w *Waker) Widen(wt *Watcher, rkeys []string) {
	if wt == nil || wt.id == "" || wt.widened {
		return
	}
	wt.widened = true
	fresh := false
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	for _, k := range rkeys {
		ch := script.WakeChannel(k)
		wt.chans = append(wt.chans, ch)
		wc := w.chans[ch]
		if wc == nil {
			wc = w.newChan(false)
			w.chans[ch] = wc
			fresh = true
		}
		wc.watchers[wt] = struct{}{}
		wc.idle = time.Time{}
	}
	start := w.kickLocked(fresh)
	w.mu.Unlock()
	for _, p := range start {
		w.spawn(p.run)
	}
}

// kickLocked has the pumps subscribe to a channel new in w.chans, when
// fresh: it signals the running ones and returns those to start. Called
// with w.mu held.
func (w *Waker) kickLocked(fresh bool) []*pump {
	if !fresh {
		return nil
	}
	var start []*pump
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
	return start
}

// newChan returns a channel record in which the pumps known to be down have
// answered already. Called with w.mu held.
func (w *Waker) newChan(named bool) *wakeChan {
	wc := &wakeChan{named: named, watchers: map[*Watcher]struct{}{}, answered: make([]bool, len(w.pumps)), left: w.live, ready: make(chan struct{})}
	for i, p := range w.pumps {
		if p != nil && p.down {
			wc.answered[i] = true
			wc.left--
		}
	}
	if wc.left == 0 {
		close(wc.ready)
		wc.readyAt = time.Now()
	}
	return wc
}

// malformed counts a wake message that [parse] refused, and logs it at
// debug level by its channel and length only: its bytes are whatever a
// publisher chose to send.
func (w *Waker) malformed(channel string, length int) {
	n := w.ignored.Add(1)
	ctx := context.Background()
	if w.logger == nil || !w.logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	w.logger.LogAttrs(ctx, slog.LevelDebug, "dlm: malformed wake message ignored",
		slog.String("channel", channel), slog.Int("length", length), slog.Uint64("ignored", n))
}

// answer records that node i confirmed channel, or failed to subscribe to
// it. A confirmation that comes after the channel was ready is a
// subscription made again after a failure (the handler passes on only the
// answers to the SUBSCRIBEs a pump sent, [handler.Subscribed]): releases
// may have been missed meanwhile, so its watchers are woken to try again;
// so are the watchers that stopped waiting for the channel to be ready
// before it was.
func (w *Waker) answer(i int, channel string, confirmed bool) {
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
			wc.readyAt = time.Now()
			// A watcher that stopped waiting for the subscriptions
			// (Ready's bound) attempted without them: a release between
			// that attempt and now went unheard.
			for wt := range wc.watchers {
				if wt.unready.Swap(false) {
					wt.mu.Lock()
					wt.resub = true
					wt.mu.Unlock()
					signal(wt.c)
				}
			}
		}
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	if confirmed {
		w.resubscribed(channel) // releases may have gone unheard
	}
}

// live returns how many nodes' subscriptions are not down. Called with
// w.mu held.
func (w *Waker) liveLocked() int {
	n := 0
	for _, p := range w.pumps {
		if p != nil && !p.down {
			n++
		}
	}
	return n
}

// setDown records whether node i's subscription is down.
func (w *Waker) setDown(i int, down bool) {
	w.mu.Lock()
	w.pumps[i].down = down
	w.mu.Unlock()
}

// failed records that node i cannot subscribe at the moment.
func (w *Waker) failed(i int) {
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
// returns false: p's goroutine ends, and the next Watch starts another.
func (w *Waker) wanted(p *pump) ([]string, bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	names := make([]string, 0, len(w.chans))
	for ch, wc := range w.chans {
		if len(wc.watchers) == 0 && now.Sub(wc.idle) >= Linger {
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
