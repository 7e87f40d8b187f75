package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// Open connects to each node from a URL. The scheme names the backend,
// which registers itself when imported:
//
//	import _ "github.com/dlmgo/redlock/backends/goredis"
//
// This example needs Redis servers, so it is compiled but not run.
func ExampleOpen() {
	m, err := dlm.Open([]string{
		"redis+goredis://:secret@10.0.0.1:6379/0?dial_timeout=100ms",
		"redis+goredis://:secret@10.0.0.2:6379/0?dial_timeout=100ms",
		"redis+goredis://:secret@10.0.0.3:6379/0?dial_timeout=100ms",
	}, dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err) // the message never contains the password
	}
	defer m.Close() // closes the nodes Open opened

	err = m.Do(context.Background(), "reports:nightly", func(ctx context.Context) error {
		return buildReport(ctx) // ctx is cancelled if the lock is lost
	})
	if err != nil {
		log.Fatal(err)
	}
}

func buildReport(context.Context) error { return nil }

// New takes nodes the program built itself, typically clients it already
// has, wrapped by a backend: goredis.NewNode(rdb), redigo.NewNode(pool,
// addr) or rueidis.NewNode(client). The manager never closes them.
func ExampleNew() {
	nodes := exampleNodes(3)
	m, err := dlm.New(nodes, dlm.WithTTL(5*time.Second), dlm.WithKeyPrefix("billing:lock:"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodes:", m.Nodes())
	if err := m.Close(); err != nil {
		log.Fatal(err)
	}

	// The same node twice would break the majority arithmetic.
	_, err = dlm.New([]driver.Node{nodes[0], nodes[1], nodes[0]})
	fmt.Println("duplicate refused:", errors.Is(err, dlm.ErrInvalid))
	// Output:
	// nodes: [mem-0:6379 mem-1:6379 mem-2:6379]
	// duplicate refused: true
}

// Lock waits for the lock, Extend keeps it longer, and Unlock releases it
// on every node.
func ExampleManager_Lock() {
	m, err := dlm.New(exampleNodes(5), dlm.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	// Lock retries with a jittered backoff until it gets the lock or the
	// context ends: bound the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := m.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked", l.Key())

	// Act on the resource only before l.Until(). Work that needs longer
	// extends the lock while it is still valid.
	if err := l.Extend(ctx, 30*time.Second); err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid for more than 29s:", time.Until(l.Until()) > 29*time.Second)

	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("unlocked")
	// Output:
	// locked orders:42
	// valid for more than 29s: true
	// unlocked
}

// Lost is closed shortly before the validity ends when nothing extended the
// lock, so the holder can stop in time. Unlock then reports the loss.
func ExampleLock_Lost() {
	m, err := dlm.New(exampleNodes(3), dlm.WithTTL(300*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	l, err := m.Lock(ctx, "lease")
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-time.After(time.Second): // work that outlasts the TTL, without extending
		fmt.Println("work done")
	case <-l.Lost():
		fmt.Println("lock about to expire: work stopped")
	}
	err = l.Unlock(ctx)
	fmt.Println("Unlock reports the loss:", errors.Is(err, dlm.ErrLockLost))
	// Output:
	// lock about to expire: work stopped
	// Unlock reports the loss: true
}

// With fencing, every grant of a key carries a larger token, and the
// protected resource turns away writes with a token below the largest it
// has seen, or equal to it from another grant. A holder that paused past
// its validity is then harmless.
//
// In SQL, the row keeps the largest token and its grant, and a write is
//
//	UPDATE orders SET state = $3, fence = $1, grant_id = $2 WHERE id = 42
//	  AND (fence < $1 OR (fence = $1 AND grant_id = $2))
//
// where "0 rows updated" means a stale holder. [dlm.Fence] is the same
// check in memory.
func ExampleWithFencing() {
	nodes := exampleFencingNodes(5)
	ctx := context.Background()
	var order dlm.Fence // the resource's side

	// Two processes, each with its manager over the same nodes.
	a, err := dlm.New(nodes, dlm.WithFencing(), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := dlm.New(nodes, dlm.WithFencing(), dlm.WithTTL(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	first, err := a.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first holder's token:", first.Token())
	time.Sleep(1100 * time.Millisecond) // the first holder pauses (GC, SIGSTOP) and its lock expires

	second, err := b.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second holder's token:", second.Token())
	fmt.Println("second holder writes:", order.Admit(second.Token(), second.GrantID()))
	fmt.Println("and again:", order.Admit(second.Token(), second.GrantID()))
	if err := second.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// The first holder wakes up and writes as if it still held the lock.
	err = order.Admit(first.Token(), first.GrantID())
	fmt.Println("first holder writes:", err)
	fmt.Println("stale:", errors.Is(err, dlm.ErrStaleToken))
	// Output:
	// first holder's token: 1
	// second holder's token: 2
	// second holder writes: <nil>
	// and again: <nil>
	// first holder writes: dlm: stale fencing token: 1 < 2
	// stale: true
}

// A Fence admits tokens that never go below the largest it admitted. An
// equal token passes from the grant that wrote with it before, since one
// holder may write several times, and not from another grant: two grants get
// the same token only after nodes lost their counters.
func ExampleFence_Admit() {
	var f dlm.Fence
	for _, w := range []struct{ token, grant uint64 }{{3, 101}, {3, 101}, {7, 102}, {5, 103}, {7, 104}} {
		fmt.Printf("Admit(%d, %d): %v\n", w.token, w.grant, f.Admit(w.token, w.grant))
	}
	fmt.Println("largest:", f.Last())
	// Output:
	// Admit(3, 101): <nil>
	// Admit(3, 101): <nil>
	// Admit(7, 102): <nil>
	// Admit(5, 103): dlm: stale fencing token: 5 < 7
	// Admit(7, 104): dlm: stale fencing token: 7 was admitted for another grant
	// largest: 7
}

// Status shows what each node knows of a lock, without taking it or
// revealing the holder's token: here a lock held on two nodes of three,
// the third being down, then released. Fencing counters outlive the lock.
func ExampleManager_Status() {
	nodes := append(exampleFencingNodes(2), downNode("mem-2:6379"))
	m, err := dlm.New(nodes, dlm.WithFencing())
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()

	show := func(when string) {
		sts, err := m.Status(ctx, "orders:42")
		if err != nil {
			log.Fatal(err) // only bad input or a closed manager
		}
		fmt.Println(when + ":")
		for _, st := range sts {
			if st.Err != nil {
				fmt.Printf("  %s: %v\n", st.Node, st.Err)
				continue
			}
			fmt.Printf("  %s: held=%v ttl>0=%v counter=%d\n", st.Node, st.Held, st.TTL > 0, st.Counter)
		}
	}

	l, err := m.TryLock(ctx, "orders:42") // 2 of 3 nodes are a quorum
	if err != nil {
		log.Fatal(err)
	}
	show("held")
	if err := l.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	show("released")
	// Output:
	// held:
	//   mem-0:6379: held=true ttl>0=true counter=1
	//   mem-1:6379: held=true ttl>0=true counter=1
	//   mem-2:6379: node mem-2:6379: dial tcp mem-2:6379: connect: connection refused
	// released:
	//   mem-0:6379: held=false ttl>0=false counter=1
	//   mem-1:6379: held=false ttl>0=false counter=1
	//   mem-2:6379: node mem-2:6379: dial tcp mem-2:6379: connect: connection refused
}

// Errors are told apart with errors.Is against the sentinels, and
// errors.As finds the vote (*QuorumError) and each failed node
// (*NodeError).
func ExampleQuorumError() {
	nodes := exampleNodes(3)
	ctx := context.Background()

	// Another process holds the lock.
	other, err := dlm.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()
	held, err := other.TryLock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	defer held.Unlock(ctx)

	m, err := dlm.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	_, err = m.TryLock(ctx, "orders:42")
	fmt.Println("held elsewhere:", errors.Is(err, dlm.ErrNotObtained))
	var qerr *dlm.QuorumError
	if errors.As(err, &qerr) {
		fmt.Printf("vote on %s %q: quorum %d of %d nodes\n", qerr.Op, qerr.Key, qerr.Quorum, qerr.Nodes)
	}

	// Lock waits; when its context ends first, the error wraps the
	// context's.
	wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = m.Lock(wait, "orders:42")
	fmt.Println("stopped waiting:", errors.Is(err, context.DeadlineExceeded))

	// Two nodes of three down: no quorum is possible, whoever holds the
	// lock.
	degraded, err := dlm.New([]driver.Node{exampleNodes(1)[0], downNode("mem-1:6379"), downNode("mem-2:6379")})
	if err != nil {
		log.Fatal(err)
	}
	defer degraded.Close()
	_, err = degraded.TryLock(ctx, "orders:43")
	fmt.Println("unavailable:", errors.Is(err, dlm.ErrUnavailable))
	var nerr *dlm.NodeError
	if errors.As(err, &nerr) {
		fmt.Println("first failed node:", nerr.Node)
	}
	// Output:
	// held elsewhere: true
	// vote on lock "orders:42": quorum 2 of 3 nodes
	// stopped waiting: true
	// unavailable: true
	// first failed node: mem-1:6379
}

// An adapter registers its driver under a name, usually from an init
// function of its package, so that a blank import selects it; URLs then
// name it in their scheme. This example registers the in-memory nodes of
// these examples as "memory". It is compiled but not run: the registry is
// global, and a name can be registered only once.
func ExampleRegister() {
	dlm.Register("memory", memoryDriver{}) // in the adapter: func init() { dlm.Register(...) }
	fmt.Println(dlm.Drivers())             // [memory], with the backends a program imports

	m, err := dlm.Open([]string{
		"redis+memory://10.0.0.1:6379",
		"redis+memory://10.0.0.2:6379",
		"redis+memory://10.0.0.3:6379",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Nodes()) // [10.0.0.1:6379 10.0.0.2:6379 10.0.0.3:6379]
}

// memoryDriver opens an in-memory node for each URL, named by its address.
// Each node is new: two managers opened on the same URLs share nothing.
type memoryDriver struct{}

func (memoryDriver) Open(url string) (driver.Node, error) {
	cfg, err := driver.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return &memNode{addr: cfg.Addr, keys: map[string]memEntry{}}, nil
}

// exampleFencingNodes returns n in-memory nodes like exampleNodes that also
// run the fenced acquire script and the status script, as far as these
// examples need them.
func exampleFencingNodes(n int) []driver.Node {
	nodes := exampleNodes(n)
	for i, node := range nodes {
		nodes[i] = fencingNode{node.(*memNode)}
	}
	return nodes
}

// fencingNode adds the fenced acquire and status scripts to a memNode,
// recognising each by the text only it has. Fencing counters never expire.
type fencingNode struct{ *memNode }

func (n fencingNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch src := s.Source; {
	case strings.Contains(src, "local reserved"): // status: KEYS are a lock key and its counter
		n.mu.Lock()
		defer n.mu.Unlock()
		pttl := int64(-2)
		if _, ok := n.get(keys[0]); ok {
			pttl = time.Until(n.keys[keys[0]].exp).Milliseconds()
		}
		return []any{pttl, n.counter(keys[1]), int64(0)}, nil
	case strings.Contains(src, fencedMark): // fenced acquire: KEYS are lock keys, counters, lines
		n.mu.Lock()
		defer n.mu.Unlock()
		locks, counters := keys[:len(keys)/4], keys[len(keys)/4:len(keys)/2]
		for _, k := range locks {
			if v, ok := n.get(k); ok && v != args[0] {
				return int64(0), nil
			}
		}
		var fence int64
		for _, k := range counters {
			fence = max(fence, n.counter(k))
		}
		fence++
		if _, err := n.setAll(locks, args); err != nil {
			return nil, err
		}
		for _, k := range counters {
			n.keys[k] = memEntry{val: strconv.FormatInt(fence, 10), exp: never}
		}
		return fence, nil
	}
	return n.memNode.Eval(ctx, s, keys, args)
}

// never is the expiry of keys without a TTL.
var never = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// counter returns the fencing counter stored at key, 0 if none; n.mu is
// held.
func (n fencingNode) counter(key string) int64 {
	c, _ := strconv.ParseInt(n.keys[key].val, 10, 64)
	return c
}

// downNode is a node whose server cannot be reached.
type downNode string

func (d downNode) Addr() string { return string(d) }
func (d downNode) Close() error { return nil }
func (d downNode) Eval(context.Context, *driver.Script, []string, []string) (any, error) {
	return nil, fmt.Errorf("dial tcp %s: connect: connection refused", string(d))
}
