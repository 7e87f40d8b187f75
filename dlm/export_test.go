package dlm

// UncheckedSemaphore returns a semaphore whose permits need q nodes, with
// none of the checks of [Manager.Semaphore]: the tests use it to show that a
// quorum below [SemaphoreQuorum] lets more than limit holders in.
func UncheckedSemaphore(m *Manager, name string, limit, q int) *Semaphore {
	s, err := m.Semaphore(name, limit)
	if err != nil {
		panic(err)
	}
	k := *s.kind
	k.need = q
	s.kind = &k
	return s
}

// Pauses of a node's subscription opened again after a failure (see pump).
const (
	MinReopen = minReopen
	MaxReopen = maxReopen
)

// WakeIgnored returns how many malformed wake messages m's waker ignored.
func WakeIgnored(m *Manager) uint64 {
	if m.waker == nil {
		return 0
	}
	return m.waker.ignored.Load()
}
