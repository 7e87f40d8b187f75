package dlm

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Admission of auto-extended locks: a Manager takes no more of them than
// it has measured it can keep extended.
//
// The rule. Each auto-extended lock owes its nodes one renewal per
// renewal interval, the wait [autoExtension.nextExtension] gives a fresh
// lock: the Manager's demand is the sum, over the locks it keeps extended,
// of 1/interval, in renewals a second. Its cost is the time a renewal
// takes, measured on the rounds themselves: for each node, the time it
// had batches in flight (to their settling) divided by the renewals they
// carried, over the last one to two seconds ([costMeter]), the nodes
// taken at the quorum's (the q-th cheapest: a slow minority does not keep
// the locks), and the extender's own time per renewal if that is more.
// demand × cost is the share of its time the Manager spends renewing.
// A new auto-extended lock is admitted only while that share, its own
// included, stays within admitShare; otherwise the call that asks for it
// fails with [ErrOverloaded] before it sends anything. Before any round
// was measured every lock is admitted: the first rounds, a renewal
// interval after the first locks, measure. So is every lock while no
// renewal succeeded on a quorum lately (the cost reads +Inf): failing
// nodes are no slowness of the Manager's, and the acquire itself tells
// whether they answer; a Manager that just saw an outage does not refuse
// locks once its nodes are back.
//
// The invariant: an admitted lock is not lost to the Manager's own
// slowness while the nodes answer as they did when it was admitted. When
// they slow down after, so that the share passes shedFrom, the Manager
// lets go of its newest auto-extended locks ([extender.shed]), each lost
// with an error wrapping [ErrOverloaded] and [ErrLockLost] while it is
// still valid, until the share is back to shedTo: the older locks keep
// the renewals they need, rather than every lock going late together.
const (
	admitShare = 0.7
	shedFrom   = 1.0
	shedTo     = 0.85
	// meterWindow is the span of one of a costMeter's two windows.
	meterWindow = 500 * time.Millisecond
)

// costMeter measures the time a renewal takes on one resource (a node,
// or the extender's goroutine): the busy time and the renewals of the
// current window and the one before it.
type costMeter struct {
	since          time.Time // the current window's start
	busy, prevBusy time.Duration
	n, prevN       int
}

// add counts n renewals that kept the resource busy for busy, at now.
func (c *costMeter) add(now time.Time, busy time.Duration, n int) {
	if d := now.Sub(c.since); d >= meterWindow {
		c.prevBusy, c.prevN = c.busy, c.n
		if d >= 2*meterWindow {
			c.prevBusy, c.prevN = 0, 0
		}
		c.since, c.busy, c.n = now, 0, 0
	}
	c.busy += busy
	c.n += n
}

// cost is the busy time a renewal took, in seconds: 0 when nothing was
// measured, +Inf when the resource was busy and renewed nothing (every
// batch failed).
func (c *costMeter) cost() float64 {
	n, busy := c.n+c.prevN, c.busy+c.prevBusy
	switch {
	case n > 0:
		return busy.Seconds() / float64(n)
	case busy > 0:
		return math.Inf(1)
	}
	return 0
}

// renewalRate is how many renewals a second a lock taken with cfg owes
// its nodes when auto-extended: one per the wait nextExtension gives a
// fresh lock, before jitter.
func renewalRate(cfg *config) float64 {
	r := defaultRemaining
	if a := cfg.autoExtend; a != nil && a.Remaining != 0 {
		r = a.Remaining
	}
	v := cfg.validity(cfg.ttl)
	atShare := v - time.Duration(r*float64(v))
	due := max(min(atShare, v-2*cfg.timeout()), atShare/2)
	return float64(time.Second) / float64(max(due, time.Millisecond))
}

// renewalCost is the measured time a renewal takes the Manager, in
// seconds: the nodes' at the quorum's, or the extender's own if more; 0
// before the rounds measured it, +Inf when the quorum's node renewed
// nothing lately.
func (x *extender) renewalCost() float64 {
	costs := make([]float64, 0, len(x.m.nodes))
	for _, n := range x.m.nodes {
		n.sender.mu.Lock()
		if c := n.sender.meter.cost(); c > 0 {
			costs = append(costs, c)
		}
		n.sender.mu.Unlock()
	}
	q := len(x.m.nodes)/2 + 1
	var nodes float64
	if len(costs) >= q {
		slices.Sort(costs)
		nodes = costs[q-1]
	}
	x.mu.Lock()
	own := x.meter.cost()
	x.mu.Unlock()
	return max(nodes, own)
}

// admit reserves the renewals a lock taken with cfg would owe, or returns
// an error wrapping [ErrOverloaded] when the Manager cannot keep it
// extended. The caller gives the reservation back with unreserve once
// the lock is taken (its auto-extension then counts it) or was not.
func (x *extender) admit(cfg *config) (float64, error) {
	rate := renewalRate(cfg)
	cost := x.renewalCost()
	x.mu.Lock()
	defer x.mu.Unlock()
	owed := x.owed + x.reserved
	switch {
	case cost > 0 && !math.IsInf(cost, 1) && (owed+rate)*cost > admitShare:
		return 0, fmt.Errorf("%w: %.0f renewals a second owed, %.0f more asked, against %.0f measured (%.0f%% admitted at most)",
			ErrOverloaded, owed, rate, 1/cost, admitShare*100)
	}
	x.reserved += rate
	return rate, nil
}

// unreserve gives back a reservation of admit.
func (x *extender) unreserve(rate float64) {
	x.mu.Lock()
	x.reserved = max(x.reserved-rate, 0)
	x.mu.Unlock()
}

// admitAuto is the admission check of a call that takes a lock with cfg
// ([Manager.take]): it returns the reservation to give back once the
// lock is taken or not, or the refusal. A call without auto-extension
// needs none.
func (m *Manager) admitAuto(cfg *config) (release func(), err error) {
	if cfg.autoExtend == nil {
		return func() {}, nil
	}
	rate, err := m.extender.admit(cfg)
	if err != nil {
		return nil, err
	}
	return func() { m.extender.unreserve(rate) }, nil
}

// counted adds a, just started, to the locks the extender keeps extended:
// its renewals to what is owed, and a to the admission order. x.mu is
// held.
func (x *extender) counted(a *autoExtension) {
	a.rate = renewalRate(&a.l.cfg)
	x.owed += a.rate
	x.admitted = append(x.admitted, a)
}

// uncounted takes a, whose extension just stopped (its state is
// autoStopped), out of what is owed; its place in the admission order is
// dropped lazily. x.mu is held.
func (x *extender) uncounted(a *autoExtension) {
	x.owed -= a.rate
	if x.dropped++; x.dropped > len(x.admitted)/2 && x.dropped >= compactFrom {
		x.admitted = slices.DeleteFunc(x.admitted, func(a *autoExtension) bool { return a.state == autoStopped })
		x.dropped = 0
		x.owed = 0
		for _, a := range x.admitted {
			x.owed += a.rate
		}
	}
	x.owed = max(x.owed, 0)
}

// shed lets go of the newest auto-extended locks while the renewals owed
// take more than shedFrom of the measured capacity, until they take
// shedTo: each is lost, at once, with an error wrapping [ErrOverloaded]
// and [ErrLockLost], and no longer extended; its keys run out on the
// nodes unless Unlock deletes them. While no renewal succeeds on a quorum
// (+Inf), it lets none go: that is no slowness of the Manager's, and the
// locks are lost, if they are, for the nodes' failures.
func (x *extender) shed() {
	cost := x.renewalCost()
	if cost <= 0 || math.IsInf(cost, 1) {
		return
	}
	x.mu.Lock()
	if x.owed*cost <= shedFrom {
		x.mu.Unlock()
		return
	}
	owed, was := x.owed, x.owed
	var out []*autoExtension
	for i := len(x.admitted) - 1; i >= 0 && owed*cost > shedTo; i-- {
		a := x.admitted[i]
		if a.state == autoStopped {
			continue
		}
		owed -= a.rate
		out = append(out, a)
	}
	x.mu.Unlock()
	for _, a := range out {
		l := a.l
		x.stop(l)
		l.mu.Lock()
		l.lose(fmt.Errorf("dlm: %s %q: let go of, newest first, as the manager can no longer renew every lock it holds (%.0f renewals a second owed, %.0f measured): %w: %w",
			l.what(), l.Key(), was, 1/cost, ErrLockLost, ErrOverloaded))
		l.unlockMu()
	}
}

// measureRound counts a round of n renewals that kept the extender's
// goroutine busy for busy.
func (x *extender) measureRound(now time.Time, busy time.Duration, n int) {
	x.mu.Lock()
	x.meter.add(now, busy, n)
	x.mu.Unlock()
}
