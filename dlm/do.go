package dlm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do takes the lock named key, waiting as [Manager.Lock] does, runs fn while
// keeping the lock extended, and releases it when fn returns.
//
// fn's context is cancelled the moment the lock is lost or can no longer be
// proven held: an extension found it gone on a quorum, or its validity ended
// while extensions kept failing. [context.Cause] of fn's context then wraps
// [ErrLockLost]. Do returns fn's error, joined with an error wrapping
// [ErrLockLost] when the lock was lost before fn returned; check it with
// errors.Is.
//
// When ctx ends before the lock is obtained, fn does not run and Do returns
// the error [Manager.Lock] would: it wraps ctx.Err() and the class of the
// last complete attempt. To bound the wait alone, and let fn run as long as
// it takes once the lock is held, give [WithWaitTimeout].
//
// Extension follows [WithAutoExtend], on with its defaults unless an option
// says otherwise. Cancelling ctx stops the wait, cancels fn's context, stops
// extension, and releases the lock once fn returns. When the lock was lost
// after extensions failed, the error also carries the last extension's
// [*QuorumError], found with errors.As.
//
// If fn panics, Do stops extension, releases the lock and sends its
// [EventDone] before the panic goes on up the stack; likewise if fn calls
// [runtime.Goexit].
func (m *Manager) Do(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...Option) error {
	return m.do(ctx, nil, []string{key}, fn, opts)
}

// DoAll is [Manager.Do] for a lock over several keys, taken as
// [Manager.LockAll] takes it.
func (m *Manager) DoAll(ctx context.Context, keys []string, fn func(ctx context.Context) error, opts ...Option) error {
	keys, err := sortedUnique(keys)
	if err != nil {
		return err
	}
	return m.do(ctx, nil, keys, fn, opts)
}

// do is Do for a lock of any kind (kind nil for the mutex, keys one key
// for a lease): [Manager.Do], [Manager.DoAll], [Manager.RDo] and
// [Semaphore.Do] are this one call, and send the same events.
func (m *Manager) do(ctx context.Context, kind *leaseKind, keys []string, fn func(ctx context.Context) error, opts []Option) error {
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalid)
	}
	start := time.Now()
	opts = append([]Option{WithAutoExtend(AutoExtend{}), extendWithCtx}, opts...)
	var (
		l   *Lock
		err error
	)
	if kind == nil {
		l, err = m.lock(ctx, keys, opts, true)
	} else {
		l, err = m.lockLease(ctx, kind, keys[0], opts, true)
	}
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			// lock accepted the options; only the hook and logger they set
			// are needed here.
			cfg, _ := m.cfg.with(opts)
			cfg.emitDone(ctx, keys, start, 0, err)
		}
		return err
	}
	return l.run(ctx, start, fn)
}

// run runs fn under l for Do: fn's context is cancelled with the cause when
// l is lost, and l is released when fn returns, panics or calls
// runtime.Goexit. It returns fn's error joined with Unlock's.
func (l *Lock) run(ctx context.Context, start time.Time, fn func(ctx context.Context) error) error {
	fctx, cancel := context.WithCancelCause(context.WithValue(ctx, lockKey{}, l))
	defer cancel(nil)
	l.mu.Lock()
	if l.lostErr != nil {
		cancel(l.lostErr)
	} else {
		l.onEnd = append(l.onEnd, func(cause error) {
			if cause != nil {
				cancel(cause)
			}
		})
	}
	l.mu.Unlock()

	returned := false
	defer func() {
		if !returned {
			// fn panicked or called runtime.Goexit: a recovered panic
			// higher up must not leave the lock held and extended, nor a
			// hook's span of the call open.
			uerr := l.Unlock(context.WithoutCancel(ctx))
			l.cfg.emitDone(ctx, l.keys, start, l.token, errors.Join(errFnAborted, uerr))
		}
	}()
	err := fn(fctx)
	returned = true
	if uerr := l.Unlock(ctx); uerr != nil {
		err = errors.Join(err, uerr)
	}
	l.cfg.emitDone(ctx, l.keys, start, l.token, err)
	return err
}

// errFnAborted is the Err of the [EventDone] of a Do call whose fn did not
// return.
var errFnAborted = errors.New("dlm: Do's function did not return: it panicked or called runtime.Goexit")

// emitDone sends the [EventDone] of a Do call that started at start.
func (lg *logging) emitDone(ctx context.Context, keys []string, start time.Time, token uint64, err error) {
	if lg.wants(ctx, EventDone, err) {
		lg.emit(ctx, &Event{Kind: EventDone, Op: opDo, Key: keyName(keys), Start: start, Duration: time.Since(start), Token: token, Err: err})
	}
}

// extendWithCtx ties Do's auto-extension to Do's context.
var extendWithCtx = optionFunc(func(c *config) { c.extendWithCtx = true })

// opDo names Do and DoAll in events.
const opDo = "do"

// lockKey is the context key under which Do passes the lock to fn.
type lockKey struct{}

// LockFromContext returns the lock [Manager.Do] holds while it runs fn with
// ctx, or nil outside Do. fn uses it for [Lock.Until] and the lock's other
// accessors; it should not unlock it.
func LockFromContext(ctx context.Context) *Lock {
	l, _ := ctx.Value(lockKey{}).(*Lock)
	return l
}
