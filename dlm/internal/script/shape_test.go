package script

import (
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// TestShapeOf checks the reply shape of every acquire variant, and of a
// script of another kind.
func TestShapeOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    *driver.Script
		want Shape
	}{
		{"Acquire", Acquire, Shape{}},
		{"GuardedAcquire", GuardedAcquire, Shape{}},
		{"FencedAcquire", FencedAcquire, Shape{Counter: true}},
		{"GuardedFencedAcquire", GuardedFencedAcquire, Shape{Counter: true}},
		{"FairAcquire", FairAcquire, Shape{Ticketed: true}},
		{"FairGuardedAcquire", FairGuardedAcquire, Shape{Ticketed: true}},
		{"FairFencedAcquire", FairFencedAcquire, Shape{Counter: true, Ticketed: true}},
		{"FairGuardedFencedAcquire", FairGuardedFencedAcquire, Shape{Counter: true, Ticketed: true}},
		{"Release", Release, Shape{}},
		{"FairRelease", FairRelease, Shape{}},
		{"ExtendBatch", ExtendBatch, Shape{Entries: true}},
	} {
		if got := ShapeOf(tc.s); got != tc.want {
			t.Errorf("ShapeOf(%s) = %+v; want %+v", tc.name, got, tc.want)
		}
	}
}
