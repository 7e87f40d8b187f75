package round

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Replies of the cases below, by kind: a grant, a refusal with the PTTL
// its key has left (ms), a refusal without one, a failure.
func yes() Reply                  { return Reply{Yes: true} }
func refusedFor(ms int64) Reply   { return Reply{Left: ms} }
func refusedFree() Reply          { return Reply{} }
func failed() Reply               { return Reply{Err: errors.New("timeout")} }
func yesLeft(ms int64) Reply      { return Reply{Yes: true, Left: ms} }
func failedLeft(ms int64) Reply   { return Reply{Err: errors.New("timeout"), Left: ms} }
func counted(rs ...Reply) []Reply { return rs }

// vote counts replies, node i's the i-th, among n nodes.
func vote(n int, replies []Reply) Vote {
	var v Vote
	for i, r := range replies {
		r.Node = i
		v.Count(r, n)
	}
	return v
}

// TestFreeIn checks when a refused attempt's refusals say the keys could be
// free on a quorum: the nodes that granted it are free at once, a refusal
// with a PTTL is free when it runs out, every other node (a refusal
// without one, a failure, a node not heard from) never; the time is when
// the quorum's last such node is free, and nothing when too few can be.
// Each vote is counted in both orders of its replies.
func TestFreeIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n       int
		replies []Reply // of nodes 0 to len-1; the others not heard from
		want    time.Duration
	}{
		{"one node refuses", 1, counted(refusedFor(900)), 900 * time.Millisecond},
		{"one node refuses, no PTTL", 1, counted(refusedFree()), 0},
		{"one node fails", 1, counted(failed()), 0},
		{"three refuse alike", 3, counted(refusedFor(500), refusedFor(500), refusedFor(500)), 500 * time.Millisecond},
		{"three refuse: the second soonest", 3, counted(refusedFor(700), refusedFor(100), refusedFor(400)), 400 * time.Millisecond},
		{"one says 1 ms of three", 3, counted(refusedFor(1), refusedFor(60000), refusedFor(60000)), time.Minute},
		{"one says 1 ms of five", 5, counted(refusedFor(1), refusedFor(60000), refusedFor(60000), refusedFor(60000), refusedFor(60000)), time.Minute},
		{"one says 1 ms of five, three heard", 5, counted(refusedFor(1), refusedFor(60000), refusedFor(60000)), time.Minute},
		{"one of three granted: the soonest refusal", 3, counted(yes(), refusedFor(300), refusedFor(200)), 200 * time.Millisecond},
		{"two of five granted: the soonest refusal", 5, counted(yes(), yes(), refusedFor(300), refusedFor(200), refusedFor(250)), 200 * time.Millisecond},
		{"one of five granted: the second soonest", 5, counted(yes(), refusedFor(300), refusedFor(200), refusedFor(250), refusedFor(900)), 250 * time.Millisecond},
		{"a quorum granted", 3, counted(yes(), yes(), refusedFor(200)), 0},
		{"failures are never free", 3, counted(failed(), refusedFor(1), refusedFor(60000)), time.Minute},
		{"too few PTTLs with a failure", 3, counted(failed(), failed(), refusedFor(1)), 0},
		{"too few PTTLs, two not heard from", 5, counted(refusedFor(1), refusedFor(60000), refusedFor(60000)), time.Minute},
		{"too few PTTLs, three not heard from", 5, counted(refusedFor(1), refusedFor(60000)), 0},
		{"refusals without a PTTL are never free", 3, counted(refusedFree(), refusedFor(1), refusedFor(500)), 500 * time.Millisecond},
		{"only refusals without a PTTL", 3, counted(refusedFree(), refusedFree(), refusedFor(1)), 0},
		{"a grant's PTTL is no refusal's", 3, counted(yesLeft(1), refusedFor(400), refusedFor(400)), 400 * time.Millisecond},
		{"a failure's PTTL is no refusal's", 3, counted(failedLeft(1), refusedFor(400), refusedFree()), 0},
		{"four nodes, quorum three", 4, counted(refusedFor(1), refusedFor(100), refusedFor(200), refusedFor(300)), 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := Majority(tc.n)
			for _, order := range []string{"in order", "reversed"} {
				replies := slices.Clone(tc.replies)
				v := vote(tc.n, replies)
				if order == "reversed" {
					v = Vote{}
					for i := len(replies) - 1; i >= 0; i-- {
						r := replies[i]
						r.Node = i
						v.Count(r, tc.n)
					}
				}
				if got := v.FreeIn(q); got != tc.want {
					t.Errorf("%s: FreeIn(%d) of %d nodes = %v; want %v", order, q, tc.n, got, tc.want)
				}
				if got := v.FreeIn(q); got != tc.want {
					t.Errorf("%s: FreeIn(%d) again = %v; want %v, as the first time", order, q, got, tc.want)
				}
			}
		})
	}
}

// TestFreeInOneLiar checks, for every vote of up to six nodes whose
// replies are grants, refusals with PTTLs of 1 to 3 s, refusals without
// one and failures, that one node changing its reply to a refusal of 1 ms
// makes FreeIn no sooner than the smallest PTTL of the other nodes'
// refusals, unless the attempt had a quorum short of one in grants: then
// the smallest PTTL decides, and the caller's floor bounds it.
func TestFreeInOneLiar(t *testing.T) {
	t.Parallel()
	kinds := []Reply{yes(), refusedFor(1000), refusedFor(2000), refusedFor(3000), refusedFree(), failed()}
	for n := 1; n <= 6; n++ {
		q := Majority(n)
		replies := make([]Reply, n)
		var walk func(i int)
		walk = func(i int) {
			if i < n {
				for _, k := range kinds {
					replies[i] = k
					walk(i + 1)
				}
				return
			}
			for liar := range n {
				lied := slices.Clone(replies)
				lied[liar] = refusedFor(1)
				v := vote(n, lied)
				got := v.FreeIn(q)
				if got == 0 || q-v.Yes == 1 {
					continue
				}
				soonest := int64(0)
				for j, r := range replies {
					if j != liar && r.Err == nil && !r.Yes && r.Left > 0 && (soonest == 0 || r.Left < soonest) {
						soonest = r.Left
					}
				}
				if got < time.Duration(soonest)*time.Millisecond {
					t.Fatalf("%d nodes, replies %s with node %d's refusal of 1 ms: FreeIn(%d) = %v; want at least %d ms, the others' soonest",
						n, show(replies), liar, q, got, soonest)
				}
			}
		}
		walk(0)
	}
}

// show names replies by kind.
func show(replies []Reply) string {
	s := ""
	for _, r := range replies {
		switch {
		case r.Err != nil:
			s += "F"
		case r.Yes:
			s += "Y"
		case r.Left > 0:
			s += fmt.Sprint(r.Left / 1000)
		default:
			s += "N"
		}
	}
	return s
}

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
