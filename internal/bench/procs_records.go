package bench

import (
	"errors"
	"fmt"
	"time"
)

// contenderRun is what one contender process sent for a run.
type contenderRun struct {
	client         int
	calls          []call
	done           doneMsg
	malformed      int    // lines or records that were not the protocol's
	firstMalformed string // the first of them
}

// readRun reads the contender's lines for one run of window, up to its
// done line. Records that are not possible for a run of window are counted
// as malformed, not used.
func (c *contenderProc) readRun(window time.Duration) (contenderRun, error) {
	r := contenderRun{client: c.client}
	for {
		m, err := c.read()
		if errors.Is(err, errMalformed) {
			r.addMalformed(err.Error())
			continue
		}
		if err != nil {
			return r, err
		}
		switch {
		case m.Call != nil:
			k, err := decodeCall(m.Call, c.client, window)
			if err != nil {
				r.addMalformed(fmt.Sprintf("contender %d: %v", c.client, err))
				continue
			}
			r.calls = append(r.calls, k)
		case m.Done != nil:
			r.done = *m.Done
			if sent := len(r.calls) + r.malformed; r.done.Calls > sent {
				r.addMalformed(fmt.Sprintf("contender %d: %d call lines missing", c.client, r.done.Calls-sent))
			}
			return r, nil
		default:
			r.addMalformed(fmt.Sprintf("contender %d: a line with neither a call nor done", c.client))
		}
	}
}

func (r *contenderRun) addMalformed(text string) {
	if r.malformed++; r.firstMalformed == "" {
		r.firstMalformed = truncate(text, maxErrorText)
	}
}

// maxCallTime bounds a call's times past its run's window: the last Lock
// ends with the window, the last Unlock within its 5 s timeout.
const maxCallTime = time.Minute

// decodeCall checks a call record from a contender of a run of window and
// returns it as the call of client.
func decodeCall(rec []int64, client int, window time.Duration) (call, error) {
	if len(rec) != 4 {
		return call{}, fmt.Errorf("call record of %d numbers, want 4", len(rec))
	}
	limit := int64(window + maxCallTime)
	a, g, u, rel := rec[0], rec[1], rec[2], rec[3]
	if a < 0 || a > limit {
		return call{}, fmt.Errorf("call asked at %v, outside the run", time.Duration(a))
	}
	if g == neverGranted {
		return call{client: client, asked: time.Duration(a), granted: never}, nil
	}
	if !(a <= g && g <= u && u <= rel && rel <= limit) {
		return call{}, fmt.Errorf("call times %v out of order or outside the run", rec)
	}
	return call{client: client, asked: time.Duration(a), granted: time.Duration(g), unlock: time.Duration(u), release: time.Duration(rel)}, nil
}

// mergeRuns merges what the contender processes of one run of window sent
// into the run's record, on the time line of the shared clock: every call,
// the errors (malformed lines among them), the marker's checks and the
// latest start.
func mergeRuns(runs []contenderRun, window time.Duration) hotRound {
	round := hotRound{window: window}
	for _, r := range runs {
		round.calls = append(round.calls, r.calls...)
		round.errors += r.done.Errors + r.malformed
		if round.firstErr == "" {
			round.firstErr = r.done.FirstErr
		}
		if round.firstErr == "" {
			round.firstErr = r.firstMalformed
		}
		round.markerChecked += r.done.Checked
		round.markerOverlaps += r.done.Overlaps
		round.startLag = max(round.startLag, r.done.Late)
	}
	return round
}
