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
type batchSlots struct {
	per   int // batches in flight a node may have
	mu    sync.Mutex
	busy  []int         // batches in flight, by node
	freed chan struct{} // a slot was given back; capacity 1
}

// batchesInFlight is how many batches of auto-extension a manager may have
// in flight to one node: a few round trips' worth of the extensions of
// hundreds of thousands of locks.
const batchesInFlight = 8

// errNodeBusy is the failure of a node that was not sent a batch of
// extensions: the manager's batches in flight to it filled its share while
// a quorum of the others could take it.
var errNodeBusy = errors.New("dlm: node busy: the manager's extension batches in flight to it fill its share")

func newBatchSlots(nodes int) *batchSlots {
	return &batchSlots{per: batchesInFlight, busy: make([]int, nodes), freed: make(chan struct{}, 1)}
}

// take waits until at least need of nodes have a free slot, and takes
// those slots: free marks them, by position in nodes, and why is the
// failure of the others. It gives up at last, or when done is closed: free
// is then nil, and why says which.
func (b *batchSlots) take(nodes []int, need int, last time.Time, done <-chan struct{}) (free []bool, why error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		n := 0
		for _, i := range nodes {
			if b.busy[i] < b.per {
				n++
			}
		}
		if n >= need {
			free = make([]bool, len(nodes))
			for k, i := range nodes {
				if b.busy[i] < b.per {
					b.busy[i]++
					free[k] = true
				}
			}
			b.mu.Unlock()
			return free, errNodeBusy
		}
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(last))
		}
		select {
		case <-b.freed:
		case <-timer.C:
			return nil, errNodeBusy
		case <-done:
			return nil, ErrClosed
		}
	}
}

// give gives node i's slot back.
func (b *batchSlots) give(i int) {
	b.mu.Lock()
	b.busy[i]--
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}
