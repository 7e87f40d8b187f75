package bench

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// compareAndDelete is the release a lock cycle needs: delete the key if it
// still holds the caller's token.
const compareAndDelete = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`

// PhysicalResult is what the nodes themselves can do: the bare commands of
// a lock cycle, SET NX PX and EVALSHA of a compare-and-delete, pipelined
// over raw connections with no client library in between.
type PhysicalResult struct {
	Nodes   int
	Conns   int // connections per node
	Batch   int // SET+EVALSHA pairs per pipelined round trip
	Pairs   int64
	Failed  int64 // pairs whose SET or EVALSHA did not answer as a free key should
	Elapsed time.Duration
}

// CyclesPerSec is the rate of whole lock cycles the nodes sustain: one SET
// and one EVALSHA on every node make one cycle.
func (r *PhysicalResult) CyclesPerSec() float64 {
	if r.Nodes == 0 {
		return 0
	}
	return perSec(int(r.Pairs), r.Elapsed) / float64(r.Nodes)
}

// CommandsPerSec is the rate of commands over all nodes.
func (r *PhysicalResult) CommandsPerSec() float64 { return 2 * perSec(int(r.Pairs), r.Elapsed) }

// runPhysical drives every node over conns connections each, sending batch
// pairs of SET key token NX PX ttl and EVALSHA compare-and-delete key token
// per round trip, for d.
func runPhysical(ctx context.Context, addrs []string, conns, batch int, ttl, d time.Duration) (PhysicalResult, error) {
	r := PhysicalResult{Nodes: len(addrs), Conns: conns, Batch: batch}
	sum := sha1.Sum([]byte(compareAndDelete))
	sha := hex.EncodeToString(sum[:])
	var cs []*respConn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	dialCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, a := range addrs {
		for i := range conns {
			c, err := dialRESP(dialCtx, a)
			if err != nil {
				return r, err
			}
			cs = append(cs, c)
			if i == 0 {
				got, err := c.do("SCRIPT", "LOAD", compareAndDelete)
				if err != nil {
					return r, fmt.Errorf("SCRIPT LOAD on %s: %w", a, err)
				}
				if got != sha {
					return r, fmt.Errorf("SCRIPT LOAD on %s: sha %v, want %s", a, got, sha)
				}
			}
			c.setDeadline(time.Time{})
		}
	}
	ttlMs := strconv.FormatInt(ttl.Milliseconds(), 10)
	var (
		wg           sync.WaitGroup
		pairs, fails atomic.Int64
		errMu        sync.Mutex
		firstErr     error
	)
	ready := make(chan struct{})
	var deadline time.Time // set before ready is closed
	for i, c := range cs {
		var req []byte
		for j := range batch {
			key := fmt.Sprintf("physical/%d/%d", i, j)
			req = appendCommand(req, "SET", key, "token", "NX", "PX", ttlMs)
			req = appendCommand(req, "EVALSHA", sha, "1", key, "token")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			for ctx.Err() == nil && time.Now().Before(deadline) {
				c.setDeadline(time.Now().Add(5 * time.Second))
				ok, failed, err := c.roundTrip(req, batch)
				pairs.Add(int64(ok))
				fails.Add(int64(failed))
				if err != nil {
					errMu.Lock()
					firstErr = errors.Join(firstErr, err)
					errMu.Unlock()
					return
				}
			}
		}()
	}
	start := time.Now()
	deadline = start.Add(d)
	close(ready)
	wg.Wait()
	r.Elapsed = time.Since(start)
	r.Pairs, r.Failed = pairs.Load(), fails.Load()
	if firstErr != nil {
		return r, firstErr
	}
	return r, ctx.Err()
}

// Replies of a pair on a free key: SET NX stored it, the script deleted it.
var (
	replyOK  = []byte("+OK")
	replyOne = []byte(":1")
)

// roundTrip sends a pipelined request of batch SET/EVALSHA pairs and reads
// the replies, each a single line, counting the pairs that did their work.
func (c *respConn) roundTrip(req []byte, batch int) (ok, failed int, err error) {
	if _, err := c.w.Write(req); err != nil {
		return 0, 0, err
	}
	if err := c.w.Flush(); err != nil {
		return 0, 0, err
	}
	for range batch {
		set, err := c.line()
		if err != nil {
			return ok, failed, err
		}
		setOK := bytes.Equal(set, replyOK)
		del, err := c.line()
		if err != nil {
			return ok, failed, err
		}
		if setOK && bytes.Equal(del, replyOne) {
			ok++
		} else {
			failed++
		}
	}
	return ok, failed, nil
}
