package round

import "testing"

// TestListened checks how many nodes must say that others listen on a
// key's broadcast channel for a waiter to act on it: as many as refuse a
// quorum (two of three, three of five), never one node of three or more.
func TestListened(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n, q, open int
		want       bool
	}{
		{n: 1, q: 1, open: 0, want: false},
		{n: 1, q: 1, open: 1, want: true},
		{n: 3, q: 2, open: 1, want: false},
		{n: 3, q: 2, open: 2, want: true},
		{n: 3, q: 3, open: 1, want: true}, // one refusal denies a quorum of every node
		{n: 4, q: 3, open: 1, want: false},
		{n: 4, q: 3, open: 2, want: true},
		{n: 5, q: 3, open: 2, want: false},
		{n: 5, q: 3, open: 3, want: true},
	} {
		var v Vote
		for i := range tc.n {
			v.Count(Reply{Node: i, Open: i < tc.open}, tc.n)
		}
		if got := v.Listened(tc.n, tc.q); got != tc.want {
			t.Errorf("Listened(%d, %d) with %d nodes saying others listen = %v; want %v", tc.n, tc.q, tc.open, got, tc.want)
		}
	}
}
