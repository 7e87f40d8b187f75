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
	"time"
)

// FloorID is the ID of the bare floor among the uncontended results: the
// cost of a lock cycle on the nodes with no library in between.
const FloorID = "floor"

// floorName is the floor's name in the report.
const floorName = "bare floor (RESP by hand)"

// FloorLibrary is the bare floor, measured as a library in the uncontended
// cases only, taking turns with the libraries in the same rounds: each
// goroutine has a plain TCP connection to every node, writes SET key token
// NX PX ttl to every node, then reads the replies, and releases the same
// way with EVALSHA of a compare-and-delete. It neither retries nor checks
// a quorum: a cycle whose SET is refused anywhere counts as an error. It is
// what a lock cycle costs that carries nothing but the lock.
func FloorLibrary() Library {
	return Library{ID: FloorID, Name: floorName, Open: openFloor}
}

func openFloor(addrs []string, ttl, nodeTimeout time.Duration, _ int) (Locker, error) {
	sum := sha1.Sum([]byte(compareAndDelete))
	timeout := nodeTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &floorLocker{addrs: addrs, ttlMs: strconv.FormatInt(ttl.Milliseconds(), 10), sha: hex.EncodeToString(sum[:]), timeout: timeout}, nil
}

type floorLocker struct {
	addrs   []string
	ttlMs   string
	sha     string
	timeout time.Duration

	mu     sync.Mutex
	conns  []*respConn // every connection dialed, closed by Close
	loaded bool        // the script is loaded on every node
}

func (l *floorLocker) Mutex(key string) Mutex { return &floorMutex{l: l, key: key} }

func (l *floorLocker) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for _, c := range l.conns {
		errs = append(errs, c.Close())
	}
	l.conns = nil
	return errors.Join(errs...)
}

// dial opens a connection to every node for one goroutine, loading the
// compare-and-delete on the first.
func (l *floorLocker) dial(ctx context.Context) ([]*respConn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cs := make([]*respConn, 0, len(l.addrs))
	for _, a := range l.addrs {
		c, err := dialRESP(dctx, a)
		if err != nil {
			for _, c := range cs {
				c.Close()
			}
			return nil, err
		}
		cs = append(cs, c)
		if !l.loaded {
			if got, err := c.do("SCRIPT", "LOAD", compareAndDelete); err != nil || got != l.sha {
				for _, c := range cs {
					c.Close()
				}
				return nil, fmt.Errorf("SCRIPT LOAD on %s: %v %v", a, got, err)
			}
		}
		c.setDeadline(time.Time{})
	}
	l.loaded = true
	l.conns = append(l.conns, cs...)
	return cs, nil
}

// floorMutex is one goroutine's connections to the nodes, and the requests
// of its cycles, written anew for each token without allocating.
type floorMutex struct {
	l     *floorLocker
	key   string
	conns []*respConn
	n     uint64 // cycles so far: the token's counter
	token []byte
	req   []byte
}

// Lock writes SET NX PX to every node, then reads every reply.
func (m *floorMutex) Lock(ctx context.Context) error {
	if m.conns == nil {
		cs, err := m.l.dial(ctx)
		if err != nil {
			return err
		}
		m.conns = cs
	}
	m.n++
	m.token = strconv.AppendUint(append(m.token[:0], "floor-token-"...), m.n, 10)
	m.req = appendCommandBytes(m.req[:0], []byte("SET"), []byte(m.key), m.token, []byte("NX"), []byte("PX"), []byte(m.l.ttlMs))
	return m.exchange(replyOK)
}

// Unlock writes EVALSHA of the compare-and-delete to every node, then
// reads every reply.
func (m *floorMutex) Unlock(ctx context.Context) error {
	m.req = appendCommandBytes(m.req[:0], []byte("EVALSHA"), []byte(m.l.sha), []byte("1"), []byte(m.key), m.token)
	return m.exchange(replyOne)
}

// exchange sends m.req to every node, then reads one single-line reply
// from each, and fails unless every reply is want.
func (m *floorMutex) exchange(want []byte) error {
	deadline := time.Now().Add(m.l.timeout)
	for _, c := range m.conns {
		c.setDeadline(deadline)
		if _, err := c.c.Write(m.req); err != nil {
			return err
		}
	}
	var bad int
	for _, c := range m.conns {
		line, err := c.line()
		if err != nil {
			return err
		}
		if !bytes.Equal(line, want) {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("floor: %d of %d nodes did not reply %s", bad, len(m.conns), want)
	}
	return nil
}

// appendCommandBytes is appendCommand over byte slices.
func appendCommandBytes(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
