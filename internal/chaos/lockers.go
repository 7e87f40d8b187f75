package chaos

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// Locker is what the suite drives: the real manager or a deliberately
// broken variant.
type Locker interface {
	// TryLock makes one attempt to take key for ttl.
	TryLock(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	// Lock retries until it obtains the lock or ctx ends.
	Lock(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	Close() error
}

// Lease is a held lock.
type Lease interface {
	// Until is the end of the validity by the monotonic clock: the holder
	// acts only before it.
	Until() time.Time
	// Token is the fencing token, 0 when there is none.
	Token() uint64
	Unlock(ctx context.Context) error
}

// Extender is a Lease that can be extended.
type Extender interface {
	Extend(ctx context.Context, ttl time.Duration) error
}

// ManagerLocker drives a real [dlm.Manager]; Opts apply to every call.
type ManagerLocker struct {
	M    *dlm.Manager
	Opts []dlm.Option
}

func (l ManagerLocker) TryLock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	lk, err := l.M.TryLock(ctx, key, l.opts(ttl)...)
	if err != nil {
		return nil, err
	}
	return managerLease{lk}, nil
}

func (l ManagerLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	lk, err := l.M.Lock(ctx, key, l.opts(ttl)...)
	if err != nil {
		return nil, err
	}
	return managerLease{lk}, nil
}

func (l ManagerLocker) Close() error { return l.M.Close() }

func (l ManagerLocker) opts(ttl time.Duration) []dlm.Option {
	return append(append([]dlm.Option(nil), l.Opts...), dlm.WithTTL(ttl))
}

// managerLease is a held lock; its Token is the fencing token, which the
// checker requires to increase.
type managerLease struct{ *dlm.Lock }

// Flaw selects how a [ToyLocker] is broken.
type Flaw int

const (
	// Sound is a correct Redlock: SET NX, a majority, the drift subtracted.
	Sound Flaw = iota
	// NoNX sets the key whether or not another holder has it.
	NoNX
	// QuorumOne counts the lock obtained when any single node granted it.
	QuorumOne
	// NoDrift computes the validity as ttl - elapsed, with no allowance for
	// the client's clock running at another rate than the nodes'.
	NoDrift
	// NoValidityCheck skips the validity check: it counts a majority of
	// yeses as a grant however long the replies took, and counts the
	// validity from the moment the replies arrived instead of from the
	// request, so a client whose replies were delayed past the TTL
	// believes it holds keys that have already expired on the nodes.
	NoValidityCheck
)

func (f Flaw) String() string {
	switch f {
	case Sound:
		return "sound"
	case NoNX:
		return "set-without-nx"
	case QuorumOne:
		return "quorum-1"
	case NoDrift:
		return "no-drift"
	case NoValidityCheck:
		return "no-validity-check"
	}
	return fmt.Sprintf("Flaw(%d)", int(f))
}

// The toy lockers' scripts, their own: the suite cannot change the core's.
var (
	toyAcquireNX = driver.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`)
	toyAcquireOverwrite = driver.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)
	toyRelease = driver.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
)

// ToyLocker is a small Redlock of the suite's own, over the same nodes as
// the real manager, that can be broken on purpose (Flaw) to prove that the
// checker catches the flaw.
//
// ClockRate models a client whose clock runs at another rate than the
// nodes': a rate of 0.95 means that the client measures 95 ms for every 100
// ms that pass on the nodes, and so believes its lock lasts longer than the
// nodes keep it. The drift allowance (DriftFactor × TTL + 2 ms) exists for
// this: a sound toy with DriftFactor > 1 - ClockRate stays safe, a NoDrift
// toy does not. On one machine every clock runs at one rate, so the rate is
// how the suite brings that fault about.
type ToyLocker struct {
	Nodes       []driver.Node
	Flaw        Flaw
	DriftFactor float64
	ClockRate   float64 // 0 means 1
	NodeTimeout time.Duration
	Prefix      string
	// RetryDelay bounds the random wait between attempts of Lock.
	RetryDelay time.Duration
	// Owned nodes are closed by Close.
	Owned bool
}

func (l *ToyLocker) rate() float64 {
	if l.ClockRate == 0 {
		return 1
	}
	return l.ClockRate
}

func (l *ToyLocker) quorum() int {
	if l.Flaw == QuorumOne {
		return 1
	}
	return len(l.Nodes)/2 + 1
}

// TryLock makes one attempt on all nodes at once.
func (l *ToyLocker) TryLock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b[:])
	rkey := l.Prefix + key
	script := toyAcquireNX
	if l.Flaw == NoNX {
		script = toyAcquireOverwrite
	}
	start := time.Now()
	yes := l.all(ctx, script, rkey, token, fmt.Sprint(ttl.Milliseconds()))
	// What the client's clock says elapsed, and the validity by it.
	elapsed := time.Duration(float64(time.Since(start)) * l.rate())
	drift := time.Duration(float64(ttl)*l.DriftFactor) + 2*time.Millisecond
	if l.Flaw == NoDrift {
		drift = 0
	}
	validity := ttl - elapsed - drift
	lease := &toyLease{l: l, key: rkey, token: token}
	if l.Flaw == NoValidityCheck && yes >= l.quorum() {
		lease.until = time.Now().Add(ttl - drift)
		return lease, nil
	}
	if yes >= l.quorum() && validity > 0 {
		// The client acts until its own clock has counted the validity
		// from start; on the nodes' clock that is validity/rate.
		lease.until = start.Add(time.Duration(float64(ttl-drift) / l.rate()))
		return lease, nil
	}
	_ = lease.Unlock(ctx)
	return nil, fmt.Errorf("toy %v: %d of %d nodes granted (need %d): %w", l.Flaw, yes, len(l.Nodes), l.quorum(), dlm.ErrNotObtained)
}

// Lock retries TryLock after a random wait up to RetryDelay until ctx ends.
func (l *ToyLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return retryLock(ctx, l.RetryDelay, func() (Lease, error) { return l.TryLock(ctx, key, ttl) })
}

// retryLock calls try after a random wait up to delay until it obtains a
// lease or ctx ends.
func retryLock(ctx context.Context, delay time.Duration, try func() (Lease, error)) (Lease, error) {
	for {
		lease, err := try()
		if err == nil || ctx.Err() != nil {
			if err != nil {
				err = fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			return lease, err
		}
		t := time.NewTimer(rand.N(delay + 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// Close closes the nodes if the locker owns them.
func (l *ToyLocker) Close() error {
	if !l.Owned {
		return nil
	}
	return closeNodes(l.Nodes)
}

// closeNodes closes every node.
func closeNodes(nodes []driver.Node) error {
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// all runs a script on every node at once and counts the replies equal to 1.
func (l *ToyLocker) all(ctx context.Context, s *driver.Script, key string, args ...string) int {
	return evalAll(ctx, l.Nodes, l.NodeTimeout, s, []string{key}, args...)
}

// evalAll runs a script on every node at once, each within timeout, and
// counts the replies equal to 1.
func evalAll(ctx context.Context, nodes []driver.Node, timeout time.Duration, s *driver.Script, keys []string, args ...string) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	yes := 0
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if v, err := n.Eval(ctx, s, keys, args); err == nil && v == int64(1) {
				mu.Lock()
				yes++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return yes
}

type toyLease struct {
	l          *ToyLocker
	key, token string
	until      time.Time
}

func (t *toyLease) Until() time.Time { return t.until }
func (t *toyLease) Token() uint64    { return 0 }

// Unlock releases on every node, whatever the acquire replies were.
func (t *toyLease) Unlock(ctx context.Context) error {
	t.l.all(context.WithoutCancel(ctx), toyRelease, t.key, t.token)
	return nil
}
