package dlm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExtQueue checks the extender's queue against a sorted list: after
// random pushes and removals (as stop takes a lock out), pops come in the
// order of their times, and every lock knows its place.
func TestExtQueue(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var q extQueue
	var want []int64
	in := map[*autoExtension]bool{}
	for step := range 5000 {
		switch op := r.IntN(10); {
		case op < 6:
			a := &autoExtension{at: r.Int64N(1000), idx: -1}
			q.push(a)
			in[a] = true
			want = append(want, a.at)
		case op < 8 && len(q) > 0:
			a := q[r.IntN(len(q))].a
			q.remove(a.idx)
			delete(in, a)
			want = slices.Delete(want, slices.Index(want, a.at), slices.Index(want, a.at)+1)
			if a.idx != -1 {
				t.Fatalf("step %d: a removed lock has place %d; want -1", step, a.idx)
			}
		case len(q) > 0:
			slices.Sort(want)
			a := q.pop()
			delete(in, a)
			if a.at != want[0] {
				t.Fatalf("step %d: pop = %d; want %d, the earliest", step, a.at, want[0])
			}
			want = want[1:]
		}
		for i, it := range q {
			if it.a.idx != i || it.at != it.a.at {
				t.Fatalf("step %d: item %d has place %d, time %d for %d", step, i, it.a.idx, it.at, it.a.at)
			}
		}
	}
}
