package script_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestReleaseSentAgain checks, on a redis-server, that a release sent again
// to a node where the first one ran is harmless, as package dlm's retries
// of releases need (dlm/rerelease.go): a lock's release frees nothing
// more, hands no turn twice and announces nothing, whether the waiter it
// handed the key to still has it reserved or has taken it; and a failed
// attempt's release sent again without the waiter's id frees only what
// holds the attempt's secret and never puts the waiter back in a line it
// left.
func TestReleaseSentAgain(t *testing.T) {
	t.Parallel()
	s, n, h, _, hang := startLineServer(t)
	ctx := context.Background()
	chA, chB := script.ManagerChannel(lk, mgrA), script.ManagerChannel(lk, mgrB)

	loud, quiet := script.Flag{Mode: script.Loud}.Arg(), script.Flag{}.Arg()
	keys := append([]string{lk}, script.LinesOf([]string{lk})...)
	eval := func(s *driver.Script, args ...string) any {
		t.Helper()
		v, err := n.Eval(ctx, s, keys, args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	acquire := func(secret, id, ticket string) any {
		return eval(script.Acquire, secret, ttl, id, life, ticket, bound, "1", loud)
	}
	release := func(secret, id, ticket, how, flag string) any {
		return eval(script.Release, secret, id, ticket, life, reserve, how, flag)
	}
	line := func() string {
		v, err := s.Do("ZRANGE", script.LineKeys(lk)[0], "0", "-1")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range v.([]any) {
			out = append(out, m.(string))
		}
		return strings.Join(out, ",")
	}
	check := func(step string, reply, wantReply any, wantKey, wantLine string, wantHeard []string) {
		t.Helper()
		if !equal(reply, wantReply) {
			t.Errorf("%s: reply %v; want %v", step, reply, wantReply)
		}
		v, _ := s.Do("GET", lk)
		if got, _ := v.(string); got != wantKey {
			t.Errorf("%s: key %q; want %q", step, got, wantKey)
		}
		if got := line(); got != wantLine {
			t.Errorf("%s: line %q; want %q", step, got, wantLine)
		}
		if got := h.take(t, s, chA, hang); strings.Join(got, "|") != strings.Join(wantHeard, "|") {
			t.Errorf("%s: heard %q; want %q", step, got, wantHeard)
		}
	}

	check("w3 holds the key, fair", acquire("s-w3", w3, "10"), []any{int64(1), int64(0)}, "s-w3", "", nil)
	check("w1 refused, placed", acquire("s-w1", w1, "20"), []any{int64(0), int64(20), heldFor, int64(0)}, "s-w3", w1, nil)
	check("w2 refused, placed", acquire("s-w2", w2, "30"), []any{int64(0), int64(30), heldFor, int64(0)}, "s-w3", w1+","+w2, nil)
	check("w3's release hands the key to w1", release("s-w3", w3, "10", script.ReleaseLock, loud), int64(1), script.ReservedFor(w1), w2, []string{chA + " " + w1})
	check("w3's release again: w1 keeps its turn, w2 its place, nobody told", release("s-w3", w3, "10", script.ReleaseLock, loud), int64(0), script.ReservedFor(w1), w2, nil)
	check("w1 takes its reservation", acquire("s-w1b", w1, "20"), []any{int64(1), int64(0)}, "s-w1b", w2, nil)
	check("w3's release once more: w1's key stays", release("s-w3", w3, "10", script.ReleaseLock, loud), int64(0), "s-w1b", w2, nil)

	// w1's attempt fails elsewhere: its release keeps its turn, and puts it
	// back in line by its ticket; then it gives up, and leaves.
	check("w1's failed attempt keeps its turn", release("s-w1b", w1, "20", script.ReleaseKeepTurn, quiet), int64(1), script.ReservedFor(w1), w1+","+w2, nil)
	eval(script.Leave, w1, reserve, loud)
	check("w1 leaves: w2 gets the key", nil, nil, script.ReservedFor(w2), "", []string{chB + " " + w2})
	// The attempt's release sent again, as package dlm sends it: without
	// the waiter's id, as a plain failed attempt's.
	check("w1's attempt's release again: w2's turn stays, w1 is not put back", release("s-w1b", "", "0", script.ReleaseAttempt, quiet), int64(0), script.ReservedFor(w2), "", nil)
	check("w2 takes its turn", acquire("s-w2b", w2, "30"), []any{int64(1), int64(0)}, "s-w2b", "", nil)
	check("w1's attempt's release once more: w2's key stays", release("s-w1b", "", "0", script.ReleaseAttempt, quiet), int64(0), "s-w2b", "", nil)
}
