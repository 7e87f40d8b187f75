package bench

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// The cold-burst cases ("burst/nN/LIB") start N contender processes of
// their own for each run of each library, and at one start instant every
// one of them opens the library, with no connection made before and no
// warm-up, and at once contends for one key until the run's window ends:
// the harness's account of many programs started at once on one lock. The
// processes wait for the instant on the shared clock (the start barrier);
// each then opens its client, takes the lock, holds it for the work time
// with its critical section marked on the holder marker, unlocks it and
// takes it again. Around each run the harness counts, on each node, the
// connections accepted (INFO stats), samples the clients connected while
// it runs (INFO clients), and once every process has ended counts the
// run's keys left on the nodes.

// BurstResult is a library's runs of one cold-burst case.
type BurstResult struct {
	Lib       string
	Processes int
	Runs      []BurstRun
}

// BurstRun is one run of a cold-burst case.
type BurstRun struct {
	Window    time.Duration
	Processes int
	Grants    int // Locks that returned the lock within the window
	// Stall is the longest stretch of the window without a grant: from
	// its start to the first grant, between two grants, or from the last
	// grant to its end; the whole window when nothing was granted.
	Stall time.Duration
	// Served counts the processes granted the lock at least once.
	Served int
	// Violations counts the grants that returned before an earlier holder
	// had called Unlock, in the merged records; MarkerOverlaps the grants
	// that found another holder on the marker, out of MarkerChecked. Both
	// must be 0.
	Violations     int
	MarkerChecked  int
	MarkerOverlaps int
	Errors         int    // failed opens, Locks and Unlocks, other than at the window's end
	FirstError     string // the first of them
	StartLag       time.Duration
	// Accepted are the connections each node accepted over the run, from
	// the processes' start to their end (INFO stats
	// total_connections_received, the harness's own left out); nil when a
	// node did not tell.
	Accepted []int64
	// MostClients is the most clients connected to one node at any
	// sampling during the run (INFO clients connected_clients, the
	// harness's own left out); -1 when not sampled.
	MostClients int64
	// KeysLeft counts the keys of the run left on the nodes once every
	// process has ended, and LeftTTL is the longest time to live among
	// them: a stale key blocks its lock that long. -1 when not counted.
	KeysLeft int
	LeftTTL  time.Duration
}

// GrantsPerSec is the rate of grants over the window.
func (r *BurstRun) GrantsPerSec() float64 { return perSec(r.Grants, r.Window) }

// ServedShare is the share of the processes granted the lock at least
// once.
func (r *BurstRun) ServedShare() float64 {
	if r.Processes == 0 {
		return math.NaN()
	}
	return float64(r.Served) / float64(r.Processes)
}

// Overlaps counts two holders at once, in the records and on the marker.
func (r *BurstRun) Overlaps() int { return r.Violations + r.MarkerOverlaps }

// ConnsPerProcess is the most connections one node accepted over the run
// per process; NaN when not counted.
func (r *BurstRun) ConnsPerProcess() float64 {
	if r.Accepted == nil || r.Processes == 0 {
		return math.NaN()
	}
	return float64(slices.Max(r.Accepted)) / float64(r.Processes)
}

// analyzeBurst turns the merged record of a run of processes contenders
// into the run's figures; grants at or after the window's end do not
// count.
func analyzeBurst(round hotRound, processes int) BurstRun {
	r := BurstRun{Window: round.window, Processes: processes, Errors: round.errors, FirstError: round.firstErr,
		MarkerChecked: round.markerChecked, MarkerOverlaps: round.markerOverlaps, StartLag: round.startLag,
		MostClients: -1, KeysLeft: -1}
	var in []call
	for _, k := range round.calls {
		if k.granted != never && k.granted < round.window {
			in = append(in, k)
		}
	}
	slices.SortFunc(in, func(a, b call) int { return cmp.Compare(a.granted, b.granted) })
	served := map[int]bool{}
	var last, lastUnlock time.Duration
	for i, g := range in {
		served[g.client] = true
		r.Stall = max(r.Stall, g.granted-last)
		last = g.granted
		if i > 0 && g.granted < lastUnlock {
			r.Violations++
		}
		lastUnlock = max(lastUnlock, g.unlock)
	}
	r.Stall = max(r.Stall, round.window-last)
	r.Grants, r.Served = len(in), len(served)
	return r
}

// burstCaseName is the name of a cold-burst case of one library.
func burstCaseName(processes int, lib string) string {
	return fmt.Sprintf("burst/n%d/%s", processes, lib)
}

// burstCases runs the selected cold-burst cases: for each of Bursts, every
// selected library of the default mode and redsync in turns, each run on
// processes started for it, the turns repeated as the case says.
func (s *suite) burstCases(ctx context.Context, res *Results) error {
	cfg := &s.cfg
	if len(cfg.Bursts) == 0 {
		return nil
	}
	if len(cfg.ContenderCmd) == 0 {
		s.logf("burst: skipped: no contender command")
		return nil
	}
	var libs []Library
	for _, lib := range res.Libraries {
		if !lib.Fair {
			libs = append(libs, lib)
		}
	}
	for _, bc := range cfg.Bursts {
		n := bc.Contenders
		var ran []Library
		for _, lib := range libs {
			if s.selected(burstCaseName(n, lib.ID)) {
				ran = append(ran, lib)
			}
		}
		acc := map[string]*BurstResult{}
		for _, lib := range ran {
			acc[lib.ID] = &BurstResult{Lib: lib.ID, Processes: n}
		}
		for round := range max(bc.Runs, 1) {
			for i := range ran {
				lib := ran[(round+i)%len(ran)]
				r, err := s.burstTurn(ctx, lib, n, round)
				if err != nil {
					return fmt.Errorf("%s, run %d: %w", burstCaseName(n, lib.ID), round+1, err)
				}
				acc[lib.ID].Runs = append(acc[lib.ID].Runs, r)
				s.logf("%s, run %d: %s", burstCaseName(n, lib.ID), round+1, r.summary())
			}
		}
		for _, lib := range ran {
			res.Burst = append(res.Burst, *acc[lib.ID])
		}
	}
	return nil
}

// burstPollEvery is how often the harness samples the clients connected to
// each node during a cold-burst run.
const burstPollEvery = 100 * time.Millisecond

// burstTurn is one run of lib's cold-burst case of n processes: it starts
// n processes, sends them the run, waits for their records, makes them
// close the library and exit, and counts on the nodes what the run left.
func (s *suite) burstTurn(ctx context.Context, lib Library, n, round int) (BurstRun, error) {
	cfg := &s.cfg
	runtime.GC() // not during the run: the harness shares the CPUs
	probe := openProbe(ctx, s.addrs)
	defer probe.close()
	before := probe.accepted()
	pool, err := newProcPool(cfg.ContenderCmd)
	if err != nil {
		return BurstRun{}, err
	}
	t0 := time.Now()
	job := openJob{Addrs: s.addrs, TTL: cfg.BurstTTL, NodeTimeout: cfg.NodeTimeout, Tries: cfg.Tries(), Cold: true}
	if err := pool.openLib(ctx, lib, n, job); err != nil {
		return BurstRun{}, err
	}
	t1 := time.Now()
	pollCtx, stopPoll := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	var most int64 = -1
	go func() {
		defer wg.Done()
		most = probe.mostClients(pollCtx, burstPollEvery)
	}()
	key := fmt.Sprintf("burst/n%d/r%d/%s", n, round, lib.ID)
	hr, err := pool.run(ctx, key, cfg.BurstWork, cfg.BurstRun)
	stopPoll()
	wg.Wait()
	if err != nil {
		pool.stop()
		return BurstRun{}, err
	}
	if err := pool.closeLib(ctx); err != nil {
		return BurstRun{}, err
	}
	if err := pool.stop(); err != nil {
		s.logf("%s: %v", burstCaseName(n, lib.ID), err)
	}
	r := analyzeBurst(hr, n)
	r.MostClients = most
	if after := probe.accepted(); before != nil && after != nil {
		r.Accepted = make([]int64, len(after))
		for i := range after {
			r.Accepted[i] = after[i] - before[i]
		}
	}
	r.KeysLeft, r.LeftTTL = probe.keysLeft(key)
	if probe.err != nil {
		s.logf("%s, run %d: the harness's connection to a node failed (%v); the counts it missed show as —", burstCaseName(n, lib.ID), round+1, probe.err)
	}
	s.logf("%s, run %d: %d processes started in %v, run and closed in %v",
		burstCaseName(n, lib.ID), round+1, n, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	return r, nil
}

// summary is the progress log's account of a run.
func (r *BurstRun) summary() string {
	return fmt.Sprintf("%s grants/s, longest without a grant %s, %d of %d processes served, %d overlaps (%d grants checked on the marker), %s connections per process on the busiest node, at most %d clients on a node, %d keys left (TTL up to %s), start lag %s, errors %d %s",
		fmtRate(r.GrantsPerSec()), fmtDur(r.Stall), r.Served, r.Processes, r.Overlaps(), r.MarkerChecked,
		fmtConns(r.ConnsPerProcess()), r.MostClients, r.KeysLeft, fmtDur(r.LeftTTL), fmtDur(r.StartLag), r.Errors, r.FirstError)
}

// fmtConns formats connections per process: "1.02", or missing.
func fmtConns(x float64) string {
	if math.IsNaN(x) {
		return missing
	}
	return fmt.Sprintf("%.2f", x)
}

// probeTimeoutEach bounds each of the probe's commands.
const probeTimeoutEach = 5 * time.Second

// nodeProbe holds one connection of the harness's own to each node, made
// before a cold-burst run and kept through it, so that the connections the
// nodes accept meanwhile are the processes'. A command that fails drops
// its connection, and the next one to that node dials again: the probe
// counts its own connections, which accepted leaves out.
type nodeProbe struct {
	ctx   context.Context
	addrs []string
	conns []*respConn
	dials []int64 // the probe's own connections to each node, made so far
	err   error   // the first failure, for the progress log
}

// openProbe connects to each node of addrs.
func openProbe(ctx context.Context, addrs []string) *nodeProbe {
	p := &nodeProbe{ctx: ctx, addrs: addrs, conns: make([]*respConn, len(addrs)), dials: make([]int64, len(addrs))}
	for i := range addrs {
		p.conn(i)
	}
	return p
}

// conn returns the connection to node i, dialling it if there is none.
func (p *nodeProbe) conn(i int) (*respConn, error) {
	if c := p.conns[i]; c != nil {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, probeTimeoutEach)
	defer cancel()
	p.dials[i]++ // counted whether or not the node accepted it: see accepted
	c, err := dialRESP(ctx, p.addrs[i])
	if err != nil {
		p.fail(err)
		return nil, err
	}
	p.conns[i] = c
	return c, nil
}

func (p *nodeProbe) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *nodeProbe) close() {
	for _, c := range p.conns {
		if c != nil {
			c.Close()
		}
	}
}

// do sends one command to node i, within probeTimeoutEach; a failure
// drops the node's connection.
func (p *nodeProbe) do(i int, args ...string) (any, error) {
	c, err := p.conn(i)
	if err != nil {
		return nil, err
	}
	c.setDeadline(time.Now().Add(probeTimeoutEach))
	v, err := c.do(args...)
	if err != nil {
		p.fail(fmt.Errorf("%s on %s: %w", args[0], p.addrs[i], err))
		c.Close()
		p.conns[i] = nil
	}
	return v, err
}

// infoInt reads an integer field of an INFO section from node i.
func (p *nodeProbe) infoInt(i int, section, field string) (int64, error) {
	v, err := p.do(i, "INFO", section)
	if err != nil {
		return 0, err
	}
	info, _ := v.(string)
	return parseInfoInt(info, field)
}

// parseInfoInt parses an integer field of an INFO reply.
func parseInfoInt(info, field string) (int64, error) {
	var n int64
	v := infoField(info, field)
	if _, err := fmt.Sscan(v, &n); err != nil || v == "" {
		return 0, fmt.Errorf("INFO %s: %q is not an integer", field, v)
	}
	return n, nil
}

// accepted returns the connections each node has accepted since it
// started, but for the probe's own, or nil when one does not tell. The
// connection a reply comes on was accepted before it; a dial that failed
// is counted as the probe's, in case the node accepted it after the dial
// gave up, and may then hide one connection of the processes.
func (p *nodeProbe) accepted() []int64 {
	out := make([]int64, len(p.conns))
	for i := range p.conns {
		n, err := p.infoInt(i, "stats", "total_connections_received")
		if err != nil {
			return nil
		}
		out[i] = n - p.dials[i]
	}
	return out
}

// mostClients samples the clients connected to each node every period
// until ctx ends and returns the most on one node, the probe's own
// connection left out; -1 when no node told.
func (p *nodeProbe) mostClients(ctx context.Context, period time.Duration) int64 {
	most := int64(-1)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		for i := range p.conns {
			if n, err := p.infoInt(i, "clients", "connected_clients"); err == nil {
				most = max(most, n-1)
			}
		}
		select {
		case <-ctx.Done():
			return most
		case <-t.C:
		}
	}
}

// maxKeysLeft bounds the keys a node's count of keys left looks at.
const maxKeysLeft = 10_000

// keysLeft counts the keys whose names contain key on every node, and
// returns the longest time to live among them; -1 when a node does not
// tell.
func (p *nodeProbe) keysLeft(key string) (int, time.Duration) {
	total := 0
	var ttl time.Duration
	for i := range p.conns {
		keys, err := p.scan(i, "*"+key+"*")
		if err != nil {
			return -1, 0
		}
		total += len(keys)
		for _, k := range keys {
			if v, err := p.do(i, "PTTL", k); err == nil {
				if ms, ok := v.(int64); ok && ms > 0 {
					ttl = max(ttl, time.Duration(ms)*time.Millisecond)
				}
			}
		}
	}
	return total, ttl
}

// scan returns the keys of node i that match pattern, at most maxKeysLeft.
func (p *nodeProbe) scan(i int, pattern string) ([]string, error) {
	var keys []string
	cursor := "0"
	for {
		v, err := p.do(i, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000")
		if err != nil {
			return nil, err
		}
		next, batch, err := parseScan(v)
		if err != nil {
			return nil, err
		}
		keys = append(keys, batch...)
		if next == "0" || len(keys) >= maxKeysLeft {
			return keys[:min(len(keys), maxKeysLeft)], nil
		}
		cursor = next
	}
}

// parseScan parses a SCAN reply: the next cursor and a batch of keys.
func parseScan(v any) (string, []string, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return "", nil, fmt.Errorf("%w: SCAN reply %T", errProtocol, v)
	}
	next, ok := a[0].(string)
	batch, ok2 := a[1].([]any)
	if !ok || !ok2 {
		return "", nil, fmt.Errorf("%w: SCAN reply of %T and %T", errProtocol, a[0], a[1])
	}
	keys := make([]string, 0, len(batch))
	for _, k := range batch {
		s, ok := k.(string)
		if !ok {
			return "", nil, fmt.Errorf("%w: SCAN key %T", errProtocol, k)
		}
		keys = append(keys, s)
	}
	return next, keys, nil
}
