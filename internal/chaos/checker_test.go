package chaos

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

const ms = time.Millisecond

// g builds a grant for tests: acquire from start, granted at granted, valid
// until until, released at rel (-1: never), all in milliseconds.
func g(key, client string, start, granted, until, rel int, token uint64) Grant {
	r := time.Duration(rel) * ms
	if rel < 0 {
		r = -1
	}
	return Grant{Key: key, Client: client, Start: time.Duration(start) * ms, Granted: time.Duration(granted) * ms,
		Until: time.Duration(until) * ms, Released: r, Token: token}
}

func numbered(gs ...Grant) []Grant {
	for i := range gs {
		gs[i].ID = i
	}
	return gs
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		grants            []Grant
		overlaps, fencing int
	}{
		{"one after the other", numbered(
			g("k", "a", 0, 10, 100, 20, 0),
			g("k", "b", 5, 20, 110, 30, 0)), 0, 0},
		{"overlap", numbered(
			g("k", "a", 0, 10, 100, 30, 0),
			g("k", "b", 5, 20, 110, 40, 0)), 1, 0},
		{"released late but expired first", numbered(
			g("k", "a", 0, 10, 20, 50, 0), // paused past Until
			g("k", "b", 5, 25, 110, 40, 0)), 0, 0},
		{"abandoned lock runs to Until", numbered(
			g("k", "a", 0, 10, 50, -1, 0),
			g("k", "b", 5, 40, 110, 60, 0)), 1, 0},
		{"empty window is no claim", numbered(
			g("k", "a", 0, 30, 25, 35, 0),
			g("k", "b", 5, 20, 110, 40, 0)), 0, 0},
		{"other keys are independent", numbered(
			g("k1", "a", 0, 10, 100, 30, 0),
			g("k2", "b", 5, 20, 110, 40, 0)), 0, 0},
		{"one long window, two inside", numbered(
			g("k", "a", 0, 0, 100, 100, 0),
			g("k", "b", 5, 10, 110, 20, 0),
			g("k", "c", 5, 30, 110, 40, 0)), 2, 0},
		{"tokens increase", numbered(
			g("k", "a", 0, 10, 100, 20, 1),
			g("k", "b", 0, 20, 100, 30, 2),
			g("k", "c", 0, 30, 100, 40, 5)), 0, 0},
		{"token goes back", numbered(
			g("k", "a", 0, 10, 100, 20, 1),
			g("k", "b", 0, 20, 100, 30, 3),
			g("k", "c", 0, 30, 100, 40, 2)), 0, 1},
		{"token repeats", numbered(
			g("k", "a", 0, 10, 100, 20, 4),
			g("k", "b", 0, 20, 100, 30, 4)), 0, 1},
		{"no token is skipped", numbered(
			g("k", "a", 0, 10, 100, 20, 1),
			g("k", "b", 0, 20, 100, 30, 0),
			g("k", "c", 0, 30, 100, 40, 2)), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.grants)
			if r.Count(Overlap) != tc.overlaps || r.Count(Fencing) != tc.fencing {
				t.Errorf("%d overlaps, %d fencing violations; want %d, %d: %v", r.Count(Overlap), r.Count(Fencing), tc.overlaps, tc.fencing, r.Violations)
			}
			for _, v := range r.Violations {
				t.Log(v)
			}
			res, _ := CheckLinearizable(tc.grants, 0)
			if want := len(r.Violations) > 0; (res == porcupine.Illegal) != want {
				t.Errorf("porcupine says %v; the exact checker found %d violations", res, len(r.Violations))
			}
		})
	}
}

func TestCheckOverlapDuration(t *testing.T) {
	t.Parallel()
	r := Check(numbered(g("k", "a", 0, 10, 100, 30, 0), g("k", "b", 5, 20, 110, 40, 0)))
	if len(r.Violations) != 1 || r.Violations[0].Overlap != 10*ms || r.Violations[0].First.Client != "a" {
		t.Fatalf("violations %v; want one of 10ms with a first", r.Violations)
	}
	if r.Ops != 4 || r.Grants != 2 || r.Keys != 1 {
		t.Errorf("report %+v; want 4 ops, 2 grants, 1 key", r)
	}
}

// history makes a random contended history of n grants on each of keys keys
// by clients clients: each grant's acquire began while earlier holders held
// the lock, as a waiting client's does. With overlaps > 0, that many grants
// are moved into the previous window; with badTokens, that many pairs of
// successive tokens are swapped.
func history(r *rand.Rand, keys, n, clients, overlaps, badTokens int) []Grant {
	var out []Grant
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("key%d", k)
		at := time.Duration(0)
		var gs []Grant
		for i := 0; i < n; i++ {
			at += time.Duration(r.IntN(5)) * ms // gap
			hold := time.Duration(1+r.IntN(20)) * ms
			gr := Grant{
				Key: key, Client: fmt.Sprintf("c%d", r.IntN(clients)),
				Start: max(0, at-time.Duration(r.IntN(60))*ms), Granted: at,
				Token: uint64(i + 1),
			}
			switch r.IntN(3) {
			case 0: // released before Until
				gr.Released, gr.Until = at+hold, at+hold+time.Duration(1+r.IntN(10))*ms
			case 1: // paused past Until
				gr.Until, gr.Released = at+hold, at+hold+time.Duration(r.IntN(30))*ms
			default: // abandoned
				gr.Until, gr.Released = at+hold, -1
			}
			at += hold
			gs = append(gs, gr)
		}
		for j := 0; j < overlaps; j++ {
			i := 1 + r.IntN(n-1)
			prev := gs[i-1]
			shift := gs[i].Granted - (prev.Granted + (prev.End()-prev.Granted)/2)
			gs[i].Start, gs[i].Granted = max(0, gs[i].Start-shift), gs[i].Granted-shift
		}
		for j := 0; j < badTokens; j++ {
			i := 1 + r.IntN(n-1)
			gs[i].Token, gs[i-1].Token = gs[i-1].Token, gs[i].Token
		}
		out = append(out, gs...)
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		out[i].ID = i
	}
	return out
}

// TestCheckersAgree runs the exact checker and porcupine on the same random
// histories, safe and unsafe, and wants the same verdict from both.
func TestCheckersAgree(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	unsafe := 0
	for i := 0; i < 400; i++ {
		overlaps, bad := 0, 0
		switch i % 4 {
		case 1:
			overlaps = 1 + r.IntN(3)
		case 2:
			bad = 1
		}
		h := history(r, 1+r.IntN(3), 2+r.IntN(60), 1+r.IntN(8), overlaps, bad)
		rep := Check(h)
		res, _ := CheckLinearizable(h, 10*time.Second)
		if res == porcupine.Unknown {
			t.Fatalf("history %d: porcupine timed out", i)
		}
		if exact := len(rep.Violations) > 0; exact != (res == porcupine.Illegal) {
			t.Fatalf("history %d: exact checker found %d violations %v; porcupine says %v", i, len(rep.Violations), rep.Violations, res)
		}
		if len(rep.Violations) > 0 {
			unsafe++
		}
	}
	if unsafe < 100 {
		t.Errorf("only %d of 400 histories were unsafe; the generator is off", unsafe)
	}
	t.Logf("400 random histories, %d unsafe: both checkers agree on every one", unsafe)
}

// TestCheckerScaling times both checkers on one key's history of up to 20k
// operations, safe and with one overlap in it.
func TestCheckerScaling(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{500, 2500, 10000} {
		for _, overlaps := range []int{0, 1} {
			h := history(r, 1, n, 8, overlaps, 0)
			start := time.Now()
			rep := Check(h)
			exact := time.Since(start)
			start = time.Now()
			res, ops := CheckLinearizable(h, 60*time.Second)
			lin := time.Since(start)
			if (len(rep.Violations) > 0) != (res == porcupine.Illegal) {
				t.Errorf("%d ops, %d overlaps: exact %d violations, porcupine %v", ops, overlaps, len(rep.Violations), res)
			}
			line := fmt.Sprintf("chaos-checkers: ops=%d injected_overlaps=%d exact=%v (%d violations) porcupine=%v (%v)",
				ops, overlaps, exact.Round(time.Microsecond), len(rep.Violations), lin.Round(time.Microsecond), res)
			t.Log(line)
			fmt.Println(line)
		}
	}
}
