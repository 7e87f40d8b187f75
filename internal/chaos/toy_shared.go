package chaos

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// SharedFlaw selects how a [ToySharedLocker] is broken.
type SharedFlaw int

const (
	// SharedSound is a correct read-write lock and semaphore: readers and
	// writers exclude each other on a majority, a permit needs
	// [dlm.SemaphoreQuorum] nodes.
	SharedSound SharedFlaw = iota
	// ReadersIgnoreWriter lets a reader in on a node whatever writer holds
	// the key there.
	ReadersIgnoreWriter
	// PermitQuorumShort counts a permit held with one node fewer than
	// [dlm.SemaphoreQuorum]: with five nodes and a limit of 2, three, a
	// majority, which is not enough.
	PermitQuorumShort
)

func (f SharedFlaw) String() string {
	switch f {
	case SharedSound:
		return "sound"
	case ReadersIgnoreWriter:
		return "readers-ignore-writer"
	case PermitQuorumShort:
		return "permit-quorum-short"
	}
	return fmt.Sprintf("SharedFlaw(%d)", int(f))
}

// The toy read-write lock keeps, as the core's does, the writer's token or
// toyReaders in the key and the readers' leases in key:readers, scored by
// their end by the node's clock; the toy semaphore its permits in
// key:permits. Writers use the toy mutex's scripts, which the readers'
// mark refuses. No writer preference: the toys are about safety only.
const toyReaders = "toy-readers"

var (
	// toyReadAcquire lets reader ARGV[1] in for ARGV[2] ms, unless a
	// writer holds KEYS[1] and ARGV[3] is "check" (the sound reader).
	toyReadAcquire = driver.NewScript(toyNow + `
local v = redis.call('GET', KEYS[1])
local writer = v and v ~= '` + toyReaders + `'
if writer and ARGV[3] == 'check' then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1])
local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
local life = tonumber(top[2]) - now
redis.call('PEXPIRE', KEYS[2], life)
if not writer then redis.call('SET', KEYS[1], '` + toyReaders + `', 'PX', life) end
return 1
`)
	// toyReadRelease removes reader ARGV[1]; the last one out deletes the
	// mark.
	toyReadRelease = driver.NewScript(toyNow + `
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('GET', KEYS[1]) == '` + toyReaders + `' then
  redis.call('DEL', KEYS[1])
end
return 1
`)
	// toyPermitAcquire grants permit ARGV[1] for ARGV[2] ms while fewer
	// than ARGV[3] live permits are held on the node.
	toyPermitAcquire = driver.NewScript(toyNow + `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local top = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], tonumber(top[2]) - now)
return 1
`)
	toyPermitRelease = driver.NewScript(`
return redis.call('ZREM', KEYS[1], ARGV[1])
`)
)

// toyNow sets now to the node's clock in ms.
const toyNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// ToySharedLocker is a small read-write lock and semaphore of the suite's
// own, over the same nodes as the real manager, that can be broken on
// purpose (Flaw) to prove that [CheckShared] catches the flaw. Like
// [SharedLocker], it serves a key named RWPrefix+... as a read-write lock,
// read with probability ReadShare, a key named SemPrefix+... as a semaphore
// of Limit permits, and other keys as the mutex. The validity is that of
// the real manager: the TTL less the time the attempt took and the drift
// allowance.
type ToySharedLocker struct {
	Nodes       []driver.Node
	Flaw        SharedFlaw
	ReadShare   float64
	Limit       int
	DriftFactor float64
	NodeTimeout time.Duration
	Prefix      string
	// RetryDelay bounds the random wait between attempts of Lock.
	RetryDelay time.Duration
	// Owned nodes are closed by Close.
	Owned bool
}

// toyShare is how a toy lease takes and gives back its key.
type toyShare struct {
	mode             Mode
	keys             []string
	acquire, release *driver.Script
	args             []string // after the token and the TTL
	quorum           int
}

// share returns how a lease of key is taken: by mode, with its quorum.
func (l *ToySharedLocker) share(key string) toyShare {
	rkey := l.Prefix + key
	n := len(l.Nodes)
	switch {
	case strings.HasPrefix(key, SemPrefix):
		q := dlm.SemaphoreQuorum(n, l.Limit)
		if l.Flaw == PermitQuorumShort {
			q--
		}
		return toyShare{Permit, []string{rkey + ":permits"}, toyPermitAcquire, toyPermitRelease, []string{strconv.Itoa(l.Limit)}, q}
	case strings.HasPrefix(key, RWPrefix) && rand.Float64() < l.ReadShare:
		check := "check"
		if l.Flaw == ReadersIgnoreWriter {
			check = "ignore"
		}
		return toyShare{Shared, []string{rkey, rkey + ":readers"}, toyReadAcquire, toyReadRelease, []string{check}, n/2 + 1}
	}
	return toyShare{Exclusive, []string{rkey}, toyAcquireNX, toyRelease, nil, n/2 + 1}
}

// TryLock makes one attempt on all nodes at once.
func (l *ToySharedLocker) TryLock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	var b [16]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b[:])
	sh := l.share(key)
	start := time.Now()
	args := append([]string{token, strconv.FormatInt(ttl.Milliseconds(), 10)}, sh.args...)
	yes := evalAll(ctx, l.Nodes, l.NodeTimeout, sh.acquire, sh.keys, args...)
	drift := time.Duration(float64(ttl)*l.DriftFactor) + 2*time.Millisecond
	lease := &toySharedLease{l: l, share: sh, token: token, until: start.Add(ttl - drift)}
	if yes >= sh.quorum && time.Now().Before(lease.until) {
		return lease, nil
	}
	_ = lease.Unlock(ctx)
	return nil, fmt.Errorf("toy %v %v: %d of %d nodes granted (need %d): %w", l.Flaw, sh.mode, yes, len(l.Nodes), sh.quorum, dlm.ErrNotObtained)
}

// Lock retries TryLock after a random wait up to RetryDelay until ctx ends.
func (l *ToySharedLocker) Lock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return retryLock(ctx, l.RetryDelay, func() (Lease, error) { return l.TryLock(ctx, key, ttl) })
}

// Close closes the nodes if the locker owns them.
func (l *ToySharedLocker) Close() error {
	if !l.Owned {
		return nil
	}
	return closeNodes(l.Nodes)
}

type toySharedLease struct {
	l     *ToySharedLocker
	share toyShare
	token string
	until time.Time
}

func (t *toySharedLease) Until() time.Time { return t.until }
func (t *toySharedLease) Token() uint64    { return 0 }

// Mode is how the lease holds its key.
func (t *toySharedLease) Mode() Mode { return t.share.mode }

// Unlock releases on every node, whatever the acquire replies were.
func (t *toySharedLease) Unlock(ctx context.Context) error {
	evalAll(context.WithoutCancel(ctx), t.l.Nodes, t.l.NodeTimeout, t.share.release, t.share.keys, t.token)
	return nil
}

// ToySharedClients opens a toy shared locker for each client, rotating the
// backends; configure sets its flaw and parameters.
func (c *Cluster) ToySharedClients(configure func(*ToySharedLocker)) []*Client {
	c.t.Helper()
	clients := make([]*Client, len(c.Net.Proxies))
	for i := range clients {
		b := Backends[i%len(Backends)]
		nodes, err := c.OpenNodes(i, b)
		if err != nil {
			c.t.Fatalf("opening nodes through %s: %v", b, err)
		}
		l := &ToySharedLocker{Nodes: nodes, Owned: true, NodeTimeout: 100 * time.Millisecond, DriftFactor: dlm.DefaultDriftFactor,
			Prefix: "toy:", RetryDelay: 2 * time.Millisecond}
		configure(l)
		clients[i] = &Client{ID: i, Backend: b, Name: fmt.Sprintf("c%d/%s", i, b), Locker: l}
	}
	return clients
}
