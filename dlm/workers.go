package dlm

import (
	"context"
	"sync"
	"time"
)

// work owns the goroutines a Manager starts: node requests and the
// background release of late nodes. Each ends by its node timeout, and a
// node request's worker after at most workerIdle without one;
// [Manager.Close] ends the idle workers and waits for the rest, so none
// outlives the Manager.
type work struct {
	mu      sync.RWMutex
	stopped bool
	wg      sync.WaitGroup
	// asks hands a node request to an idle worker; unbuffered, so that a
	// request is taken at once or not at all.
	asks chan ask
	quit chan struct{} // closed by stopWork: idle workers end
}

// workerIdle is how long a worker waits for another node request before
// it ends.
const workerIdle = 500 * time.Millisecond

// init readies w for use.
func (w *work) init() {
	w.asks = make(chan ask)
	w.quit = make(chan struct{})
}

// spawn runs f on a new goroutine, or on this one once the Manager is
// closed, so that Close's wait cannot miss it.
func (m *Manager) spawn(f func()) {
	m.work.mu.RLock()
	if m.work.stopped {
		m.work.mu.RUnlock()
		f()
		return
	}
	m.work.wg.Add(1)
	m.work.mu.RUnlock()
	go func() {
		defer m.work.wg.Done()
		f()
	}()
}

// spawnFanOut runs f on a new goroutine, or on this one once the Manager
// is closed, as spawn does, and gives f a way to start goroutines of its
// own that Close's wait cannot miss either: new ones, even while the
// Manager closes, when f's goroutine is counted (the count cannot be zero
// then), and f's own goroutine otherwise.
func (m *Manager) spawnFanOut(f func(spawn func(func()))) {
	m.work.mu.RLock()
	if m.work.stopped {
		m.work.mu.RUnlock()
		f(func(g func()) { g() })
		return
	}
	m.work.wg.Add(1)
	m.work.mu.RUnlock()
	go func() {
		defer m.work.wg.Done()
		f(m.spawnCounted)
	}()
}

// spawnCounted runs f on a new goroutine counted in the work group; only a
// goroutine that is counted itself may call it.
func (m *Manager) spawnCounted(f func()) {
	m.work.wg.Add(1)
	go func() {
		defer m.work.wg.Done()
		f()
	}()
}

// stopWork makes later spawns run inline, ends the idle workers and waits
// for the goroutines already started.
func (m *Manager) stopWork() {
	m.work.mu.Lock()
	if !m.work.stopped {
		m.work.stopped = true
		close(m.work.quit)
	}
	m.work.mu.Unlock()
	m.work.wg.Wait()
}

// ask is a node request for a worker: replies <- m.ask(ctx, i, req).
type ask struct {
	ctx     context.Context
	i       int
	req     *request
	replies chan<- reply
}

// spawnAsk runs m.ask(ctx, i, req) apart and sends its reply on replies,
// which must have room for it. It runs for every node of every request, so
// it hands the request to an idle worker, a goroutine that served an
// earlier one, when there is one: a new goroutine would allocate, and grow
// its stack through the client library's calls again. Otherwise it starts
// a worker, which serves requests until it has waited workerIdle for one,
// or the Manager is closed.
func (m *Manager) spawnAsk(ctx context.Context, i int, req *request, replies chan<- reply) {
	a := ask{ctx: ctx, i: i, req: req, replies: replies}
	select {
	case m.work.asks <- a:
		return
	default:
	}
	m.work.mu.RLock()
	if m.work.stopped {
		m.work.mu.RUnlock()
		replies <- m.ask(ctx, i, req)
		return
	}
	m.work.wg.Add(1)
	m.work.mu.RUnlock()
	go m.worker(a)
}

// worker serves a, then the node requests handed to it, until it has
// waited workerIdle for one or the Manager is closed.
func (m *Manager) worker(a ask) {
	defer m.work.wg.Done()
	var idle *time.Timer
	for {
		a.replies <- m.ask(a.ctx, a.i, a.req)
		a = ask{} // keep nothing of it alive while idle
		if idle == nil {
			idle = time.NewTimer(workerIdle)
			defer idle.Stop()
		} else {
			idle.Reset(workerIdle)
		}
		select {
		case a = <-m.work.asks:
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
		case <-m.work.quit:
			return
		}
	}
}
