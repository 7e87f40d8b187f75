package round

import (
	"context"
	"sync"
	"time"
)

// Pool owns the goroutines a manager starts: node requests, the background
// release of late nodes, and the manager's other background work. Each
// ends by its node timeout, and a node request's worker after at most
// WorkerIdle without one; [Pool.Stop] ends the idle workers and waits for
// the rest, so none outlives the manager.
type Pool struct {
	mu      sync.RWMutex
	stopped bool
	wg      sync.WaitGroup
	// asks hands a node request to an idle worker; unbuffered, so that a
	// request is taken at once or not at all.
	asks chan ask
	quit chan struct{} // closed by Stop: idle workers end
}

// WorkerIdle is how long a worker waits for another node request before
// it ends.
const WorkerIdle = 500 * time.Millisecond

// NewPool returns a pool ready for use.
func NewPool() *Pool {
	return &Pool{asks: make(chan ask), quit: make(chan struct{})}
}

// Spawn runs f on a new goroutine, or on this one once the pool is
// stopped, so that Stop's wait cannot miss it.
func (p *Pool) Spawn(f func()) {
	p.mu.RLock()
	if p.stopped {
		p.mu.RUnlock()
		f()
		return
	}
	p.wg.Add(1)
	p.mu.RUnlock()
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// SpawnFanOut runs f on a new goroutine, or on this one once the pool is
// stopped, as Spawn does, and gives f a way to start goroutines of its own
// that Stop's wait cannot miss either: new ones, even while the pool
// stops, when f's goroutine is counted (the count cannot be zero then),
// and f's own goroutine otherwise.
func (p *Pool) SpawnFanOut(f func(spawn func(func()))) {
	p.mu.RLock()
	if p.stopped {
		p.mu.RUnlock()
		f(func(g func()) { g() })
		return
	}
	p.wg.Add(1)
	p.mu.RUnlock()
	go func() {
		defer p.wg.Done()
		f(p.spawnCounted)
	}()
}

// ForEach runs f(i) for each of n nodes on goroutines of their own, as
// Spawn does, and returns once every call has returned.
func (p *Pool) ForEach(n int, f func(i int)) {
	done := make(chan struct{}, n)
	for i := range n {
		p.Spawn(func() {
			defer func() { done <- struct{}{} }()
			f(i)
		})
	}
	for range n {
		<-done
	}
}

// spawnCounted runs f on a new goroutine counted in the work group; only a
// goroutine that is counted itself may call it.
func (p *Pool) spawnCounted(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// Stop makes later spawns run inline, ends the idle workers and waits for
// the goroutines already started.
func (p *Pool) Stop() {
	p.mu.Lock()
	if !p.stopped {
		p.stopped = true
		close(p.quit)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// ask is a node request for a worker: replies <- r.ask(ctx, i, req, sent), or,
// when fn is set, fn().
type ask struct {
	r       *Round
	ctx     context.Context
	i       int
	req     *Request
	sent    time.Time // when the round set ctx's deadline
	replies chan<- Reply
	fn      func()
}

// serve runs a on the calling goroutine.
func (a *ask) serve() {
	if a.fn != nil {
		a.fn()
		return
	}
	a.replies <- a.r.ask(a.ctx, a.i, a.req, a.sent)
}

// ask runs r.ask(ctx, i, req, sent) apart and sends its reply on replies, which
// must have room for it. It runs for every node of every request, so it
// hands the request to an idle worker, a goroutine that served an earlier
// one, when there is one: a new goroutine would allocate, and grow its
// stack through the client library's calls again. Otherwise it starts a
// worker, which serves requests until it has waited WorkerIdle for one, or
// the pool is stopped.
func (p *Pool) ask(ctx context.Context, r *Round, i int, req *Request, sent time.Time, replies chan<- Reply) {
	p.hand(ask{r: r, ctx: ctx, i: i, req: req, sent: sent, replies: replies})
}

// run runs fn, a node request and what follows from its reply, apart, on a
// worker as ask does.
func (p *Pool) run(fn func()) {
	p.hand(ask{fn: fn})
}

// hand gives a to an idle worker, or to a new one; once the pool is
// stopped, it serves a on this goroutine.
func (p *Pool) hand(a ask) {
	select {
	case p.asks <- a:
		return
	default:
	}
	p.mu.RLock()
	if p.stopped {
		p.mu.RUnlock()
		a.serve()
		return
	}
	p.wg.Add(1)
	p.mu.RUnlock()
	go p.worker(a)
}

// worker serves a, then the node requests handed to it, until it has
// waited WorkerIdle for one or the pool is stopped.
func (p *Pool) worker(a ask) {
	defer p.wg.Done()
	var idle *time.Timer
	for {
		a.serve()
		a = ask{} // keep nothing of it alive while idle
		if idle == nil {
			idle = time.NewTimer(WorkerIdle)
			defer idle.Stop()
		} else {
			idle.Reset(WorkerIdle)
		}
		select {
		case a = <-p.asks:
			if !idle.Stop() {
				// Fired meanwhile: drain it before the next Reset
				// (needed before Go 1.23's timer semantics).
				select {
				case <-idle.C:
				default:
				}
			}
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}
