package dlm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Fairness configures the first-come, first-served mode of [WithFairness].
// The zero value uses the defaults.
type Fairness struct {
	// MaxWaiters bounds each lock's line on each node (default
	// [DefaultMaxWaiters]): it has room for that many waiters besides the
	// place of the holder, which keeps its place until it releases the
	// lock. A waiter that finds the line full keeps retrying at its backoff
	// without a place until there is room; it cannot jump the line
	// meanwhile.
	MaxWaiters int
	// Expiry is how long a waiter keeps its place without renewing it
	// (default [DefaultPlaceExpiry]). Waiters renew their places at each
	// attempt, and attempt at least every third of Expiry; a waiter that
	// dies loses its place after Expiry, and until then the lock waits for
	// it. A holder keeps its place, renewed by the grant, until it releases
	// the lock: one that dies without releasing holds the line up until its
	// lock expires or for Expiry after the grant, whichever ends later. It
	// must be at least twice the node timeout.
	Expiry time.Duration
}

// Defaults of [Fairness].
const (
	DefaultMaxWaiters  = 1024
	DefaultPlaceExpiry = 2 * time.Second
)

// WithFairness makes waiting clients take a lock in the order they first
// asked for it, across processes: each node keeps a line of waiters per
// lock, a node grants the lock only to the waiter at the head of its line
// (or to anyone when the line is empty), and the release wakes only that
// waiter. A waiter keeps its place through an attempt that nodes granted but
// that failed all the same (too few grants, or too late), and until it
// releases the lock it obtained. Places in line carry tickets that the waiters carry from node to
// node, so that every node orders the waiters alike.
//
// Fairness costs throughput: a lock goes to the longest waiter, never to
// the client that released it and asks again at once, and a waiter that
// dies holds the line up for up to [Fairness.Expiry]. Every client of a lock
// must use the same mode: a client without fairness ignores the line. In
// this mode a Manager's callers each take their own place on the nodes,
// rather than waiting in line in the Manager, and a lock is never handed
// over within the Manager. [Manager.TryLock] takes no place: it obtains the
// lock only when nobody waits for it.
func WithFairness(f Fairness) Option {
	return optionFunc(func(c *config) { c.fair = &f })
}

func (f *Fairness) validate(nodeTimeout time.Duration) error {
	switch {
	case f.MaxWaiters < 0:
		return fmt.Errorf("%w: Fairness.MaxWaiters %d: want a positive number, or 0 for the default", ErrInvalid, f.MaxWaiters)
	case f.Expiry < 0:
		return fmt.Errorf("%w: Fairness.Expiry %v: want a positive duration, or 0 for the default", ErrInvalid, f.Expiry)
	case f.Expiry > 0 && f.Expiry < 2*nodeTimeout:
		return fmt.Errorf("%w: Fairness.Expiry %v is shorter than two node timeouts (%v)", ErrInvalid, f.Expiry, 2*nodeTimeout)
	}
	return nil
}

func (f *Fairness) maxWaiters() int {
	if f.MaxWaiters == 0 {
		return DefaultMaxWaiters
	}
	return f.MaxWaiters
}

func (f *Fairness) expiry() time.Duration {
	if f.Expiry == 0 {
		return DefaultPlaceExpiry
	}
	return f.Expiry
}

// The suffixes of a lock's line on a node, after the lock's first key: the
// waiters by ticket, the waiters by the end of their place (node time, ms),
// and the last ticket given.
const (
	lineSuffix    = ":line"
	placesSuffix  = ":places"
	ticketsSuffix = ":tickets"
)

// lineKeys returns the keys of the line of the lock whose first Redis key is
// rkey.
func lineKeys(rkey string) []string {
	return []string{rkey + lineSuffix, rkey + placesSuffix, rkey + ticketsSuffix}
}

// fairWaiter is one Lock call's place in the lines of the nodes.
type fairWaiter struct {
	f  *Fairness
	id string // "" for TryLock, which takes no place
	// ticket is the largest ticket a node gave the waiter: passed to every
	// node on the next attempt, it puts the waiter at the same place in
	// every line.
	ticket int64
}

// newFairWaiter returns a waiter with a random id of its own, drawn as a
// lock's secret is. The id is not a secret, though: the release announces
// it.
func newFairWaiter(f *Fairness) (*fairWaiter, error) {
	id, err := newSecret()
	if err != nil {
		return nil, err
	}
	return &fairWaiter{f: f, id: id}, nil
}

// args are the fair acquire scripts' last four arguments.
func (fw *fairWaiter) args() []string {
	return []string{fw.id, ttlMillis(fw.f.expiry()), strconv.FormatInt(fw.ticket, 10), strconv.Itoa(fw.f.maxWaiters())}
}

// maxWait caps the pause between a waiter's attempts, which renew its place.
func (fw *fairWaiter) maxWait() time.Duration { return fw.f.expiry() / 3 }

// fairPart ends a fair acquire script. The script starts with a header that
// sets nk to the number of KEYS before the line's three keys, and defines
// take(), which tries to take the lock and returns 0 or a positive value.
// ARGV ends with the waiter's id, the life of its place (ms), the ticket it
// holds from other nodes, the bound of the line, and announce's flag.
//
// It drops the places that expired; lets the waiter take the lock if the
// line is empty or it is at the head; otherwise it gives the waiter a place,
// or renews it, under the larger of a new ticket and the one the waiter
// holds, and returns {0, ticket}: {0, -1} when the line is full, {0, 0} for a
// waiter without an id.
//
// A waiter that takes the lock keeps its place, renewed, and one that takes
// it from an empty line is given one; the grant returns its ticket. This
// node's grant is only a vote, and the attempt may still fail (too few
// grants, or too late): the release of a failed attempt keeps the place, so
// the waiter is still at the head for its next attempt, ahead of everyone who
// asked after it. The release of the lock obtained gives the place up (see
// fairReleaseScript). The line has room for bound waiters besides the place
// of the holder.
//
// Each place given or renewed makes the line's three keys live at least the
// longer of the place's life and the lock's TTL (ARGV[2]) from now: the
// counter of tickets outlives every place in the line, so a new waiter's
// ticket is always above theirs, and once the line has been empty that long
// the keys are gone. A counter that expired starts again from 1 behind an
// empty line, which orders the waiters that come next as well.
const fairPart = `
nk = nk - 3
local line, places, tickets = KEYS[nk + 1], KEYS[nk + 2], KEYS[nk + 3]
local fa = #ARGV - 4
local me, life, held, bound = ARGV[fa], tonumber(ARGV[fa + 1]), tonumber(ARGV[fa + 2]), tonumber(ARGV[fa + 3])
local keep = math.max(life, tonumber(ARGV[2]))
` + dropExpired + `local function place()
  local mine = tonumber(redis.call('ZSCORE', line, me))
  if not mine then
    if redis.call('ZCARD', line) > bound then return -1 end
    mine = redis.call('INCR', tickets)
  end
  if held > mine then mine = held end
  if mine > tonumber(redis.call('GET', tickets) or '0') then
    redis.call('SET', tickets, mine)
  end
  redis.call('ZADD', line, mine, me)
  redis.call('ZADD', places, now + life, me)
  for _, k in ipairs({tickets, line, places}) do
    if redis.call('PTTL', k) < keep then redis.call('PEXPIRE', k, keep) end
  end
  return mine
end
local head = redis.call('ZRANGE', line, 0, 0)[1]
if head == nil or head == me then
  local r = take()
  if r > 0 then
    if me ~= '' then return {r, place()} end
    return {r, 0}
  end
end
if me == '' then return {0, 0} end
return {0, place()}
`

// dropExpired sets now to the node's time (ms) and drops from line and
// places the waiters whose places ended.
const dropExpired = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', places, '-inf', now)
if #gone > 0 then
  redis.call('ZREM', line, unpack(gone))
  redis.call('ZREM', places, unpack(gone))
end
`

// fairScript returns the fair form of an acquire script made of header and
// body.
func fairScript(header, body string) *driver.Script {
	return driver.NewScript(header + "local function take()" + body + "end\n" + fairPart)
}

// The fair acquire scripts, by fencing and restart guard.
var (
	fairAcquireScript              = fairScript(plainKeys, acquireBody)
	fairFencedAcquireScript        = fairScript(plainKeys, fencedAcquireBody)
	fairGuardedAcquireScript       = fairScript(guardPrelude, acquireBody)
	fairGuardedFencedAcquireScript = fairScript(fencedGuardPrelude, fencedAcquireBody)
)

// fairReleaseScript is releaseScript for a lock with a line: KEYS ends with
// the line and the places, and ARGV[2] names the waiter that obtained the
// lock, whose place it gives up ("" for none); ARGV[3] is announce's flag. It announces each release
// with the id of the waiter at the head of the line, after dropping expired
// places, so that only that waiter wakes, or with wakeAll when the line is
// empty.
var fairReleaseScript = driver.NewScript(announce + owns + `
local nk = #KEYS - 2
local line, places = KEYS[nk + 1], KEYS[nk + 2]
if ARGV[2] ~= '' then
  redis.call('ZREM', line, ARGV[2])
  redis.call('ZREM', places, ARGV[2])
end
` + dropExpired + `local head = redis.call('ZRANGE', line, 0, 0)[1] or '` + wakeAll + `'
local n = 0
for i = 1, nk do
  if owns(redis.call('GET', KEYS[i])) then
    n = n + redis.call('DEL', KEYS[i])
    announce(KEYS[i], head)
  end
end
return n
`)

// leaveLineScript gives up the place of waiter ARGV[1] in the line KEYS[1]
// (with its places KEYS[2]).
var leaveLineScript = driver.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
`)

// leaveLine gives up fw's place on every node, in the background, once the
// requests of its last attempt have ended (within the node timeout), so
// that none of them can give the place back afterwards. A place left
// behind would hold the line up until it expires.
func (m *Manager) leaveLine(cfg *config, rkeys []string, fw *fairWaiter) {
	req := &request{op: opLock, script: leaveLineScript, keys: lineKeys(rkeys[0])[:2], args: []string{fw.id}, want: 1, timeout: cfg.timeout()}
	m.spawn(func() {
		t := time.NewTimer(cfg.timeout())
		defer t.Stop()
		select {
		case <-t.C:
		case <-m.done:
		}
		m.poll(context.Background(), req)
	})
}
