package dlm

import (
	"errors"
	"sync"
	"time"
)

// batchSlots bounds the batches of auto-extension in flight to each node
// of a manager. Under load the extensions then wait in the extender, which
// sends them nearest to the end of their validity first, rather than in
// the nodes' connections and input buffers, where every one of them would
// be late, and time out, at once.
//
// A batch waits for every node of its set to have a slot: one that skipped
// a node would let its locks' keys lapse there, and a lock whose keys lapse
// on a quorum is lost. Only a node that has finished none of its batches
// for a node timeout, stalled or gone, is passed over, so that it holds no
// one up.
type batchSlots struct {
	per  int // batches in flight a node may have
	mu   sync.Mutex
	busy []int // batches in flight, by node
	// last is when each node last finished a batch, or was sent one while
	// it had none in flight.
	last  []time.Time
	freed chan struct{}
}

// batchesInFlight is how many batches of auto-extension a manager may have
// in flight to one node: a few round trips' worth of the extensions of
// hundreds of thousands of locks, on a busy machine.
const batchesInFlight = 8

// errNodeBusy is the failure of a node that was not sent a batch of
// extensions: the manager's batches in flight to it filled its share, and
// it had finished none of them for a node timeout.
var errNodeBusy = errors.New("dlm: node stalled: it finished none of the manager's extension batches in flight for a node timeout")

// errTooLate is the failure of the nodes not sent a batch of extensions
// because the first of its locks had less than half a node timeout left
// to be extended: the process did not send it in time.
var errTooLate = errors.New("dlm: extension batch not sent: too little of its locks' validity left for a reply")

func newBatchSlots(nodes int) *batchSlots {
	now := time.Now()
	last := make([]time.Time, nodes)
	for i := range last {
		last[i] = now
	}
	return &batchSlots{per: batchesInFlight, busy: make([]int, nodes), last: last, freed: make(chan struct{}, 1)}
}

// take waits until every one of nodes has a free slot or has stalled
// (finished no batch for stall), and at least need have a free slot, and
// takes the free slots: free marks them, by position in nodes, and why is
// the failure of the others. It gives up at last, or when done is closed:
// free is then nil, and why says which.
func (b *batchSlots) take(nodes []int, need int, stall time.Duration, last time.Time, done <-chan struct{}) (free []bool, why error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := time.Now()
		wake := last
		b.mu.Lock()
		n, stalled := 0, 0
		for _, i := range nodes {
			switch since := now.Sub(b.last[i]); {
			case b.busy[i] < b.per:
				n++
			case since >= stall:
				stalled++
			default:
				wake = minTime(wake, b.last[i].Add(stall))
			}
		}
		if n+stalled == len(nodes) && n >= need {
			free = make([]bool, len(nodes))
			for k, i := range nodes {
				if b.busy[i] < b.per {
					if b.busy[i] == 0 {
						b.last[i] = now // idle until now: no stall
					}
					b.busy[i]++
					free[k] = true
				}
			}
			b.mu.Unlock()
			return free, errNodeBusy
		}
		b.mu.Unlock()
		if !now.Before(last) {
			return nil, errNodeBusy
		}
		if timer == nil {
			timer = time.NewTimer(wake.Sub(now))
		} else {
			timer.Reset(wake.Sub(now))
		}
		select {
		case <-b.freed:
		case <-timer.C:
		case <-done:
			return nil, ErrClosed
		}
	}
}

// give gives node i's slot back, as a batch finished.
func (b *batchSlots) give(i int) {
	b.mu.Lock()
	b.busy[i]--
	b.last[i] = time.Now()
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}
