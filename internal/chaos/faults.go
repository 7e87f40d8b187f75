package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Fault kinds, as they appear in the figures.
const (
	// FaultKill is kill -9 of a node, restarted empty only after the
	// largest TTL in use has passed (the delayed-restart rule).
	FaultKill = "kill9-delayed-restart"
	// FaultStop is SIGSTOP, then SIGCONT, of a node.
	FaultStop = "sigstop"
	// FaultClientPause is CLIENT PAUSE <ms> WRITE on a node.
	FaultClientPause = "client-pause-write"
	// FaultDebugSleep is DEBUG SLEEP on a node: it answers nothing while it
	// sleeps.
	FaultDebugSleep = "debug-sleep"
	// FaultPartitionMinority cuts one client from two of five nodes.
	FaultPartitionMinority = "partition-minority"
	// FaultPartitionMajority cuts one client from three of five nodes.
	FaultPartitionMajority = "partition-majority"
	// FaultLatency delays every byte to and from a node, at times past the
	// node timeout.
	FaultLatency = "latency"
	// FaultDrop resets every connection to a node and refuses new ones for
	// a while.
	FaultDrop = "drop"
	// FaultBlackHole black-holes every connection to a node for a while.
	FaultBlackHole = "blackhole"
	// The workload's own faults: a client paused past its validity, a
	// client that crashes holding a lock.
	FaultClientPausePastValidity = "client-paused-past-validity"
	FaultHolderCrash             = "holder-crash"
)

// AllFaults are the kinds an [Injector] applies by default.
var AllFaults = []string{
	FaultKill, FaultStop, FaultClientPause, FaultDebugSleep, FaultPartitionMinority,
	FaultPartitionMajority, FaultLatency, FaultDrop, FaultBlackHole,
}

// Injector applies faults to a cluster one after another, in a shuffled
// rotation of Kinds, each held for a random time and then healed, except
// kills: a killed node stays down for MaxTTL and a margin (the delayed
// restart rule) while other faults go on. At most MaxKilled nodes are down
// at once.
//
// Its methods call the servers' methods, which fail the test on error:
// call them from the test's goroutine; only [Injector.Missing] may be
// called from another while it runs.
type Injector struct {
	C         *Cluster
	MaxTTL    time.Duration
	Kinds     []string
	MaxKilled int
	Rand      *rand.Rand
	Logf      func(format string, args ...any)
	// Counts are the faults applied, by kind. Read them once Run has
	// returned, or through Missing while it runs.
	Counts map[string]int64

	mu     sync.Mutex // guards Counts while Run runs
	killed map[int]time.Time
	queue  []string
}

// restartMargin is added to MaxTTL before a killed node rejoins.
const restartMargin = 150 * time.Millisecond

// Run applies faults until ctx ends, then restarts the killed nodes once
// their time is up and heals everything.
func (in *Injector) Run(t testing.TB, ctx context.Context) {
	t.Helper()
	in.mu.Lock()
	if in.Counts == nil {
		in.Counts = make(map[string]int64)
	}
	in.mu.Unlock()
	if in.killed == nil {
		in.killed = make(map[int]time.Time)
	}
	for ctx.Err() == nil {
		if len(in.Kinds) == 0 {
			<-ctx.Done()
			break
		}
		in.restartDue(t, false)
		in.step(t, ctx)
		sleep(ctx, time.Duration(50+in.Rand.IntN(200))*time.Millisecond)
	}
	in.restartDue(t, true)
	for i, s := range in.C.Servers { // a CLIENT PAUSE cut short by ctx
		if _, err := s.Do("CLIENT", "UNPAUSE"); err != nil {
			t.Errorf("CLIENT UNPAUSE on node %d: %v", i, err)
		}
	}
}

// restartDue restarts the killed nodes whose time is up; with all, it waits
// for the others' time and restarts them too.
func (in *Injector) restartDue(t testing.TB, all bool) {
	t.Helper()
	for i, at := range in.killed {
		due := at.Add(in.MaxTTL + restartMargin)
		if all {
			time.Sleep(time.Until(due))
		}
		if time.Now().After(due) {
			in.C.Servers[i].Restart()
			delete(in.killed, i)
			in.logf("restarted node %d empty, %v after it was killed", i, time.Since(at).Round(time.Millisecond))
		}
	}
}

func (in *Injector) logf(format string, args ...any) {
	if in.Logf != nil {
		in.Logf(format, args...)
	}
}

// live returns a random node that is not killed.
func (in *Injector) live() int {
	for {
		i := in.Rand.IntN(len(in.C.Servers))
		if _, dead := in.killed[i]; !dead {
			return i
		}
	}
}

// hold is how long a fault lasts: up to 1.2 times the largest TTL, so that
// some faults outlast every lock.
func (in *Injector) hold() time.Duration {
	return 50*time.Millisecond + time.Duration(in.Rand.Float64()*1.2*float64(in.MaxTTL))
}

func (in *Injector) next() string {
	if len(in.queue) == 0 {
		in.queue = append([]string(nil), in.Kinds...)
		in.Rand.Shuffle(len(in.queue), func(i, j int) { in.queue[i], in.queue[j] = in.queue[j], in.queue[i] })
	}
	k := in.queue[0]
	in.queue = in.queue[1:]
	return k
}

// step applies one fault and, unless it is a kill, heals it.
func (in *Injector) step(t testing.TB, ctx context.Context) {
	t.Helper()
	kind := in.next()
	if kind == FaultKill && len(in.killed) >= in.MaxKilled {
		kind = in.next()
		if kind == FaultKill {
			return
		}
	}
	node, d := in.live(), in.hold()
	srv := in.C.Servers[node]
	switch kind {
	case FaultKill:
		srv.Kill()
		in.killed[node] = time.Now()
		in.logf("killed node %d", node)
	case FaultStop:
		srv.Pause()
		sleep(ctx, d)
		srv.Resume()
		in.logf("stopped node %d for %v", node, d.Round(time.Millisecond))
	case FaultClientPause:
		ms := d.Milliseconds()
		if _, err := srv.Do("CLIENT", "PAUSE", strconv.FormatInt(ms, 10), "WRITE"); err != nil {
			t.Fatalf("CLIENT PAUSE on node %d: %v", node, err)
		}
		sleep(ctx, d)
		in.logf("paused writes on node %d for %dms", node, ms)
	case FaultDebugSleep:
		secs := fmt.Sprintf("%.3f", min(d, 600*time.Millisecond).Seconds())
		if _, err := srv.Do("DEBUG", "SLEEP", secs); err != nil {
			t.Fatalf("DEBUG SLEEP on node %d: %v", node, err)
		}
		in.logf("node %d slept %ss", node, secs)
	case FaultPartitionMinority, FaultPartitionMajority:
		n := 2
		if kind == FaultPartitionMajority {
			n = 3
		}
		client := in.Rand.IntN(len(in.C.Net.Proxies))
		nodes := in.Rand.Perm(len(in.C.Servers))[:n]
		heal := in.C.Net.Partition(client, nodes...)
		sleep(ctx, d)
		heal()
		in.logf("cut client %d from nodes %v for %v", client, nodes, d.Round(time.Millisecond))
	case FaultLatency:
		up := time.Duration(1+in.Rand.IntN(60)) * time.Millisecond
		down := time.Duration(1+in.Rand.IntN(60)) * time.Millisecond
		for _, p := range in.C.Net.Node(node) {
			p.SetLatency(up, down)
		}
		sleep(ctx, d)
		for _, p := range in.C.Net.Node(node) {
			p.SetLatency(0, 0)
		}
		in.logf("delayed node %d by %v up, %v down for %v", node, up, down, d.Round(time.Millisecond))
	case FaultDrop, FaultBlackHole:
		for _, p := range in.C.Net.Node(node) {
			if kind == FaultDrop {
				p.Drop()
			} else {
				p.BlackHole()
			}
		}
		sleep(ctx, d)
		for _, p := range in.C.Net.Node(node) {
			p.Heal()
		}
		in.logf("%s on node %d for %v", kind, node, d.Round(time.Millisecond))
	default:
		t.Fatalf("unknown fault %q", kind)
	}
	in.mu.Lock()
	in.Counts[kind]++
	in.mu.Unlock()
}

// Missing returns the kinds of Kinds never applied so far. It is safe to
// call while Run runs.
func (in *Injector) Missing() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for _, k := range in.Kinds {
		if in.Counts[k] == 0 {
			out = append(out, k)
		}
	}
	return out
}
