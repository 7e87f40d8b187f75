package bench

import "testing"

func TestHeldTargets(t *testing.T) {
	r := sampleResults()
	r.Config.HeldLocks, r.Config.HeldTTL = []int{200_000, 400_000}, 3e9
	r.Held = []HeldResult{
		// goredis: every admitted lock kept, Warn lines within the rate,
		// the 400,000 case ended with Close and logged nothing then.
		{Lib: "goredis", Locks: 200_000, Taken: 150_000, Refused: 50_000, Warn: 12, WarnPerNodeSecond: 1},
		{Lib: "goredis", Locks: 400_000, Taken: 150_000, Refused: 250_000, Warn: 30, WarnPerNodeSecond: 1, Closed: true},
		// redigo: a lock lost, one failure that is no refusal, 3 Warn
		// lines of a node in a second, Close logged 2.
		{Lib: "redigo", Locks: 200_000, Taken: 149_999, Refused: 50_000, Failed: 1, Lost: 1, Warn: 9, WarnPerNodeSecond: 3, Closed: true, CloseWarn: 2},
	}
	want := []struct {
		target  string
		cells   []string // goredis, redigo, rueidis, valkey
		overall Verdict
	}{
		{"every admitted auto-extended lock kept (0 lost), the rest refused with ErrOverloaded",
			[]string{"200,000: 0 lost of 150,000 admitted, 50,000 refused; 400,000: 0 lost of 150,000 admitted, 250,000 refused PASS",
				"200,000: 1 lost of 149,999 admitted, 50,000 refused, 1 failed otherwise* MISS", "—", "—"}, Miss},
		{"≤ 1 Warn line per node per second",
			[]string{"200,000: 1/node·s (12 lines); 400,000: 1/node·s (30 lines) PASS", "200,000: 3/node·s (9 lines)* MISS", "—", "—"}, Miss},
		{"Close() with the locks held: 0 Warn lines",
			[]string{"400,000: 0 lines PASS", "200,000: 2 lines* MISS", "—", "—"}, Miss},
	}
	rows := r.heldTargets()
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		if rows[i].Target != w.target {
			t.Errorf("row %d: %q, want %q", i, rows[i].Target, w.target)
			continue
		}
		checkCells(t, rows[i], w.cells, w.overall)
	}

	// Without redigo's case, goredis alone passes every row; with no case
	// at all, nothing is measured.
	r.Held = r.Held[:2]
	for _, row := range r.heldTargets() {
		if row.Overall != Pass {
			t.Errorf("%s with goredis alone: %v, want PASS", row.Target, row.Overall)
		}
	}
	r.Held = nil
	for _, row := range r.heldTargets() {
		if row.Overall != NotMeasured {
			t.Errorf("%s with no held case: %v, want not measured", row.Target, row.Overall)
		}
	}
}
