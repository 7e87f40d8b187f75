package memlock

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// The keys of the parity cases: two lock keys, and the keys beside them.
const (
	pk      = "lock{k}"
	pk2     = "lock{k}:2"
	permits = pk + script.PermitsSuffix
	readers = pk + script.ReadersSuffix
	secret  = "s3cr3t-of-the-holder-0000"
	other   = "another-holder-secret-111"
	ttl     = "10000"            // ms, the TTL of every grant
	window  = "30000"            // ms, the restart guard's window
	fx      = "20000"            // ms, the fencing counters' expiry
	hour    = int64(3600 * 1000) // ms
	endMark = "end-of-case"
)

// The waiters of the parity cases: ids of script.WaiterIDLen characters
// whose first script.ManagerIDLen are their manager's; w1 and w3 are of one
// manager.
var (
	mgrA = strings.Repeat("A", script.ManagerIDLen)
	mgrB = strings.Repeat("B", script.ManagerIDLen)
	w1   = mgrA + strings.Repeat("1", script.WaiterIDLen-script.ManagerIDLen)
	w2   = mgrB + strings.Repeat("2", script.WaiterIDLen-script.ManagerIDLen)
	w3   = mgrA + strings.Repeat("3", script.WaiterIDLen-script.ManagerIDLen)
)

// parityKeys are the keys whose state every case compares: the lock keys,
// the keys beside them, and their lines.
var parityKeys = slices.Concat([]string{
	pk, script.FenceKey(pk), script.GuardKey(pk), readers, script.IntentKey(pk), permits,
	pk2, script.FenceKey(pk2), script.IntentKey(pk2),
	script.ListenKey(pk), script.ListenKey(pk2), script.LeaderKey(pk), pk + script.PreviousLineSuffix,
}, script.LinesOf([]string{pk, pk2}))

// ticketKeys are the parity keys whose sorted sets are scored by tickets,
// compared exactly, not as readings of the clock.
var ticketKeys = []string{script.LineKeys(pk)[0], script.LineKeys(pk2)[0]}

// managerChannels are the channels on which the releases name the waiters
// of the cases' two managers.
var managerChannels = []string{
	script.ManagerChannel(pk, mgrA), script.ManagerChannel(pk, mgrB),
	script.ManagerChannel(pk2, mgrA), script.ManagerChannel(pk2, mgrB),
}

// parityChannels are the wake channels every case listens on in its first
// run: the lock keys' broadcast channels and their managers' channels. A
// release hands a key to a waiter only while nobody listens on its
// broadcast channel, so every case runs again listening on the managers'
// channels alone.
var parityChannels = append([]string{script.WakeChannel(pk), script.WakeChannel(pk2), script.WakeChannel(permits)}, managerChannels...)

// preset is a key a case sets before running its script, on both nodes.
type preset struct {
	key string
	val string // a string key's value
	// at makes the value the node's clock in ms plus at, when not 0.
	at int64
	// zset makes the key a sorted set: members and their scores, in ms from
	// now, or the scores themselves with tickets.
	zset    map[string]int64
	tickets bool
	ttl     int64 // ms; 0 for none
	expired bool  // the key expires (1 ms) before the script runs
}

// parityCase runs one script with keys and args on both nodes.
type parityCase struct {
	name   string
	script *driver.Script
	keys   []string
	args   []string
	setup  []preset
	// near lists the indices of an array reply that are PTTLs.
	near []int
	// clock marks a case whose reply and fencing counters read the node's
	// clock in µs.
	clock bool
	// id marks the server-id script, whose reply is each server's own.
	id bool
	// clockTicket marks a case whose waiter's ticket, in its reply and in
	// the lines, is the node's clock in µs: it gave no valid one.
	clockTicket bool
}

func str(key, val string, ttl int64) preset { return preset{key: key, val: val, ttl: ttl} }

func zset(key string, ttl int64, members map[string]int64) preset {
	return preset{key: key, zset: members, ttl: ttl}
}

// guardAt is a guard key holding the node's time plus at ms.
func guardAt(at int64) preset { return preset{key: script.GuardKey(pk), at: at} }

// score is what a preset sorted set holds for at at the node time now.
func (p preset) score(at, now int64) int64 {
	if p.tickets {
		return at
	}
	return now + at
}

// readersIn is the read lock held by the readers of members.
func readersIn(members map[string]int64) []preset {
	top := int64(1)
	for _, end := range members {
		top = max(top, end)
	}
	return []preset{str(pk, script.ReadersMark, top), zset(readers, top, members)}
}

// keyState is what a node holds at a key.
type keyState struct {
	exists bool
	val    string           // a string's value
	zset   map[string]int64 // a sorted set's members and scores, nil for a string
	pttl   int64
}

func (k keyState) String() string {
	switch {
	case !k.exists:
		return "absent"
	case k.zset != nil:
		return fmt.Sprintf("zset %v, PTTL %d", k.zset, k.pttl)
	}
	return fmt.Sprintf("%q, PTTL %d", k.val, k.pttl)
}

// parityNode is one side of the comparison.
type parityNode struct {
	node  driver.Node
	set   func(t *testing.T, p preset, now int64)
	state func(t *testing.T, key string) keyState
	flush func(t *testing.T)
	// mark publishes endMark on channel.
	mark  func(t *testing.T, channel string)
	heard *heard
	// channels are the channels it listens on.
	channels []string
}

// heard collects what a subscription hears.
type heard struct {
	mu   sync.Mutex
	msgs []string
	subs chan string
	ends chan string
}

func newHeard() *heard { return &heard{subs: make(chan string, 16), ends: make(chan string, 16)} }

func (h *heard) Message(channel, payload string) {
	if payload == endMark {
		h.ends <- channel
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, channel+" "+payload)
}

func (h *heard) Subscribed(channel string) { h.subs <- channel }

// take waits for n values from c.
func take(t *testing.T, c <-chan string, n int, what string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case <-c:
		case <-timeout.C:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// listen subscribes p to channels.
func (p *parityNode) listen(t *testing.T, channels []string) {
	p.heard, p.channels = newHeard(), channels
	sub, err := p.node.(driver.Subscriber).Subscribe(context.Background(), p.heard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	if err := sub.Subscribe(context.Background(), channels...); err != nil {
		t.Fatal(err)
	}
	take(t, p.heard.subs, len(channels), "subscription confirmation")
}

// published returns what p heard since the last call, once the end marks
// published after the script came back.
func (p *parityNode) published(t *testing.T) []string {
	for _, ch := range p.channels {
		p.mark(t, ch)
	}
	take(t, p.heard.ends, len(p.channels), "end mark")
	p.heard.mu.Lock()
	defer p.heard.mu.Unlock()
	msgs := p.heard.msgs
	p.heard.msgs = nil
	slices.Sort(msgs)
	return msgs
}

func redisParityNode(t *testing.T) *parityNode {
	srv := redistest.StartServer(t)
	do := func(t *testing.T, args ...string) any {
		t.Helper()
		v, err := srv.Do(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}
	cfg, err := driver.ParseURL("redis://" + srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	return &parityNode{
		node: n,
		set: func(t *testing.T, p preset, now int64) {
			if p.zset != nil {
				zadd := []string{"ZADD", p.key}
				for m, at := range p.zset {
					zadd = append(zadd, strconv.FormatInt(p.score(at, now), 10), m)
				}
				do(t, zadd...)
				if p.ttl > 0 {
					do(t, "PEXPIRE", p.key, strconv.FormatInt(p.ttl, 10))
				}
				return
			}
			args := []string{"SET", p.key, p.value(now)}
			if p.ttl > 0 {
				args = append(args, "PX", strconv.FormatInt(p.ttl, 10))
			}
			do(t, args...)
		},
		state: func(t *testing.T, key string) keyState {
			var k keyState
			switch typ := do(t, "TYPE", key); typ {
			case "none":
				return k
			case "string":
				k.val, _ = do(t, "GET", key).(string)
			case "zset":
				k.zset = map[string]int64{}
				flat, _ := do(t, "ZRANGE", key, "0", "-1", "WITHSCORES").([]any)
				for i := 0; i+1 < len(flat); i += 2 {
					m, _ := flat[i].(string)
					s, _ := flat[i+1].(string)
					score, err := strconv.ParseInt(s, 10, 64)
					if err != nil {
						t.Fatalf("ZRANGE %s: score %q: %v", key, s, err)
					}
					k.zset[m] = score
				}
			default:
				t.Fatalf("TYPE %s = %v; want none, string or zset", key, typ)
			}
			k.exists = true
			k.pttl, _ = do(t, "PTTL", key).(int64)
			return k
		},
		flush: func(t *testing.T) { do(t, "FLUSHALL") },
		mark:  func(t *testing.T, ch string) { do(t, "PUBLISH", ch, endMark) },
	}
}

func memParityNode(*testing.T) *parityNode {
	n := NewNode("memlock:parity")
	return &parityNode{
		node: n,
		set: func(_ *testing.T, p preset, now int64) {
			n.mu.Lock()
			defer n.mu.Unlock()
			e := entry{val: p.value(now)}
			if p.zset != nil {
				e = entry{set: map[string]int64{}}
				for m, at := range p.zset {
					e.set[m] = p.score(at, now)
				}
			}
			if p.ttl > 0 {
				e.exp = time.Now().Add(time.Duration(p.ttl) * time.Millisecond)
			}
			n.keys[p.key] = e
		},
		state: func(_ *testing.T, key string) keyState {
			n.mu.Lock()
			defer n.mu.Unlock()
			v, ok := n.get(key)
			if !ok {
				return keyState{}
			}
			k := keyState{exists: true, val: v, pttl: n.pttl(key)}
			if s := n.keys[key].set; s != nil {
				k.val, k.zset = "", maps.Clone(s)
			}
			return k
		},
		flush: func(*testing.T) { n.FlushAll() },
		mark: func(_ *testing.T, ch string) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.publish(ch, endMark)
		},
	}
}

// value is a string preset's value at the node time now (ms).
func (p preset) value(now int64) string {
	if p.at != 0 {
		return strconv.FormatInt(now+p.at, 10)
	}
	return p.val
}

// TestScriptParity runs every script the in-memory node runs, through cases
// that reach each of its branches, on a memlock Node and on a
// redis-server side by side, and requires the same replies, the same
// state of every key afterwards (value, sorted-set scores, whether it has a
// TTL and about how long) and the same messages published on the wake
// channels. Values read from the clock (PTTLs, scores, counters started from
// the clock) may differ by the time the case took from the first script's
// start to the last read.
//
// Every case runs twice: with clients listening on the keys' broadcast
// channels and the managers' channels, and on the managers' channels alone,
// where a release hands a key on to the head of its line.
func TestScriptParity(t *testing.T) {
	t.Parallel()
	for _, listening := range []struct {
		name     string
		channels []string
	}{{"broadcast listened", parityChannels}, {"named only", managerChannels}} {
		t.Run(listening.name, func(t *testing.T) {
			t.Parallel()
			runParity(t, listening.channels)
		})
	}
}

// runParity runs every parity case on a memlock Node and a redis-server
// listening on channels.
func runParity(t *testing.T, channels []string) {
	sides := []*parityNode{redisParityNode(t), memParityNode(t)}
	for _, p := range sides {
		p.listen(t, channels)
	}
	covered := map[*driver.Script]bool{}
	for _, tc := range parityCases() {
		covered[tc.script] = true
		t.Run(tc.name, func(t *testing.T) {
			// Every TTL and score was set, and read, within the time since
			// start: values read from the clock differ by no more than that.
			start := time.Now()
			now := start.UnixMilli()
			for _, p := range sides {
				p.flush(t)
				for _, s := range tc.setup {
					if s.expired {
						s.ttl = 1
					}
					p.set(t, s, now)
				}
			}
			if slices.ContainsFunc(tc.setup, func(p preset) bool { return p.expired }) {
				time.Sleep(5 * time.Millisecond) // the 1 ms TTLs run out
			}
			var replies [2]any
			var errs [2]error
			for i, p := range sides {
				replies[i], errs[i] = p.node.Eval(context.Background(), tc.script, tc.keys, tc.args)
			}
			var states [2][]keyState
			for i, p := range sides {
				for _, k := range parityKeys {
					states[i] = append(states[i], p.state(t, k))
				}
			}
			tol := time.Since(start).Milliseconds() + 2
			switch {
			case errs[0] != nil || errs[1] != nil:
				t.Fatalf("Eval: redis %v, memlock %v; want both nil", errs[0], errs[1])
			default:
				if msg := compareReply(tc, replies[0], replies[1], tol); msg != "" {
					t.Errorf("reply: redis %#v, memlock %#v: %s", replies[0], replies[1], msg)
				}
			}
			for j, k := range parityKeys {
				clock := tc.clock && (k == script.FenceKey(pk) || k == script.FenceKey(pk2))
				exact := slices.Contains(ticketKeys, k) && !tc.clockTicket
				if msg := compareKey(states[0][j], states[1][j], tc.scoreTol(tol, k), exact, clock); msg != "" {
					t.Errorf("key %s: redis %v, memlock %v: %s", k, states[0][j], states[1][j], msg)
				}
			}
			r, m := sides[0].published(t), sides[1].published(t)
			if !slices.Equal(r, m) {
				t.Errorf("published: redis %q, memlock %q; want the same", r, m)
			}
		})
	}
	for _, s := range memlockScripts {
		if !covered[s] {
			t.Errorf("script %s, which memlock runs, has no parity case", s.Hash)
		}
	}
}

// memlockScripts are the scripts the in-memory node runs.
var memlockScripts = []*driver.Script{
	script.Acquire, script.FencedAcquire, script.GuardedAcquire, script.GuardedFencedAcquire,
	script.Release, script.Leave, script.Extend, script.RaiseFence, script.ReadFence, script.Status, script.Leader, script.SetLeader, script.ServerID, script.ServerProbe,
	script.ReadAcquire, script.GuardedReadAcquire, script.ReadExtend, script.ReadRelease,
	script.PermitAcquire, script.GuardedPermitAcquire, script.PermitExtend, script.PermitRelease,
	script.ExtendBatch, script.StatusOwner, script.TouchOwner, script.ForceRelease,
}

var serverID = regexp.MustCompile(`^[0-9a-f]{40}$`)

// scoreTol is the tolerance of the scores of key k in case tc: clock
// readings in ms, or in µs for the tickets of a case whose ticket is the
// node's clock.
func (tc parityCase) scoreTol(tol int64, k string) int64 {
	if tc.clockTicket && slices.Contains(ticketKeys, k) {
		return tol * 1000
	}
	return tol
}

// compareReply returns why replies r (Redis) and m (memlock) differ, or "".
func compareReply(tc parityCase, r, m any, tol int64) string {
	switch {
	case tc.id:
		rs, _ := r.(string)
		ms, _ := m.(string)
		if !serverID.MatchString(rs) || !serverID.MatchString(ms) {
			return "want two run_ids of 40 hexadecimal digits"
		}
		return ""
	case tc.clock:
		// The grant's counter, the first of a ticketed pair, is a
		// reading of the clock in µs.
		ra, _ := r.([]any)
		ma, _ := m.([]any)
		if len(ra) != 2 || len(ma) != 2 || ra[1] != ma[1] {
			return "want two pairs, with the same ticket"
		}
		rn, _ := ra[0].(int64)
		mn, _ := ma[0].(int64)
		if rn <= 0 || mn <= 0 || abs(rn-mn) > tol*1000 {
			return fmt.Sprintf("want two clock readings in µs within %d ms", tol)
		}
		return ""
	}
	ra, rok := r.([]any)
	ma, mok := m.([]any)
	if !rok || !mok {
		if r != m {
			return "want the same"
		}
		return ""
	}
	if len(ra) != len(ma) {
		return "want arrays of one length"
	}
	// A refusal of the mutex's acquire adds the PTTL of the key that
	// refused, and may add whether its broadcast channel had listeners.
	if script.ShapeOf(tc.script).Ticketed && len(ra) >= 3 {
		if msg := comparePTTL(ra[2].(int64), ma[2].(int64), tol); msg != "" {
			return "the refusing key's " + msg
		}
		if len(ra) == 4 && ra[3] != ma[3] {
			return "element 3, whether anyone listens on the broadcast channel, differs"
		}
		ra, ma = ra[:2], ma[:2]
	}
	if tc.clockTicket && len(ra) == 2 {
		rt, _ := ra[1].(int64)
		mt, _ := ma[1].(int64)
		if ra[0] != ma[0] || rt < 1e15 || abs(rt-mt) > tol*1000 {
			return fmt.Sprintf("want the same grant, and tickets that are clock readings in µs within %d ms", tol)
		}
		return ""
	}
	for i := range ra {
		if slices.Contains(tc.near, i) {
			if msg := comparePTTL(ra[i].(int64), ma[i].(int64), tol); msg != "" {
				return fmt.Sprintf("element %d: %s", i, msg)
			}
			continue
		}
		if ra[i] != ma[i] {
			return fmt.Sprintf("element %d differs", i)
		}
	}
	return ""
}

// comparePTTL compares PTTLs: -2 and -1 exactly, TTLs to within tol ms.
func comparePTTL(r, m, tol int64) string {
	if (r < 0 || m < 0) && r != m || abs(r-m) > tol {
		return fmt.Sprintf("PTTL %d and %d; want the same to within %d ms", r, m, tol)
	}
	return ""
}

// compareKey returns why the states r (Redis) and m (memlock) of one key
// differ, or "". With exact, sorted-set scores are tickets, which must be
// the same; otherwise they are readings of the clock in ms. With clock,
// string values are µs readings of the clock.
func compareKey(r, m keyState, tol int64, exact, clock bool) string {
	if r.exists != m.exists || (r.zset == nil) != (m.zset == nil) {
		return "want the same kind"
	}
	if msg := comparePTTL(r.pttl, m.pttl, tol); msg != "" {
		return msg
	}
	if r.zset != nil {
		if len(r.zset) != len(m.zset) {
			return "want the same members"
		}
		for member, score := range r.zset {
			ms, ok := m.zset[member]
			switch {
			case !ok:
				return fmt.Sprintf("member %q: want it in both", member)
			case exact && score != ms:
				return fmt.Sprintf("member %q: want the same ticket", member)
			case abs(score-ms) > tol:
				return fmt.Sprintf("member %q: want the same score to within %d ms", member, tol)
			}
		}
		return ""
	}
	if clock && r.val != m.val {
		rn, err1 := strconv.ParseInt(r.val, 10, 64)
		mn, err2 := strconv.ParseInt(m.val, 10, 64)
		if err1 != nil || err2 != nil || abs(rn-mn) > tol*1000 {
			return fmt.Sprintf("want two clock readings in µs within %d ms", tol)
		}
		return ""
	}
	if r.val != m.val {
		return "want the same value"
	}
	return ""
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
