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
		{"Acquire", Acquire, Shape{Ticketed: true}},
		{"GuardedAcquire", GuardedAcquire, Shape{Ticketed: true}},
		{"FencedAcquire", FencedAcquire, Shape{Counter: true, Ticketed: true}},
		{"GuardedFencedAcquire", GuardedFencedAcquire, Shape{Counter: true, Ticketed: true}},
		{"Release", Release, Shape{}},
		{"Leave", Leave, Shape{}},
		{"ReadAcquire", ReadAcquire, Shape{}},
		{"ExtendBatch", ExtendBatch, Shape{Entries: true}},
	} {
		if got := ShapeOf(tc.s); got != tc.want {
			t.Errorf("ShapeOf(%s) = %+v; want %+v", tc.name, got, tc.want)
		}
	}
}
