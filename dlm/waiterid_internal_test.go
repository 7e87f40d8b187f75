package dlm

import (
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// TestWaiterIDIsWakeID checks that a waiter's id has the shape by which the
// waker tells a release meant for it from others, begins with its
// manager's id, on whose channel the releases name it, and is no other
// waiter's.
func TestWaiterIDIsWakeID(t *testing.T) {
	t.Parallel()
	m := newManager(t, newFakes(1))
	if !wake.ValidManagerID(m.waits.id) {
		t.Errorf("manager id %q: not a valid manager id", m.waits.id)
	}
	seen := map[string]bool{}
	for range 1000 {
		w := newWaiter(m.waits.id, m.wallNow())
		if !wake.ValidWaiterID(w.id) || !strings.HasPrefix(w.id, m.waits.id) {
			t.Fatalf("waiter id %q of manager %q: want a valid waiter id beginning with the manager's", w.id, m.waits.id)
		}
		if seen[w.id] {
			t.Fatalf("waiter id %q given twice", w.id)
		}
		seen[w.id] = true
	}
}
