package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Clients says how the contenders of a hot-key case reach the nodes.
type Clients int

const (
	// SharedClient: the contenders are goroutines of one process sharing
	// one client (one dlm.Manager; one redsync over one go-redis client
	// per node), each with a handle of its own on the key.
	SharedClient Clients = iota
	// ClientPerContender: every contender has a client of its own, with
	// its own connections, as separate processes would.
	ClientPerContender
	// ProcessPerContender: every contender is a process of its own, with
	// its own client (see procs.go).
	ProcessPerContender
)

// ClientModes are the ways of reaching the nodes that the in-process
// hot-key cases run in, in the report's order. The cases with a process
// per contender follow them.
var ClientModes = []Clients{SharedClient, ClientPerContender}

// String is the mode's part of a case name: "shared", "per-contender",
// "procs".
func (c Clients) String() string {
	switch c {
	case ClientPerContender:
		return "per-contender"
	case ProcessPerContender:
		return "procs"
	}
	return "shared"
}

// phrase describes the mode after "N contenders": "sharing one client",
// "with a client each", "in processes of their own".
func (c Clients) phrase() string {
	switch c {
	case ClientPerContender:
		return "with a client each"
	case ProcessPerContender:
		return "in processes of their own"
	}
	return "sharing one client"
}

// HotResult is one hot-key run: contenders goroutines, each with its own
// handle, taking turns on one key, holding it for Work each time.
type HotResult struct {
	Lib        string
	Clients    Clients
	Contenders int
	Work       time.Duration // time spent holding the lock, per grant
	Window     time.Duration // grants are counted while this runs: all rounds

	Grants   int // Lock calls that returned the lock within the window
	Handoffs int // grants that went to another client than the grant before
	// Handoff is the time from the previous holder's Unlock returning to
	// the next holder's Lock returning, for hand-offs. The next grant may
	// complete before the previous Unlock has heard every node's reply;
	// such hand-offs count as 0 and are counted in Overlaps.
	Handoff  Dist
	Overlaps int
	// ToWaiter is, for every Unlock called while another client was
	// waiting, the time from that Unlock returning to the next grant to a
	// client other than the releaser. Unlike Handoff it counts the turns
	// the releaser takes again while others wait, so a polling waiter that
	// is slow to notice shows here even when the few hand-offs it wins are
	// quick. Releases whose waiter was still waiting at the window's end
	// are left out.
	ToWaiter Dist
	// Wait is the time from Lock being called to it returning the lock,
	// over the grants. WaitMax also counts the Lock calls still waiting
	// when the window closed (Censored of them), with what they had waited.
	Wait     Dist
	WaitMax  time.Duration
	Censored int
	// WaitAll is Wait with the Lock calls still waiting when the window
	// closed counted too, each with what it had waited by then (a lower
	// bound of its wait), so that contenders starved through a run weigh
	// in rather than drop out.
	WaitAll Dist
	// PerClient is each contender's number of grants; Fairness is the
	// largest over the smallest (+Inf when one got none: Starved of them).
	PerClient []int
	Fairness  float64
	Starved   int
	// Violations counts grants that returned before an earlier holder had
	// even called Unlock: two holders at once. It must be 0.
	Violations int
	Errors     int    // failed Lock or Unlock calls, other than at the window's end
	FirstError string // the first of them

	// Runs are the grants/s of each run (round) of the case, in order: the
	// no-collapse check compares them.
	Runs []float64

	// The rest is measured in the cases with a process per contender only.

	// MarkerChecked counts the grants checked against the holder marker
	// shared by the processes (0 where memory cannot be shared), and
	// MarkerViolations those that found another holder there: two holders
	// at once, seen apart from the timestamps. It must be 0.
	MarkerChecked    int
	MarkerViolations int
	// Commands are the commands the servers processed over the measured
	// runs (INFO commandstats, scripts' own calls included, the harness's
	// INFO left out), by command name; ServerCPU the CPU time the servers
	// used meanwhile (INFO cpu). Nil and 0 when the servers did not tell.
	Commands  map[string]int64
	ServerCPU time.Duration
	// ClockError bounds how far apart two processes' instants of one
	// reading of the shared clock can be (sharedClock); StartLag is the
	// longest a contender began after a run's start instant.
	ClockError time.Duration
	StartLag   time.Duration
}

// GrantsPerSec is the rate of grants over the window.
func (r *HotResult) GrantsPerSec() float64 { return perSec(r.Grants, r.Window) }

// HandoffsPerSec is the rate of hand-offs to another client over the window.
func (r *HotResult) HandoffsPerSec() float64 { return perSec(r.Handoffs, r.Window) }

// CommandsPerHandoff is the number of commands the servers processed per
// hand-off over the case, NaN when they were not counted or there was no
// hand-off.
func (r *HotResult) CommandsPerHandoff() float64 {
	if r.Commands == nil || r.Handoffs == 0 {
		return math.NaN()
	}
	return float64(sumCommands(r.Commands)) / float64(r.Handoffs)
}

// ServerCPUPerHandoff is the servers' CPU time per hand-off over the case,
// 0 when unknown or there was no hand-off.
func (r *HotResult) ServerCPUPerHandoff() time.Duration {
	if r.ServerCPU <= 0 || r.Handoffs == 0 {
		return 0
	}
	return r.ServerCPU / time.Duration(r.Handoffs)
}

// Collapsed returns the runs of the case whose grants/s fell below half
// the median of its runs, or to zero (see [Collapsed]).
func (r *HotResult) Collapsed() []int { return Collapsed(r.Runs) }

// call is one Lock call of one contender and, when it returned the lock,
// the Unlock that followed, in time since the run's start on the monotonic
// clock.
type call struct {
	client  int
	asked   time.Duration // Lock called
	granted time.Duration // Lock returned the lock; never if it did not
	unlock  time.Duration // Unlock called
	release time.Duration // Unlock returned
}

// never is the granted time of a call still waiting when the run ended.
const never = time.Duration(math.MaxInt64)

// hotRound is the record of one hot-key run: every Lock call, the run's
// length and the errors other than at its end; and, for a run of
// contender processes, the marker's checks and the processes' timing.
type hotRound struct {
	calls    []call
	window   time.Duration
	errors   int
	firstErr string

	markerChecked, markerOverlaps int
	clockErr, startLag            time.Duration
}

// contention is what one contender of a hot-key run did.
type contention struct {
	calls    []call
	errors   int
	firstErr string
	// checked counts the grants checked on the marker, overlaps those
	// that found another holder there.
	checked, overlaps int
}

// contend is one contender of a hot-key run: it locks m, holds it for
// work, unlocks it and at once locks it again, until ctx ends, timing each
// call since start (the Lock still waiting when ctx ends is recorded as
// never granted). Every grant is checked on marker, which may be nil.
func contend(ctx context.Context, m Mutex, client int, work time.Duration, start time.Time, marker *holderMarker) contention {
	var out contention
	fail := func(err error) {
		if out.errors++; out.firstErr == "" {
			out.firstErr = err.Error()
		}
	}
	for ctx.Err() == nil {
		k := call{client: client, asked: time.Since(start)}
		if err := m.Lock(ctx); err != nil {
			if ctx.Err() != nil {
				k.granted = never
				out.calls = append(out.calls, k)
				break
			}
			fail(err)
			continue
		}
		k.granted = time.Since(start)
		if marker.checks() {
			out.checked++
			if marker.hold() {
				out.overlaps++
			}
		}
		if work > 0 {
			time.Sleep(work)
		}
		marker.release()
		k.unlock = time.Since(start)
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := m.Unlock(uctx)
		cancel()
		k.release = time.Since(start)
		if err != nil {
			fail(err)
		}
		out.calls = append(out.calls, k)
	}
	return out
}

// runHot runs the hot-key scenario on key for window, one contender per
// client of clients (the same Locker as often as contenders share it), and
// records it. It returns an error only when ctx ends first.
func runHot(ctx context.Context, clients []Locker, key string, work, window time.Duration) (hotRound, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		calls    []call
		errs     int
		firstErr string
	)
	contenders := len(clients)
	mutexes := make([]Mutex, contenders)
	for i, lk := range clients {
		mutexes[i] = lk.Mutex(key)
	}
	// start and runCtx are set before ready is closed and read after.
	ready := make(chan struct{})
	var start time.Time
	var runCtx context.Context
	for c := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			mine := contend(runCtx, mutexes[c], c, work, start, nil)
			mu.Lock()
			calls = append(calls, mine.calls...)
			if errs += mine.errors; firstErr == "" {
				firstErr = mine.firstErr
			}
			mu.Unlock()
		}()
	}
	var cancel context.CancelFunc
	start = time.Now()
	runCtx, cancel = context.WithDeadline(ctx, start.Add(window))
	defer cancel()
	close(ready)
	wg.Wait()
	return hotRound{calls: calls, window: window, errors: errs, firstErr: firstErr}, ctx.Err()
}

// analyzeHot turns the rounds of a hot-key case into its result: counts
// and samples of all rounds together, over their total window. Only grants
// made within a round's window count. A round's grants are ordered by when
// Lock returned, which is the order of the holders when the lock is safe:
// a grant that returned before any earlier holder called Unlock is a
// violation.
func analyzeHot(rounds []hotRound, clients Clients, contenders int, work time.Duration) HotResult {
	r := HotResult{Clients: clients, Contenders: contenders, Work: work, PerClient: make([]int, contenders)}
	var waits, waiting, handoffs, toWaiters []time.Duration
	for _, round := range rounds {
		r.Window += round.window
		if r.Errors += round.errors; r.FirstError == "" {
			r.FirstError = round.firstErr
		}
		r.MarkerChecked += round.markerChecked
		r.MarkerViolations += round.markerOverlaps
		r.ClockError = max(r.ClockError, round.clockErr)
		r.StartLag = max(r.StartLag, round.startLag)
		in := make([]call, 0, len(round.calls))
		for _, k := range round.calls {
			switch {
			case k.granted == never:
				r.Censored++
				r.WaitMax = max(r.WaitMax, round.window-k.asked)
				fallthrough
			case k.granted >= round.window:
				if k.asked < round.window {
					waiting = append(waiting, round.window-k.asked)
				}
			default:
				in = append(in, k)
			}
		}
		slices.SortFunc(in, func(a, b call) int { return cmp.Compare(a.granted, b.granted) })
		var lastUnlock time.Duration // the latest Unlock call of the grants before
		for i, g := range in {
			r.PerClient[g.client]++
			waits = append(waits, g.granted-g.asked)
			if i == 0 {
				lastUnlock = g.unlock
				continue
			}
			prev := in[i-1]
			if g.granted < lastUnlock {
				r.Violations++
			}
			lastUnlock = max(lastUnlock, g.unlock)
			if g.client == prev.client {
				continue
			}
			lat := g.granted - prev.release
			if lat < 0 {
				lat = 0
				r.Overlaps++
			}
			handoffs = append(handoffs, lat)
		}
		r.Grants += len(in)
		r.Runs = append(r.Runs, perSec(len(in), round.window))
		toWaiters = append(toWaiters, toWaiter(in, round.calls, contenders)...)
	}
	r.Handoffs = len(handoffs)
	r.Handoff = Summarize(handoffs)
	r.ToWaiter = Summarize(toWaiters)
	r.Wait = Summarize(waits)
	r.WaitAll = Summarize(append(waits, waiting...))
	r.WaitMax = max(r.WaitMax, r.Wait.Max)
	r.Fairness = Fairness(r.PerClient)
	r.Starved = Starved(r.PerClient)
	return r
}

// toWaiter returns, for each grant of in (sorted, within the window) whose
// Unlock was called while another client waited, the time from that Unlock
// returning to the next grant to a client other than the releaser (0 when
// that grant came first). calls, every Lock call of
// the run, tell who was waiting when.
func toWaiter(in, calls []call, contenders int) []time.Duration {
	// Each client's Lock calls, in order: it waits from asked to granted.
	byClient := make([][]call, contenders)
	for _, k := range calls {
		byClient[k.client] = append(byClient[k.client], k)
	}
	for _, ks := range byClient {
		slices.SortFunc(ks, func(a, b call) int { return cmp.Compare(a.asked, b.asked) })
	}
	waitingAt := func(c int, t time.Duration) bool {
		ks := byClient[c]
		// The last call asked at or before t, if any, decides.
		i := sort.Search(len(ks), func(i int) bool { return ks[i].asked > t })
		return i > 0 && t < ks[i-1].granted
	}
	// nextOther[i] is the first grant after in[i] by another client, or -1.
	nextOther := make([]int, len(in))
	for i := len(in) - 1; i >= 0; i-- {
		switch {
		case i == len(in)-1:
			nextOther[i] = -1
		case in[i+1].client != in[i].client:
			nextOther[i] = i + 1
		default:
			nextOther[i] = nextOther[i+1]
		}
	}
	var out []time.Duration
	for i, g := range in {
		j := nextOther[i]
		if j < 0 {
			continue // any waiter was still waiting at the end
		}
		for c := range contenders {
			if c != g.client && waitingAt(c, g.unlock) {
				out = append(out, max(in[j].granted-g.release, 0))
				break
			}
		}
	}
	return out
}

// perSec is n events over d as a rate.
func perSec(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// String is a one-line summary for the progress log.
func (r *HotResult) String() string {
	return fmt.Sprintf("%.0f grants/s, %.0f hand-offs/s, hand-off p50 %v p99 %v, release→waiter p50 %v p99 %v, wait p50 %v p99 %v max %v, max/min grants %.2f, violations %d, errors %d",
		r.GrantsPerSec(), r.HandoffsPerSec(), r.Handoff.P50, r.Handoff.P99, r.ToWaiter.P50, r.ToWaiter.P99,
		r.Wait.P50, r.Wait.P99, r.WaitMax, r.Fairness, r.Violations, r.Errors)
}
