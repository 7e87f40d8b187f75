package dlm_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// This file emulates a process of the previous release of the library
// (main at 9a61ca7, v0.1.0's layout) for the tests of a fleet in the middle
// of an upgrade (upgrade_redis_test.go): its scripts, kept as test data
// (testdata/previous), as the nodes ran them, and its way of waiting, as its
// package dlm and its package wake did it:
//
//   - A Lock call's attempt runs the acquire script on every node at once,
//     with announce's flag loud on nodes 0 and 1, which announce its grant
//     ("t") on the key's broadcast channel. It wins with a majority within
//     the validity (the TTL less 1% and 2 ms); with fencing (an election)
//     a majority must hold the greatest counter, which the attempt raises
//     where it is lower (the previous RaiseFence). A failed attempt is
//     released on the nodes that may hold it, announced by two of those
//     that granted it — not at all when a node refused it, but in the fair
//     mode.
//   - The lock's release runs on every node, announced by two of the nodes
//     that granted it: "r" and the number of listeners on the broadcast
//     channel, or, in the fair mode, the id of the head of the previous
//     layout's line (:line, :places, :tickets), "" when it is empty.
//   - Without fairness a process's calls for one key queue in the process
//     (its localQueues): only the first competes on the nodes, and Unlock
//     hands the lock to the next queued call without a round trip for 20 ms
//     after it was obtained from the nodes (never a fenced lock: an
//     election's), after which it is released on the nodes.
//   - With fairness each call takes a place in the previous layout's line
//     under a random id, kept until its lock is released, or given up (the
//     previous LeaveLine) a node timeout after a call that gave up.
//   - Waiting: the first refusal makes the call watch the key's broadcast
//     channel (the process's one subscription per node) and try again at
//     once; then it waits for its retry timer (the default backoff, 10 ms
//     doubling to 200 ms, jittered; with fairness at most a third of the
//     place's life), or a release announced on the channel by any one node
//     (a fair waiter: its own id, or a release for all), spread when more
//     than two listened, and looks again twice after a release it was
//     woken by (twice its attempt's time later, and a node timeout after
//     the announcement) unless it heard another client's grant meanwhile.
//
// The emulation leaves out what a fleet on one contended key never meets:
// the SET NX path of an uncontended key, auto-extension, the restart guard,
// readers, and the early end of a round once its outcome is known (it waits
// for every node's reply, which on local servers comes within the same
// millisecond).

// upgradeMode is what a fleet in the middle of an upgrade does on its key.
type upgradeMode int

const (
	upgradePlain    upgradeMode = iota // Lock, the default mode
	upgradeFair                        // Lock with fairness
	upgradeElection                    // an election's Campaign
)

func (m upgradeMode) String() string {
	return [...]string{"plain", "fair", "election"}[m]
}

// The previous release's settings that the emulation uses: its default
// backoff, a fair place's life and the bound of a line (Fairness' defaults),
// the drift factor, and how long a lock may go from call to call within a
// process.
const (
	previousBackoffBase = 10 * time.Millisecond
	previousBackoffMax  = 200 * time.Millisecond
	previousPlaceLife   = 2 * time.Second
	previousLineBound   = 1024
	previousHandOver    = 20 * time.Millisecond
	previousMinRecheck  = time.Millisecond
	previousMaxSpread   = 25 * time.Millisecond
)

// previousScript reads one of the previous release's scripts, kept as test
// data (testdata/previous).
func previousScript(t *testing.T, name string) *driver.Script {
	t.Helper()
	src, err := os.ReadFile("testdata/previous/" + name + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	return driver.NewScript(string(src))
}

// previousProcess is one process of the previous release locking one key,
// as described at the top of this file; its calls may run at once.
type previousProcess struct {
	t     *testing.T
	mode  upgradeMode
	nodes []driver.Node
	rk    string // the lock key: "redlock:{key}", or "redlock:election:{key}"
	value string // an election's candidate's value, which ends its secrets
	ttl   time.Duration
	nt    time.Duration // the node timeout

	acquire, release, raise, leave *driver.Script

	mu       sync.Mutex
	watchers map[*previousWatcher]struct{}
	queue    previousQueue // the calls queued in the process (not fair)
	work     sync.WaitGroup
}

// newPreviousProcess returns a process of the previous release that locks
// key on srvs in mode, with locks of ttl and requests bounded by nt. It is
// subscribed to the key's broadcast channel on every node once it returns,
// as the previous release was after its first wait, for ten seconds after
// the last.
func newPreviousProcess(t *testing.T, srvs []*redistest.Server, mode upgradeMode, key string, ttl, nt time.Duration) *previousProcess {
	p := &previousProcess{t: t, mode: mode, ttl: ttl, nt: nt, rk: "redlock:{" + key + "}", watchers: map[*previousWatcher]struct{}{}}
	switch mode {
	case upgradePlain:
		p.acquire, p.release = previousScript(t, "acquire"), previousScript(t, "release")
	case upgradeFair:
		p.acquire, p.release, p.leave = previousScript(t, "fair_acquire"), previousScript(t, "fair_release"), previousScript(t, "leave_line")
	case upgradeElection:
		p.rk = "redlock:election:{" + key + "}"
		p.value = "previous"
		p.acquire, p.release, p.raise = previousScript(t, "fenced_acquire"), previousScript(t, "release"), previousScript(t, "raise_fence")
	}
	for _, s := range srvs {
		n := respNode(t, s.Addr(), "")
		p.nodes = append(p.nodes, n)
		sub, err := n.(driver.Subscriber).Subscribe(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Close() })
		if err := sub.Subscribe(context.Background(), p.rk+":wake"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(p.work.Wait)
	return p
}

// previousGrant is a lock of the previous release: its secret, the end of
// its validity, the nodes that granted it, and the fair waiter's id.
type previousGrant struct {
	secret  string
	until   time.Time
	granted uint64
	id      string
}

// Lock waits for the lock until ctx ends, as the previous release's
// Manager.Lock (or Campaign) did, and reports it; nil when ctx ended first.
func (p *previousProcess) Lock(ctx context.Context) *previousGrant {
	if p.mode == upgradeFair {
		id := randomID(p.t)
		g := p.attempts(ctx, &previousFairWaiter{id: id})
		if g == nil {
			p.leaveLine(id)
		}
		return g
	}
	g, compete := p.queue.enter(ctx)
	if g != nil || !compete {
		return g
	}
	if g = p.attempts(ctx, nil); g == nil {
		p.queue.leave()
		return nil
	}
	p.queue.hold()
	return g
}

// Unlock releases g: handed to the next call queued in the process when
// it may be, otherwise released on every node, announced by two of those
// that granted it.
func (p *previousProcess) Unlock(g *previousGrant) {
	if p.mode == upgradePlain && p.queue.handOver(g, p.validity(0)/2) {
		return
	}
	args := []string{g.secret}
	if p.mode == upgradeFair {
		args = append(args, g.id)
	}
	p.run(context.Background(), p.release, p.keys(false), args, ^uint64(0), announcers(g.granted), "")
	if p.mode != upgradeFair {
		p.queue.leave()
	}
}

// previousFairWaiter is a fair call's place in the previous layout's line.
type previousFairWaiter struct {
	id     string
	ticket int64 // the largest a node gave it
}

// attempts makes attempts until one wins or ctx ends, waiting between them
// as the previous release's attempt loop did.
func (p *previousProcess) attempts(ctx context.Context, fw *previousFairWaiter) *previousGrant {
	var w *previousWatcher
	defer func() { p.stopWatch(w) }()
	var timer *time.Timer
	for attempt := 1; ; attempt++ {
		w.drain()
		began := time.Now()
		g, own, unavailable := p.attempt(ctx, fw)
		took := time.Since(began)
		if g != nil || ctx.Err() != nil {
			return g
		}
		if w == nil && !unavailable {
			// The first refusal: watch, and try again at once.
			id := ""
			if fw != nil {
				id = fw.id
			}
			w = p.watch(id)
			continue
		}
		wait := previousJitter(previousBackoff(attempt))
		if fw != nil {
			wait = min(wait, previousPlaceLife/3) // renew the place in time
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		if !w.wait(ctx, timer, previousAttempt{took: took, own: own, settle: p.nt}) {
			return nil
		}
	}
}

// attempt makes one attempt, and returns the lock, or how many grants of
// its own its nodes may have announced and whether too many nodes failed
// for a refusal (the previous ErrUnavailable).
func (p *previousProcess) attempt(ctx context.Context, fw *previousFairWaiter) (g *previousGrant, own int, unavailable bool) {
	secret := randomID(p.t)
	if p.value != "" {
		secret += ":" + p.value
	}
	args := []string{secret, strconv.FormatInt(p.ttl.Milliseconds(), 10)}
	switch {
	case p.mode == upgradeElection:
		args = append(args, "0") // fencing counters never expire
	case fw != nil:
		args = append(args, fw.id, strconv.FormatInt(previousPlaceLife.Milliseconds(), 10), strconv.FormatInt(fw.ticket, 10), strconv.Itoa(previousLineBound))
	}
	start := time.Now()
	replies := p.run(ctx, p.acquire, p.keys(true), args, ^uint64(0), 0b11, "w")
	var granted, mayHold uint64
	var failed int
	fences := make([]int64, len(p.nodes))
	for i, r := range replies {
		if r.err != nil {
			failed++
			mayHold |= 1 << i
			continue
		}
		v := r.v
		if pair, ok := v.([]any); ok && len(pair) == 2 {
			if tk, _ := pair[1].(int64); fw != nil && tk > fw.ticket {
				fw.ticket = tk
			}
			v = pair[0]
		}
		if n, _ := v.(int64); n > 0 {
			granted |= 1 << i
			mayHold |= 1 << i
			fences[i] = n
		}
	}
	q := len(p.nodes)/2 + 1
	yes := popcount(granted)
	if p.mode == upgradeElection && yes >= q {
		yes = p.settleFence(ctx, secret, fences)
	}
	validity := p.validity(time.Since(start))
	if yes >= q && validity > 0 {
		id := ""
		if fw != nil {
			id = fw.id
		}
		return &previousGrant{secret: secret, until: start.Add(validity), granted: granted, id: id}, 0, false
	}
	// Released where it may hold, announced by two of the nodes that
	// granted it: not at all, without fairness, when a node refused it.
	loud := announcers(granted)
	if fw == nil && len(p.nodes)-popcount(mayHold) > 0 {
		loud = 0
	}
	rargs := []string{secret}
	if fw != nil {
		rargs = append(rargs, "") // the waiter keeps its place
	}
	p.run(context.WithoutCancel(ctx), p.release, p.keys(false), rargs, mayHold, loud, "w")
	return nil, popcount(mayHold & 0b11), failed > len(p.nodes)-q
}

// settleFence counts the nodes that hold the greatest of the fencing
// counters an election's attempt left, after raising those below it, as
// the previous release's settleFence did.
func (p *previousProcess) settleFence(ctx context.Context, secret string, fences []int64) int {
	var fence int64
	for _, f := range fences {
		fence = max(fence, f)
	}
	holding := 0
	var below uint64
	for i, f := range fences {
		switch {
		case f == fence:
			holding++
		case f > 0:
			below |= 1 << i
		}
	}
	if holding >= len(p.nodes)/2+1 || below == 0 {
		return holding
	}
	for _, r := range p.runPlain(ctx, p.raise, []string{p.rk, p.rk + ":fence"}, []string{secret, strconv.FormatInt(fence, 10)}, below) {
		if n, _ := r.v.(int64); r.err == nil && n == 1 {
			holding++
		}
	}
	return holding
}

// validity is what is left of a lock's validity elapsed after its attempt
// began.
func (p *previousProcess) validity(elapsed time.Duration) time.Duration {
	return p.ttl - elapsed - p.ttl/100 - 2*time.Millisecond
}

// keys are the KEYS of an acquire (acquire) or a release.
func (p *previousProcess) keys(acquire bool) []string {
	switch {
	case p.mode == upgradeElection && acquire:
		return []string{p.rk, p.rk + ":fence"}
	case p.mode == upgradeFair && acquire:
		return []string{p.rk, p.rk + ":line", p.rk + ":places", p.rk + ":tickets"}
	case p.mode == upgradeFair:
		return []string{p.rk, p.rk + ":line", p.rk + ":places"}
	}
	return []string{p.rk}
}

// previousReply is one node's answer.
type previousReply struct {
	v   any
	err error
}

// run runs s on the nodes marked in on, at once, each within the node
// timeout, with announce's flag last: loud ("1") on the nodes marked in
// loud, quiet ("0") on the others, followed by suffix.
func (p *previousProcess) run(ctx context.Context, s *driver.Script, keys, args []string, on, loud uint64, suffix string) []previousReply {
	replies := make([]previousReply, len(p.nodes))
	var wg sync.WaitGroup
	for i, n := range p.nodes {
		if on&(1<<i) == 0 {
			replies[i].err = errNotAsked
			continue
		}
		flag := "0" + suffix
		if loud&(1<<i) != 0 {
			flag = "1" + suffix
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, p.nt)
			defer cancel()
			replies[i].v, replies[i].err = n.Eval(rctx, s, keys, append(args[:len(args):len(args)], flag))
		}()
	}
	wg.Wait()
	return replies
}

// runPlain runs s, which takes no flag, on the nodes marked in on.
func (p *previousProcess) runPlain(ctx context.Context, s *driver.Script, keys, args []string, on uint64) []previousReply {
	replies := make([]previousReply, len(p.nodes))
	var wg sync.WaitGroup
	for i, n := range p.nodes {
		if on&(1<<i) == 0 {
			replies[i].err = errNotAsked
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, p.nt)
			defer cancel()
			replies[i].v, replies[i].err = n.Eval(rctx, s, keys, args)
		}()
	}
	wg.Wait()
	return replies
}

// errNotAsked marks the reply of a node a request was not sent to.
var errNotAsked = errors.New("not asked")

// leaveLine gives up the fair place of the waiter id on every node a node
// timeout later, in the background, as the previous release did.
func (p *previousProcess) leaveLine(id string) {
	p.work.Add(1)
	go func() {
		defer p.work.Done()
		time.Sleep(p.nt)
		p.runPlain(context.Background(), p.leave, []string{p.rk + ":line", p.rk + ":places"}, []string{id}, ^uint64(0))
	}()
}

// announcers is the mask of the two nodes of lowest index among those
// marked in among (all of them when none is), which announce.
func announcers(among uint64) uint64 {
	if among == 0 {
		among = ^uint64(0)
	}
	first := among & -among
	rest := among &^ first
	return first | rest&-rest
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// previousBackoff is the previous release's default backoff before retry
// n: 10 ms doubling up to 200 ms.
func previousBackoff(n int) time.Duration {
	d := previousBackoffBase
	for i := 1; i < n && d < previousBackoffMax; i++ {
		d *= 2
	}
	return min(d, previousBackoffMax)
}

// previousJitter draws a wait uniformly from [d/2, d].
func previousJitter(d time.Duration) time.Duration {
	half := d / 2
	return half + mrand.N(d-half+1)
}

func randomID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// previousQueue is the previous release's queue of a process's calls for
// one key (localQueues): only its head competes on the nodes.
type previousQueue struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan *previousGrant
	since   time.Time // when the lock was last obtained from the nodes
}

// enter returns when the caller may compete on the nodes (true), with the
// lock when the call before handed it over; false when ctx ended first.
func (q *previousQueue) enter(ctx context.Context) (*previousGrant, bool) {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return nil, true
	}
	c := make(chan *previousGrant, 1)
	q.waiters = append(q.waiters, c)
	q.mu.Unlock()
	select {
	case g := <-c:
		return g, true
	case <-ctx.Done():
	}
	q.mu.Lock()
	select {
	case g := <-c: // the turn came meanwhile: give it up
		q.mu.Unlock()
		if g != nil {
			return g, true // the caller holds it, and unlocks it
		}
		q.leave()
		return nil, false
	default:
	}
	for i, x := range q.waiters {
		if x == c {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	q.mu.Unlock()
	return nil, false
}

// hold records that the head obtained the lock from the nodes.
func (q *previousQueue) hold() {
	q.mu.Lock()
	q.since = time.Now()
	q.mu.Unlock()
}

// handOver gives g to the next queued call, when one waits, the lock was
// obtained from the nodes no more than previousHandOver ago and at least
// minValidity of it is left.
func (q *previousQueue) handOver(g *previousGrant, minValidity time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 || time.Since(q.since) > previousHandOver || time.Until(g.until) < minValidity {
		return false
	}
	next := q.waiters[0]
	q.waiters = q.waiters[1:]
	next <- g
	return true
}

// leave gives the turn to the next queued call, which competes on the
// nodes.
func (q *previousQueue) leave() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		next := q.waiters[0]
		q.waiters = q.waiters[1:]
		next <- nil
		return
	}
	q.busy = false
}

// previousWatcher is a waiting call's watch of the key's broadcast channel,
// as the previous release's wake.Watcher.
type previousWatcher struct {
	id        string        // a fair waiter's id; "" otherwise
	c         chan struct{} // a release for the watcher was announced
	taken     chan struct{} // a grant was announced
	listening atomic.Int64  // the last release's count of listeners
	announced atomic.Bool   // a node announced the release (not the waker)
	grants    atomic.Int64

	// The rechecks of the last release heard (only the waiting call).
	settling     time.Time
	rechecks     int
	grantsBefore int64
	ownGrants    int64
}

// watch registers a waiting call; id is a fair waiter's, "" for none.
func (p *previousProcess) watch(id string) *previousWatcher {
	w := &previousWatcher{id: id, c: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
	p.mu.Lock()
	p.watchers[w] = struct{}{}
	p.mu.Unlock()
	return w
}

func (p *previousProcess) stopWatch(w *previousWatcher) {
	if w == nil {
		return
	}
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// Message passes what a node announced on the broadcast channel to the
// watchers, as the previous release's Waker.dispatch: a grant to all, a
// release ("", or "r" and a count) to all, a fair waiter's id to it and to
// the watchers without an id.
func (p *previousProcess) Message(_, payload string) {
	grant, count, id, ok := parsePrevious(payload)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.watchers {
		switch {
		case grant:
			w.grants.Add(1)
			signalPrevious(w.taken)
			continue
		case id == "":
			w.listening.Store(count)
		case w.id != "" && w.id != id:
			continue
		default:
			w.listening.Store(0)
		}
		w.announced.Store(true)
		signalPrevious(w.c)
	}
}

// Subscribed does nothing: the process subscribed before any call waited.
func (p *previousProcess) Subscribed(string) {}

// parsePrevious reads a broadcast message as the previous release did:
// "t" a grant; "" or "r" and digits a release for all, with the count of
// listeners; 22 characters of URL-safe base64 a fair waiter's id.
func parsePrevious(payload string) (grant bool, count int64, id string, ok bool) {
	switch {
	case payload == "t":
		return true, 0, "", true
	case payload == "":
		return false, 0, "", true
	case len(payload) == 22:
		for _, c := range []byte(payload) {
			if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false, 0, "", false
			}
		}
		return false, 0, payload, true
	case len(payload) > 1 && len(payload) <= 19 && payload[0] == 'r':
		n, err := strconv.ParseInt(payload[1:], 10, 64)
		if err != nil || n < 0 {
			return false, 0, "", false
		}
		return false, min(n, 1<<20), "", true
	}
	return false, 0, "", false
}

func signalPrevious(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// drain forgets a wake-up received before a new attempt.
func (w *previousWatcher) drain() {
	if w == nil {
		return
	}
	w.announced.Store(false)
	select {
	case <-w.c:
	default:
	}
}

// previousAttempt describes the refused attempt before a wait.
type previousAttempt struct {
	took   time.Duration
	own    int           // grants of its own its nodes may have announced
	settle time.Duration // the node timeout
}

// wait waits for the next attempt as the previous release's Watcher.Wait:
// the timer, or a release announced (spread when others heard it too), or
// one of the two rechecks after a release that woke the last attempt,
// unless another client's grant was heard. A nil w waits for the timer. It
// reports false when ctx ended.
func (w *previousWatcher) wait(ctx context.Context, timer *time.Timer, last previousAttempt) bool {
	if w == nil {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		}
	}
	var spread *time.Timer
	defer func() {
		if spread != nil {
			spread.Stop()
		}
	}()
	var rechecked <-chan time.Time
	recheck, granted := w.recheck(last)
	if recheck != nil {
		defer recheck.Stop()
		rechecked = recheck.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			w.settling = time.Time{}
			return true
		case <-rechecked:
			stopPreviousTimer(timer)
			return true
		case <-granted:
			if w.othersGranted() {
				rechecked, granted = nil, nil
				w.settling = time.Time{}
			}
			continue
		case <-w.c:
		}
		w.heard()
		d := w.spread(last.took)
		if d == 0 {
			stopPreviousTimer(timer)
			return true
		}
		if spread == nil {
			spread = time.NewTimer(d)
		} else {
			spread.Reset(d)
		}
		select {
		case <-ctx.Done():
			return false
		case <-spread.C:
			stopPreviousTimer(timer)
			return true
		case <-timer.C:
			return true
		case <-w.taken:
			w.settling = time.Time{}
			stopPreviousTimer(spread)
		}
	}
}

// heard starts the rechecks of a release a node announced.
func (w *previousWatcher) heard() {
	select {
	case <-w.taken:
	default:
	}
	if !w.announced.Swap(false) {
		w.settling = time.Time{}
		return
	}
	if w.settling.IsZero() {
		w.grantsBefore, w.ownGrants = w.grants.Load(), 0
	}
	w.settling, w.rechecks = time.Now(), 0
}

// recheck returns the timer of the next recheck after last, and the
// channel of the grants that cancel it; nil, nil for none.
func (w *previousWatcher) recheck(last previousAttempt) (*time.Timer, <-chan struct{}) {
	if w.settling.IsZero() {
		return nil, nil
	}
	left := last.settle - time.Since(w.settling)
	w.rechecks++
	w.ownGrants += int64(last.own)
	switch {
	case left <= 0 || w.rechecks > 2 || w.othersGranted():
		w.settling = time.Time{}
		return nil, nil
	case w.rechecks == 1:
		return time.NewTimer(min(max(2*last.took, previousMinRecheck), left)), w.taken
	default:
		return time.NewTimer(left), w.taken
	}
}

func (w *previousWatcher) othersGranted() bool {
	return w.grants.Load()-w.grantsBefore > w.ownGrants
}

// spread is the previous release's wait after a release that more than
// two clients heard: a random share of half an attempt per other listener,
// at most 25 ms.
func (w *previousWatcher) spread(attempt time.Duration) time.Duration {
	listening := w.listening.Load()
	if listening <= 2 || attempt <= 0 {
		return 0
	}
	others := listening - 2
	share := previousMaxSpread
	if others <= int64(2*previousMaxSpread/attempt) {
		share = time.Duration(others) * attempt / 2
	}
	if share <= 0 {
		return 0
	}
	return mrand.N(share)
}

func stopPreviousTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
}
