package bench

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestAnalyzeHot(t *testing.T) {
	const ms = time.Millisecond
	// c is a granted call: client, asked, granted, unlock, release in ms.
	c := func(client int, asked, granted, unlock, release float64) call {
		d := func(v float64) time.Duration { return time.Duration(v * float64(ms)) }
		return call{client: client, asked: d(asked), granted: d(granted), unlock: d(unlock), release: d(release)}
	}
	// w is a call still waiting at the end.
	w := func(client int, asked float64) call {
		return call{client: client, asked: time.Duration(asked * float64(ms)), granted: never}
	}
	tests := []struct {
		name       string
		calls      []call
		clients    int
		window     time.Duration
		grants     int
		handoffs   []time.Duration // Handoff samples, as P50 and Max
		toWaiter   Dist
		perClient  []int
		overlaps   int
		violations int
		waitMax    time.Duration
		censored   int
	}{
		{
			name: "alternating clients",
			calls: []call{
				c(0, 0, 0, 1, 2),
				c(1, 0, 3, 4, 5),
				c(0, 2, 6, 7, 8),
			},
			clients: 2, window: 100 * ms, grants: 3,
			handoffs:  []time.Duration{ms, ms},
			toWaiter:  Dist{N: 2, P50: ms, P99: ms, Max: ms, Mean: ms},
			perClient: []int{2, 1},
			waitMax:   4 * ms,
		},
		{
			name: "releaser takes it again while the other waits",
			calls: []call{
				c(0, 0, 0, 1, 2),
				c(0, 2, 2.5, 3, 4),
				c(0, 4, 4.5, 5, 6),
				c(1, 0.5, 6.5, 7, 8),
			},
			clients: 2, window: 100 * ms, grants: 4,
			// one hand-off, 0.5 ms after the last release; but client 1 was
			// waiting at each of the three releases, for 4.5, 2.5 and 0.5 ms.
			handoffs:  []time.Duration{ms / 2},
			toWaiter:  Dist{N: 3, P50: 2500 * time.Microsecond, P99: 4500 * time.Microsecond, Max: 4500 * time.Microsecond, Mean: 2500 * time.Microsecond},
			perClient: []int{3, 1},
			waitMax:   6 * ms,
		},
		{
			name: "grant before the release returned counts as zero",
			calls: []call{
				c(0, 0, 0, 1, 3),
				c(1, 0, 2, 4, 5),
			},
			clients: 2, window: 100 * ms, grants: 2,
			handoffs:  []time.Duration{0},
			toWaiter:  Dist{N: 1},
			perClient: []int{1, 1},
			overlaps:  1,
			waitMax:   2 * ms,
		},
		{
			name: "grant before the holder's unlock is a violation",
			calls: []call{
				c(0, 0, 0, 5, 6),
				c(1, 0, 2, 7, 8),
			},
			clients: 2, window: 100 * ms, grants: 2,
			handoffs:   []time.Duration{0},
			toWaiter:   Dist{},
			perClient:  []int{1, 1},
			overlaps:   1,
			violations: 1,
			waitMax:    2 * ms,
		},
		{
			name: "a grant inside an earlier holder's longer hold",
			calls: []call{
				c(0, 0, 0, 10, 11),
				c(1, 0, 2, 3, 4),
				c(2, 0, 5, 6, 7),
			},
			clients: 3, window: 100 * ms, grants: 3,
			// Both later grants came while client 0 still held the lock,
			// though only the first overlaps the grant just before it.
			handoffs:   []time.Duration{0, ms},
			toWaiter:   Dist{N: 1, P50: ms, P99: ms, Max: ms, Mean: ms},
			perClient:  []int{1, 1, 1},
			overlaps:   1,
			violations: 2,
			waitMax:    5 * ms,
		},
		{
			name: "grants after the window and waiters cut off",
			calls: []call{
				c(0, 0, 0, 1, 2),
				c(1, 0, 150, 151, 152),
				w(2, 10),
			},
			clients: 3, window: 100 * ms, grants: 1,
			perClient: []int{1, 0, 0},
			censored:  1,
			waitMax:   90 * ms,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := analyzeHot([]hotRound{{calls: slices.Clone(tt.calls), window: tt.window}}, ClientPerContender, tt.clients, 0)
			if r.Grants != tt.grants || r.Handoffs != len(tt.handoffs) {
				t.Errorf("grants %d, hand-offs %d; want %d, %d", r.Grants, r.Handoffs, tt.grants, len(tt.handoffs))
			}
			if want := Summarize(tt.handoffs); r.Handoff != want {
				t.Errorf("Handoff = %+v, want %+v", r.Handoff, want)
			}
			if r.ToWaiter != tt.toWaiter {
				t.Errorf("ToWaiter = %+v, want %+v", r.ToWaiter, tt.toWaiter)
			}
			if !slices.Equal(r.PerClient, tt.perClient) {
				t.Errorf("PerClient = %v, want %v", r.PerClient, tt.perClient)
			}
			if r.Overlaps != tt.overlaps || r.Violations != tt.violations {
				t.Errorf("overlaps %d, violations %d; want %d, %d", r.Overlaps, r.Violations, tt.overlaps, tt.violations)
			}
			if r.WaitMax != tt.waitMax || r.Censored != tt.censored {
				t.Errorf("WaitMax %v, Censored %d; want %v, %d", r.WaitMax, r.Censored, tt.waitMax, tt.censored)
			}
			if want := Fairness(tt.perClient); !(r.Fairness == want || math.IsNaN(want) && math.IsNaN(r.Fairness)) {
				t.Errorf("Fairness = %v, want %v", r.Fairness, want)
			}
		})
	}
}

func TestAnalyzeHotRounds(t *testing.T) {
	const ms = time.Millisecond
	c := func(client int, asked, granted, unlock, release time.Duration) call {
		return call{client: client, asked: asked, granted: granted, unlock: unlock, release: release}
	}
	rounds := []hotRound{
		{window: 10 * ms, errors: 1, firstErr: "first", calls: []call{
			c(0, 0, 0, ms, 2*ms),
			c(1, 0, 3*ms, 4*ms, 5*ms),
		}},
		{window: 10 * ms, errors: 2, firstErr: "second", calls: []call{
			// Client 1 first: no hand-off is counted across rounds.
			c(1, 0, 0, ms, 2*ms),
			c(1, 2*ms, 2*ms, 3*ms, 4*ms),
			c(0, 0, 6*ms, 7*ms, 8*ms),
		}},
	}
	r := analyzeHot(rounds, SharedClient, 2, ms)
	if r.Window != 20*ms || r.Work != ms {
		t.Errorf("Window %v, Work %v; want 20ms, 1ms", r.Window, r.Work)
	}
	if r.Grants != 5 || r.Handoffs != 2 {
		t.Errorf("grants %d, hand-offs %d; want 5, 2", r.Grants, r.Handoffs)
	}
	if want := Summarize([]time.Duration{ms, 2 * ms}); r.Handoff != want {
		t.Errorf("Handoff = %+v, want %+v", r.Handoff, want)
	}
	if !slices.Equal(r.PerClient, []int{2, 3}) || r.Fairness != 1.5 {
		t.Errorf("PerClient %v, Fairness %v; want [2 3], 1.5", r.PerClient, r.Fairness)
	}
	if r.Errors != 3 || r.FirstError != "first" {
		t.Errorf("errors %d %q; want 3 \"first\"", r.Errors, r.FirstError)
	}
	if r.GrantsPerSec() != 250 {
		t.Errorf("GrantsPerSec = %v, want 250", r.GrantsPerSec())
	}
}

func TestAnalyzeHotWaitAllAndRuns(t *testing.T) {
	const ms = time.Millisecond
	rounds := []hotRound{
		{window: 100 * ms, calls: []call{
			{client: 0, asked: 0, granted: 10 * ms, unlock: 11 * ms, release: 12 * ms},
			{client: 1, asked: 0, granted: 30 * ms, unlock: 31 * ms, release: 32 * ms},
			// Still waiting at the end: 100-40 ms waited.
			{client: 0, asked: 40 * ms, granted: never},
			// Granted after the window: waiting at its end, 100-90 ms.
			{client: 1, asked: 90 * ms, granted: 120 * ms, unlock: 121 * ms, release: 122 * ms},
		}},
		{window: 200 * ms, calls: []call{
			{client: 0, asked: 0, granted: 20 * ms, unlock: 21 * ms, release: 22 * ms},
		}},
	}
	r := analyzeHot(rounds, ProcessPerContender, 2, 0)
	if want := Summarize([]time.Duration{10 * ms, 30 * ms, 20 * ms}); r.Wait != want {
		t.Errorf("Wait = %+v, want %+v", r.Wait, want)
	}
	if want := Summarize([]time.Duration{10 * ms, 30 * ms, 20 * ms, 60 * ms, 10 * ms}); r.WaitAll != want {
		t.Errorf("WaitAll = %+v, want %+v", r.WaitAll, want)
	}
	if want := []float64{20, 5}; !slices.Equal(r.Runs, want) {
		t.Errorf("Runs = %v, want %v grants/s", r.Runs, want)
	}
}
