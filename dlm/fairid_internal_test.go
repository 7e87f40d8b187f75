package dlm

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// TestFairIDIsWakeID checks that a fair waiter's id has the length by
// which the waker tells a release meant for it alone from others.
func TestFairIDIsWakeID(t *testing.T) {
	t.Parallel()
	fw, err := newFairWaiter(&Fairness{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fw.id) != wake.IDLen {
		t.Errorf("a fair waiter's id has %d characters; want wake.IDLen, %d", len(fw.id), wake.IDLen)
	}
}
