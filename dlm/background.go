package dlm

import (
	"context"
	"sync"
)

// work owns the goroutines a Manager starts: node requests and the
// background release of late nodes. Each ends by its node timeout;
// [Manager.Close] waits for them, so none outlives the Manager.
type work struct {
	mu      sync.RWMutex
	stopped bool
	wg      sync.WaitGroup
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

// stopWork makes later spawns run inline and waits for the goroutines
// already started.
func (m *Manager) stopWork() {
	m.work.mu.Lock()
	m.work.stopped = true
	m.work.mu.Unlock()
	m.work.wg.Wait()
}

// spawnAsk is spawn(func() { replies <- m.ask(ctx, i, req) }) in one
// allocation instead of two: it runs for every node of every request.
func (m *Manager) spawnAsk(ctx context.Context, i int, req *request, replies chan<- reply) {
	m.work.mu.RLock()
	if m.work.stopped {
		m.work.mu.RUnlock()
		replies <- m.ask(ctx, i, req)
		return
	}
	m.work.wg.Add(1)
	m.work.mu.RUnlock()
	go func() {
		defer m.work.wg.Done()
		replies <- m.ask(ctx, i, req)
	}()
}
