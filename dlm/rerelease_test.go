package dlm

import (
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestAgainRequest checks what a release sent again carries: a lock's
// release and a lease's go as they were; a failed attempt's release of
// the mutex goes without the waiter's id, as a plain failed attempt's
// ([script.ReleaseAttempt]), so that it never gives the waiter a place or
// a reserved key back (see TestReleaseSentAgain in package script); and
// none carries the nodes the first release was limited to.
func TestAgainRequest(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	rkeys := []string{rkey("k")}
	w := &waiter{id: strings.Repeat("w", script.WaiterIDLen), ticket: 7}
	until := time.Unix(1000, 0)
	for _, tc := range []struct {
		name            string
		req             *round.Request
		wantID, wantHow string
	}{
		{"lock", releaseRequest(&cfg, rkeys, "s", w, script.ReleaseLock, false), w.id, script.ReleaseLock},
		{"attempt", releaseRequest(&cfg, rkeys, "s", w, script.ReleaseAttempt, false), "", script.ReleaseAttempt},
		{"attempt keeping its turn", releaseRequest(&cfg, rkeys, "s", w, script.ReleaseKeepTurn, false), "", script.ReleaseAttempt},
		{"attempt of no waiter", releaseRequest(&cfg, rkeys, "s", nil, script.ReleaseAttempt, false), "", script.ReleaseAttempt},
		{"read lock", readLease.releaseRequest(&cfg, readLease.keys(rkeys[0]), "s", true), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Until = until
			tc.req.Only = []bool{true, false, true}
			before := append([]string(nil), tc.req.Args...)
			got := againRequest(tc.req)
			if got.Only != nil || !got.Until.Equal(until) || got.Script != tc.req.Script || got.Timeout != tc.req.Timeout {
				t.Errorf("againRequest(%s) = %+v; want the request without Only", tc.name, got)
			}
			if strings.Join(tc.req.Args, " ") != strings.Join(before, " ") {
				t.Errorf("againRequest(%s) changed the first request's arguments to %q; want %q", tc.name, tc.req.Args, before)
			}
			if tc.req.Script != script.Release {
				if strings.Join(got.Args, " ") != strings.Join(before, " ") {
					t.Errorf("againRequest(%s).Args = %q; want %q", tc.name, got.Args, before)
				}
				return
			}
			if got.Args[0] != "s" || got.Args[1] != tc.wantID || got.Args[5] != tc.wantHow {
				t.Errorf("againRequest(%s): secret %q, waiter %q, how %q; want %q, %q, %q", tc.name, got.Args[0], got.Args[1], got.Args[5], "s", tc.wantID, tc.wantHow)
			}
			for i := range 3 {
				if args := got.ArgsFor(i); args[1] != tc.wantID || args[5] != tc.wantHow {
					t.Errorf("againRequest(%s).ArgsFor(%d) = %q; want waiter %q, how %q", tc.name, i, args, tc.wantID, tc.wantHow)
				}
			}
		})
	}
}
