package round

import (
	"sync/atomic"
	"time"
)

// RTO is one node's learned timeout: how long a request to the node waits
// for its reply, learned from the node's recent round trips as TCP learns
// its retransmission timeout (RFC 6298), between a floor and a cap that
// each request gives ([Request.Timeout], [Request.Cap]):
//
//   - each reply is a sample R of the round trip, from the request's send
//     to its reply; the first sets SRTT = R and RTTVAR = R/2, each later
//     one RTTVAR = 3/4·RTTVAR + 1/4·|SRTT - R| and then SRTT = 7/8·SRTT +
//     1/8·R (alpha 1/8, beta 1/4);
//   - the timeout is SRTT + max(G, 4·RTTVAR), RFC 6298's formula with the
//     floor as its clock granularity G: at least the floor, and a floor's
//     margin above the smoothed round trip of a steady node (as Linux
//     bounds the variance term by its minimum RTO), so that a node whose
//     round trips do not vary still has room for one that takes longer;
//   - until the node has answered once, the timeout is the cap, as RFC
//     6298 starts at a conservative second: a manager that starts among
//     many busy clients, whose nodes cannot answer within the floor, gets
//     answers, and samples, from its first requests, rather than timing
//     out and backing off from the floor while the others it competes
//     with do the same;
//   - a request that waited the node's whole timeout in vain doubles it
//     (the backoff), up to the cap, so that a busy node gets more time
//     rather than a storm of requests that all give up; requests that were
//     sent under a shorter timeout than the current one, and time out with
//     it, double it no further;
//   - the next reply's sample sets the timeout from the formula again,
//     backoff dropped (Karn's algorithm: only replies are samples, never a
//     request that failed or timed out, and the timeout learned from them
//     replaces the one backed off).
//
// It keeps SRTT and RTTVAR in microseconds, with the backoff, in one
// atomic word: the many requests to one node share it, without a lock or
// an allocation. A zero RTO has no sample: its timeout is the cap.
type RTO struct {
	state atomic.Uint64
}

// The fields of an RTO's state word.
const (
	srttBits   = 30 // SRTT in µs: up to 17 minutes
	rttvarBits = 29 // RTTVAR in µs: up to 8 minutes
	srttMax    = 1<<srttBits - 1
	rttvarMax  = 1<<rttvarBits - 1
	// measuredBit is set by the first sample.
	measuredBit = 1 << (srttBits + rttvarBits)
	backoffAt   = srttBits + rttvarBits + 1
	// maxBackoff is the most doublings kept: 2^15 times any floor is past
	// any cap a request gives.
	maxBackoff = 1<<(64-backoffAt) - 1
)

// Timeout returns how long a request to the node waits for its reply,
// given floor and limit, the request's bounds: between them, and floor
// itself when limit is not above it (a fixed timeout).
func (r *RTO) Timeout(floor, limit time.Duration) time.Duration {
	if limit <= floor {
		return floor
	}
	return timeoutOf(r.state.Load(), floor, limit)
}

// timeoutOf is the timeout of state s between floor and limit, which is
// above floor.
func timeoutOf(s uint64, floor, limit time.Duration) time.Duration {
	if s&measuredBit == 0 {
		return limit
	}
	srtt := time.Duration(s&srttMax) * time.Microsecond
	rttvar := time.Duration(s>>srttBits&rttvarMax) * time.Microsecond
	base := srtt + max(floor, 4*rttvar)
	if k := s >> backoffAt; k > 0 {
		if base > limit>>k {
			return limit
		}
		base <<= k
	}
	return min(base, limit)
}

// SRTT returns the node's smoothed round trip, 0 before its first sample.
func (r *RTO) SRTT() time.Duration {
	s := r.state.Load()
	if s&measuredBit == 0 {
		return 0
	}
	return time.Duration(s&srttMax) * time.Microsecond
}

// Sample records a reply that came rtt after its request was sent, and
// drops the backoff.
func (r *RTO) Sample(rtt time.Duration) {
	us := uint64(min(max(rtt, 0)/time.Microsecond, srttMax))
	for {
		old := r.state.Load()
		srtt, rttvar := us, us/2
		if old&measuredBit != 0 {
			s, v := old&srttMax, old>>srttBits&rttvarMax
			diff := s - us
			if us > s {
				diff = us - s
			}
			rttvar = v - v/4 + diff/4
			srtt = s - s/8 + us/8
		}
		next := min(srtt, srttMax) | min(rttvar, rttvarMax)<<srttBits | measuredBit
		if r.state.CompareAndSwap(old, next) {
			return
		}
	}
}

// Expired records a request to the node that waited for waited, bounded by
// floor and limit, and timed out: it doubles the node's timeout, up to
// limit, unless waited is shorter than the timeout already is (the request
// was sent before another's timeout doubled it).
func (r *RTO) Expired(waited, floor, limit time.Duration) {
	if limit <= floor {
		return
	}
	for {
		old := r.state.Load()
		cur := timeoutOf(old, floor, limit)
		if waited < cur || cur >= limit || old>>backoffAt == maxBackoff {
			return
		}
		if r.state.CompareAndSwap(old, old+1<<backoffAt) {
			return
		}
	}
}
