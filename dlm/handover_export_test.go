package dlm

// LocalWaiters returns how many of m's callers wait in line for key (under
// the default key prefix) behind the one at its head, or -1 when none is at
// its head. For the tests of package dlm_test.
func LocalWaiters(m *Manager, key string) int { return queued(m, rkey(key)) }

// SameGrant reports whether a and b are the same grant of a lock: the same
// secret on the nodes.
func SameGrant(a, b *Lock) bool { return a.secret == b.secret }
