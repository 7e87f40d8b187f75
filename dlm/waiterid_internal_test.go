package dlm

import (
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// TestWaiterIDIsWakeID checks that a waiter's id has the shape by which the
// waker tells a release meant for it from others, and begins with its
// manager's id, on whose channel the releases name it.
func TestWaiterIDIsWakeID(t *testing.T) {
	t.Parallel()
	m := newManager(t, newFakes(1))
	if !wake.ValidManagerID(m.waits.id) {
		t.Errorf("manager id %q: not a valid manager id", m.waits.id)
	}
	w, err := newWaiter(m.waits.id, m.wallNow())
	if err != nil {
		t.Fatal(err)
	}
	if !wake.ValidWaiterID(w.id) || !strings.HasPrefix(w.id, m.waits.id) {
		t.Errorf("waiter id %q of manager %q: want a valid waiter id beginning with the manager's", w.id, m.waits.id)
	}
}
