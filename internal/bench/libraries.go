package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredislib "github.com/redis/go-redis/v9"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"

	_ "github.com/dlmgo/redlock/backends/goredis"  // registers redis+goredis://
	_ "github.com/dlmgo/redlock/backends/redigo"   // registers redis+redigo://
	_ "github.com/dlmgo/redlock/backends/rueidis"  // registers redis+rueidis://
	_ "github.com/dlmgo/redlock/backends/valkeygo" // registers redis+valkey://
	"github.com/dlmgo/redlock/dlm"
)

// A Library is one lock implementation under test.
type Library struct {
	ID   string // short name, used in case names: "goredis", "rueidis-fair", "redsync"
	Name string // as shown in the report
	// Baseline marks the comparison target that ratios are taken against.
	Baseline bool
	// Backend is the redlock backend the library runs over, "" for the
	// baseline.
	Backend string
	// Mode names redlock's mode, "" for the default one; Options are the
	// options it adds, as the report shows them.
	Mode    string
	Options string
	// Fair marks redlock's fairness mode, judged for the fairness target
	// only; the other targets are judged on the default mode.
	Fair bool
	// Open connects to the nodes. Every lock lives ttl; each request to a
	// node is bounded by nodeTimeout, or by the library's default when 0;
	// a blocking lock tries at least tries times before giving up (for
	// libraries that count tries rather than wait for the context).
	Open func(addrs []string, ttl, nodeTimeout time.Duration, tries int) (Locker, error)
}

// A Locker is an open Library: one client, as one process would have.
type Locker interface {
	// Mutex returns a lock on key for one goroutine, reused for every
	// cycle that goroutine runs on that key.
	Mutex(key string) Mutex
	Close() error
}

// A Mutex is one goroutine's handle on a lock key.
type Mutex interface {
	// Lock blocks until the lock is held or ctx ends.
	Lock(ctx context.Context) error
	// Unlock releases the lock taken by the last Lock.
	Unlock(ctx context.Context) error
}

// redlockBackends are redlock's backends, in the report's order.
var redlockBackends = []string{"goredis", "redigo", "rueidis", "valkey"}

// A redlockMode is a configuration of redlock measured over every backend.
type redlockMode struct {
	name string // added to the library's ID after a dash, and to its name after a space
	fair bool
	opts []dlm.ManagerOption
	desc string // opts as the report shows them
}

// redlockModes are the configurations of redlock a run measures, the
// default one first. A fair mode's libraries are judged for the fairness
// target only.
var redlockModes = []redlockMode{
	{},
	{name: "fair", fair: true, opts: []dlm.ManagerOption{dlm.WithFairness(dlm.Fairness{})}, desc: "dlm.WithFairness(dlm.Fairness{})"},
}

// costModes are configurations of redlock measured in the uncontended
// cases only, beside the default mode, for what each feature costs a
// caller that uses it: fencing and the restart guard.
var costModes = []redlockMode{
	{name: "fenced", opts: []dlm.ManagerOption{dlm.WithFencing()}, desc: "dlm.WithFencing()"},
	{name: "guard", opts: []dlm.ManagerOption{dlm.WithRestartGuard(time.Minute)}, desc: "dlm.WithRestartGuard(time.Minute)"},
}

// CostLibraries returns redlock over each backend in each of costModes,
// measured in the uncontended cases only, as the bare floor is.
func CostLibraries() []Library {
	var libs []Library
	for _, mode := range costModes {
		for _, b := range redlockBackends {
			libs = append(libs, Library{ID: b + "-" + mode.name, Name: "redlock+" + b + " " + mode.name, Backend: b, Mode: mode.name,
				Options: mode.desc, Open: openRedlock(b, mode.opts...)})
		}
	}
	return libs
}

// Libraries returns the libraries of a run: redlock over each backend in
// each mode, then redsync, the baseline.
func Libraries() []Library {
	var libs []Library
	for _, mode := range redlockModes {
		for _, b := range redlockBackends {
			lib := Library{ID: b, Name: "redlock+" + b, Backend: b, Mode: mode.name, Options: mode.desc, Fair: mode.fair,
				Open: openRedlock(b, mode.opts...)}
			if mode.name != "" {
				lib.ID += "-" + mode.name
				lib.Name += " " + mode.name
			}
			libs = append(libs, lib)
		}
	}
	return append(libs, Library{ID: "redsync", Name: "redsync v4 (go-redis v9)", Baseline: true, Open: openRedsync})
}

// openRedlock opens a dlm.Manager over the nodes through backend, with the
// library's defaults but for the TTL, the node timeout when one is given
// and the mode's options in extra: Lock retries until its context ends.
func openRedlock(backend string, extra ...dlm.ManagerOption) func([]string, time.Duration, time.Duration, int) (Locker, error) {
	return func(addrs []string, ttl, nodeTimeout time.Duration, _ int) (Locker, error) {
		urls := make([]string, len(addrs))
		for i, a := range addrs {
			urls[i] = "redis+" + backend + "://" + a
		}
		opts := []dlm.ManagerOption{dlm.WithTTL(ttl)}
		if nodeTimeout > 0 {
			opts = append(opts, dlm.WithNodeTimeout(nodeTimeout))
		}
		m, err := dlm.Open(urls, append(opts, extra...)...)
		if err != nil {
			return nil, err
		}
		return redlockLocker{m}, nil
	}
}

type redlockLocker struct{ m *dlm.Manager }

var _ SharedLocker = redlockLocker{}

func (l redlockLocker) Mutex(key string) Mutex { return &redlockMutex{m: l.m, key: key} }
func (l redlockLocker) Close() error           { return l.m.Close() }

func (l redlockLocker) Shared(kind, key string, limit int) (Mutex, error) {
	switch kind {
	case KindRead:
		return &redlockLease{take: func(ctx context.Context, opts ...dlm.Option) (*dlm.Lock, error) { return l.m.RLock(ctx, key, opts...) }}, nil
	case KindSemaphore:
		s, err := l.m.Semaphore(key, limit)
		if err != nil {
			return nil, err
		}
		return &redlockLease{take: s.Acquire}, nil
	}
	return nil, fmt.Errorf("no lease of kind %q", kind)
}

// redlockLease is one goroutine's handle on a read lock or a permit.
type redlockLease struct {
	take func(ctx context.Context, opts ...dlm.Option) (*dlm.Lock, error)
	held *dlm.Lock
}

func (x *redlockLease) Lock(ctx context.Context) error {
	l, err := x.take(ctx)
	if err != nil {
		return err
	}
	x.held = l
	return nil
}

func (x *redlockLease) Unlock(ctx context.Context) error {
	l := x.held
	x.held = nil
	if l == nil {
		return errors.New("unlock of a lease not held")
	}
	return l.Unlock(ctx)
}

type redlockMutex struct {
	m    *dlm.Manager
	key  string
	held *dlm.Lock
}

func (x *redlockMutex) Lock(ctx context.Context) error {
	l, err := x.m.Lock(ctx, x.key)
	if err != nil {
		return err
	}
	x.held = l
	return nil
}

func (x *redlockMutex) Unlock(ctx context.Context) error {
	l := x.held
	x.held = nil
	if l == nil {
		return errors.New("unlock of a lock not held")
	}
	return l.Unlock(ctx)
}

// openRedsync opens redsync over one go-redis v9 client per node, with
// redsync's defaults but for the expiry (the TTL), the number of tries,
// which is sized by the caller so that contention does not make a Lock
// fail, and, when a node timeout is given, the timeout factor that makes
// it the bound of an acquire.
func openRedsync(addrs []string, ttl, nodeTimeout time.Duration, tries int) (Locker, error) {
	clients := make([]*goredislib.Client, len(addrs))
	pools := make([]redsyncredis.Pool, 0, len(addrs))
	for i, a := range addrs {
		clients[i] = goredislib.NewClient(&goredislib.Options{Addr: a})
		pools = append(pools, redsyncgoredis.NewPool(clients[i]))
	}
	rs := redsync.New(pools...)
	l := &redsyncLocker{rs: rs, clients: clients, ttl: ttl, tries: tries}
	if nodeTimeout > 0 {
		l.opts = append(l.opts, redsync.WithTimeoutFactor(float64(nodeTimeout)/float64(ttl)))
	}
	return l, nil
}

type redsyncLocker struct {
	rs      *redsync.Redsync
	clients []*goredislib.Client
	ttl     time.Duration
	tries   int
	opts    []redsync.Option // beside the expiry and the tries
}

func (l *redsyncLocker) Mutex(key string) Mutex {
	return redsyncMutex{l.rs.NewMutex(key, append([]redsync.Option{redsync.WithExpiry(l.ttl), redsync.WithTries(l.tries)}, l.opts...)...)}
}

func (l *redsyncLocker) Close() error {
	var errs []error
	for _, c := range l.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

type redsyncMutex struct{ m *redsync.Mutex }

func (x redsyncMutex) Lock(ctx context.Context) error { return x.m.LockContext(ctx) }

func (x redsyncMutex) Unlock(ctx context.Context) error {
	ok, err := x.m.UnlockContext(ctx)
	if err == nil && !ok {
		err = fmt.Errorf("redsync: unlock of %s reached no quorum", x.m.Name())
	}
	return err
}
