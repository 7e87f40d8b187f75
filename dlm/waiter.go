package dlm

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// A waiter is a waiting Lock call's place in the nodes' lines of its keys
// (see package script's line): a node that refuses an attempt gives it a
// place, and the release that frees a key hands it to the head of the line
// and names that waiter on its manager's channel, which wakes it alone. A
// waiter's id begins with its manager's ([waiting.id]), so that the nodes
// name it on that manager's channel.
//
// Every waiting call of the mutex has one when its manager can hear wake
// messages or it waits with [WithFairness]; TryLock, whose attempt takes no
// place, and the shared leases, which wait for any release, have none.
type waiter struct {
	id string
	// ticket orders the waiter in every line alike: when it began to wait,
	// in microseconds of the wall clock.
	ticket int64
	// placed says that a node refused an attempt, and so may hold a place
	// for the waiter, which it must give up if it stops waiting.
	placed bool
	// heldFor is how long the holders that refused the last attempt keep
	// the keys from a quorum if they neither extend nor release them, by
	// the PTTLs the refusals carried ([round.Vote.FreeIn]); 0 when they
	// cannot tell. A holder that crashed announces nothing: the waiter
	// tries again once the keys ran out.
	heldFor time.Duration
	// unnamed says that enough nodes that refused the last attempt had
	// others listening on the key's broadcast channel (round.Vote's
	// Listened: not one node alone): a process of the previous release may
	// hold or wait for the key, and its release names nobody.
	unnamed bool
	// woken says that a wake-up started the current attempt: the keys
	// were handed to the waiter, and the release of the attempt, if it
	// fails, keeps them reserved for it ([script.ReleaseKeepTurn]).
	woken bool
	// life is how long the place its current attempt gives or renews
	// lasts (see [config.placeLife]).
	life time.Duration
	// released is closed once the release of the waiter's last failed
	// attempt has ended on every node, also those whose replies came after
	// the attempt's outcome was known; nil before its first.
	released <-chan struct{}
}

// waiting is how a manager's callers wait for a lock held elsewhere: in
// the manager's queue of the callers that want the same keys
// (handover.go), and in the nodes' lines, as waiters woken by the
// releases that name them on the manager's wake channels.
type waiting struct {
	// id begins the ids of the manager's waiters, by which the releases
	// name them on the manager's own wake channels.
	id    string
	waker *wake.Waker // nil when no node implements driver.Subscriber
	local localQueues
}

// newWaiter returns a waiter of the manager whose id is managerID, with
// an id of its own that begins with managerID, and the ticket of a waiter
// that begins to wait at now, by the wall clock. The id is not a secret
// (the releases announce it, the lines hold it): it need only differ from
// every other waiter's of the manager, which the process's count of
// waiters, in URL-safe base64 after the manager's random id, makes sure of.
func newWaiter(managerID string, now time.Time) *waiter {
	var b [script.WaiterIDLen]byte
	copy(b[:], managerID)
	n := lastWaiter.Add(1)
	for i := len(b) - 1; i >= script.ManagerIDLen; i-- {
		b[i] = idAlphabet[n&63]
		n >>= 6
	}
	return &waiter{id: string(b[:]), ticket: nextTicket(now)}
}

// lastWaiter counts the waiters of this process, for their ids.
var lastWaiter atomic.Uint64

// idAlphabet is URL-safe base64's, the alphabet of a waiter's id.
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// lastTicket is the last ticket a waiter of this process was given.
var lastTicket atomic.Int64

// nextTicket returns a ticket for a waiter that begins to wait at now: its
// µs of the wall clock, or one more than the process's last ticket when
// that is as late, so that the waiters of one process are ordered as they
// asked even within one µs (or when a test holds the clock still).
func nextTicket(now time.Time) int64 {
	t := now.UnixMicro()
	for {
		last := lastTicket.Load()
		next := max(t, last+1)
		if lastTicket.CompareAndSwap(last, next) {
			return next
		}
	}
}

// waiterID is w's id, "" for none.
func (w *waiter) waiterID() string {
	if w == nil {
		return ""
	}
	return w.id
}

// waiterArgs appends to dst the acquire scripts' waiter arguments: the id, the life of
// a place, the ticket, the bound of a line and fairness.
func waiterArgs(dst []string, cfg *config, w *waiter) []string {
	fair := "0"
	if cfg.fair != nil {
		fair = "1"
	}
	var ticket int64
	life := DefaultPlaceExpiry
	if w != nil {
		ticket, life = w.ticket, w.life
	}
	return append(dst, w.waiterID(), ttlMillis(life), strconv.FormatInt(ticket, 10), decimal(int64(cfg.lineBound())), fair)
}

// placeLife is how long the place of a waiter's attempt number attempt
// lasts without another attempt: with fairness, [Fairness.Expiry], which
// the waiter's attempts then come at least every third of; otherwise the
// longer of [DefaultPlaceExpiry] and twice the longest wait before the
// next attempt, so that a waiter keeps its place at its own retry pace. A
// waiter that died without leaving keeps a place that long, and a release
// then hands a key to it: the key waits for it for [config.reservation].
func (c *config) placeLife(attempt int) time.Duration {
	if c.fair != nil {
		return c.fair.expiry(c.timeout())
	}
	return max(DefaultPlaceExpiry, 2*c.retry.backoff(attempt))
}

// untilTurn is how long a placed waiter refused by a holder waits before
// its next attempt, number attempt, which its retry pace alone would begin
// after wait. When its manager hears the releases, which name the
// waiter when they hand it the keys, the attempt only renews its place: it
// comes a sixth to a third of the place's life later, if that is longer;
// but not while others listen on the broadcast channel, whose releases may
// name nobody (a fleet in the middle of an upgrade): the waiter keeps its
// retry pace then. Either way it comes no later than when the refusing
// holders' keys run out on enough nodes for a quorum unless extended (and a
// millisecond, the PTTL's rounding): a holder that crashed announces
// nothing, and its keys are free then. But the nodes never bring it sooner
// than a node timeout after the attempt, the time an attempt may take
// anyway: where one node's refusal alone tells when a quorum could be free
// (see [round.Vote.FreeIn]), a node that said a millisecond would set the
// waiter's pace, and with it the load of every node. The retry pace, the
// caller's, may be faster.
func (w *waiter) untilTurn(cfg *config, attempt int, wait time.Duration, hears bool) time.Duration {
	if hears && !w.unnamed {
		wait = max(wait, jitter(cfg.placeLife(attempt)/3))
	}
	if w.heldFor > 0 {
		wait = min(wait, max(w.heldFor+time.Millisecond, cfg.timeout()))
	}
	return wait
}

// lineBound is how many waiters a line of a node has room for.
func (c *config) lineBound() int {
	if c.fair != nil {
		return c.fair.maxWaiters()
	}
	return DefaultMaxWaiters
}

// maxWait caps the pause between the attempts of a fair waiter, which
// renew its place; 0 for no cap.
func (c *config) maxWait() time.Duration {
	if c.fair == nil {
		return 0
	}
	return c.fair.expiry(c.timeout()) / 3
}

// reservation is how long a key a release hands on stays reserved for the
// waiter it names: two node timeouts, for the wake message to reach the
// waiter and its attempt the node. A waiter that died or left holds the
// key up that long at most.
func (c *config) reservation() time.Duration { return 2 * c.timeout() }

// leave gives up w's place in the lines of rkeys on every node, and hands on
// each key a node reserved for it: at once, before it returns (ctx only
// carries its values: the release runs even when ctx is done, each node
// bounded by the node timeout), and again the cap of a learned node
// timeout later (see [timing.timeoutCap]), in the background, since a
// request of the waiter's last attempt, which may wait that long, may have
// given it a place after the first pass. A place left behind would make a
// release hand the key to a waiter that left: the key would stay reserved
// for it for [config.reservation].
func (q *quorumRounds) leave(ctx context.Context, cfg *config, rkeys []string, w *waiter) {
	req := &round.Request{
		Op: opLock, Script: script.Leave, Keys: append(rkeys[:len(rkeys):len(rkeys)], script.LinesOf(rkeys)...),
		Args: []string{w.id, ttlMillis(cfg.reservation())}, Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(),
	}
	req.Announce(loudFlag, allNodes)
	q.Poll(context.WithoutCancel(ctx), req)
	q.work.Spawn(func() {
		t := time.NewTimer(cfg.timeoutCap())
		defer t.Stop()
		select {
		case <-t.C:
		case <-q.done:
		}
		q.Poll(context.Background(), req)
	})
}

// allNodes marks every node in a request's Loud mask.
const allNodes = ^uint64(0)
