package dlm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// fault is what a fakeNode does to the requests it is sent, after its delay.
type fault int

const (
	healthy   fault = iota
	refuse          // fail, as a connection that cannot be made
	errReply        // answer with a Redis error reply, without running the script
	hang            // never answer: return only when the request's context ends
	loseReply       // run the script, then report a timeout as if the reply was lost
	lateReply       // run the script at once, then answer after the delay, or fail when the request's context ends first
	noPerm          // refuse the script as an ACL without the needed command would
	crossSlot       // refuse the script as a Redis Cluster refuses keys of several slots
)

// fakeNode is an in-memory driver.Node running the three lock scripts in Go,
// without the lines of waiters (a refused attempt takes no place, and a
// release hands a key to nobody).
// Time is time.Now, so it follows the fake clock in a testing/synctest bubble;
// keys expire lazily. Faults, delay and keys may be changed at any time.
type fakeNode struct {
	addr  string
	mu    sync.Mutex
	keys  map[string]fakeEntry
	fault fault
	delay time.Duration // before running the script (a slow network)
	// faultFor, when set, gives the fault and delay of each request by its
	// script's name and its keys, in place of fault and delay.
	faultFor func(name string, keys []string) (fault, time.Duration)
	// onReturn, when set, is called as each request returns, with its
	// script's name.
	onReturn   func(name string)
	calls      map[string]int // by script name: "acquire", "release", "extend"
	closes     int
	lastSecret string // of the latest request, whatever became of it
}

type fakeEntry struct {
	val string
	exp time.Time
}

var _ driver.Node = (*fakeNode)(nil)

func newFakeNode(i int) *fakeNode {
	return &fakeNode{addr: fmt.Sprintf("fake-%d", i), keys: map[string]fakeEntry{}, calls: map[string]int{}}
}

func scriptName(s *driver.Script) string {
	switch s.Hash {
	case script.Acquire.Hash:
		return "acquire"
	case script.Release.Hash:
		return "release"
	case script.Extend.Hash, script.ExtendBatch.Hash:
		return "extend"
	}
	return ""
}

func (f *fakeNode) Addr() string { return f.addr }

func (f *fakeNode) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closes++
	return nil
}

func (f *fakeNode) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	name := scriptName(s)
	f.mu.Lock()
	fl, delay := f.fault, f.delay
	if f.faultFor != nil {
		fl, delay = f.faultFor(name, keys)
	}
	if ret := f.onReturn; ret != nil {
		defer ret(name)
	}
	f.calls[name]++
	switch {
	case s.Hash == script.ExtendBatch.Hash && len(args) > script.BatchHeader:
		f.lastSecret = args[script.BatchHeader]
	case len(args) > 0:
		f.lastSecret = args[0]
	}
	f.mu.Unlock()
	err := ctx.Err()
	if err != nil {
		return nil, fmt.Errorf("fake %s: %w", f.addr, err)
	}
	if fl != lateReply {
		if err := f.wait(ctx, delay); err != nil {
			return nil, err
		}
	}
	switch fl {
	case refuse:
		return nil, fmt.Errorf("dial tcp %s: connect: connection refused", f.addr)
	case errReply:
		return nil, errors.New("BUSY Redis is busy running a script")
	case noPerm:
		return nil, errors.New("NOPERM User locker has no permissions to run the 'evalsha' command")
	case crossSlot:
		return nil, errors.New("CROSSSLOT Keys in request don't hash to the same slot")
	case hang:
		<-ctx.Done()
		return nil, fmt.Errorf("fake %s: %w", f.addr, ctx.Err())
	}
	f.mu.Lock()
	var res any
	if s.Hash == script.ExtendBatch.Hash {
		res, err = f.runBatch(keys, args)
	} else {
		res, err = f.run(name, keys, args)
	}
	f.mu.Unlock()
	switch {
	case err == nil && fl == loseReply:
		return nil, fmt.Errorf("read tcp %s: i/o timeout", f.addr)
	case fl == lateReply:
		if err := f.wait(ctx, delay); err != nil {
			return nil, err
		}
	}
	return res, err
}

// wait waits for d, or fails as a request does when ctx ends first.
func (f *fakeNode) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fake %s: %w", f.addr, ctx.Err())
	}
}

// run executes the script called name; f.mu is held. The acquire and
// release scripts take the lines of the lock keys after them (two keys
// for each), which the fake node keeps no waiters in: only the lock keys
// count.
func (f *fakeNode) run(name string, keys, args []string) (any, error) {
	if name == "" {
		return nil, errors.New("NOSCRIPT No matching script. Please use EVAL")
	}
	secret := args[0]
	if name != "extend" {
		keys = keys[:len(keys)/3]
	}
	switch name {
	case "acquire", "extend":
		ms, err := strconv.Atoi(args[1])
		if err != nil || ms <= 0 {
			return nil, errors.New("ERR invalid expire time in 'set' command")
		}
		for _, k := range keys {
			v, ok := f.getLocked(k)
			if (name == "acquire" && ok && v != secret) || (name == "extend" && v != secret) {
				if name == "acquire" && v == script.ReadersMark && script.ParseFlag(args[len(args)-1]).WriterWaits {
					// announce's readersHold: a waiting writer refused by
					// readers records its intent.
					f.keys[script.IntentKey(k)] = fakeEntry{val: "1", exp: time.Now().Add(time.Duration(ms) * time.Millisecond)}
				}
				return int64(0), nil
			}
		}
		for _, k := range keys {
			f.keys[k] = fakeEntry{val: secret, exp: time.Now().Add(time.Duration(ms) * time.Millisecond)}
		}
		return int64(1), nil
	default: // release
		var n int64
		for _, k := range keys {
			if v, ok := f.getLocked(k); ok && v == secret {
				delete(f.keys, k)
				n++
			}
		}
		return n, nil
	}
}

// runBatch executes the batched extension of the mutexes whose groups of
// entries args gives (a kind, a TTL, a count, the secrets), each entry as
// run would extend it alone; f.mu is held.
func (f *fakeNode) runBatch(keys, args []string) (any, error) {
	out := []any{}
	for len(args) >= script.BatchHeader {
		n, err1 := strconv.Atoi(args[0])
		count, err2 := strconv.Atoi(args[2])
		if err1 != nil || err2 != nil || n < 1 || count < 0 || count > len(args)-script.BatchHeader || n*count > len(keys) {
			return nil, fmt.Errorf("ERR fake: a group of kind %q: only mutexes are batched here", args[0])
		}
		for _, secret := range args[script.BatchHeader : script.BatchHeader+count] {
			r, err := f.run("extend", keys[:n], []string{secret, args[1]})
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			keys = keys[n:]
		}
		args = args[script.BatchHeader+count:]
	}
	return out, nil
}

func (f *fakeNode) getLocked(key string) (string, bool) {
	e, ok := f.keys[key]
	if ok && !time.Now().Before(e.exp) {
		delete(f.keys, key)
		return "", false
	}
	return e.val, ok
}

// get returns the live value of key and when it expires.
func (f *fakeNode) get(key string) (string, time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.getLocked(key)
	return v, f.keys[key].exp, ok
}

// set stores key as another client's lock would.
func (f *fakeNode) set(key, val string, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[key] = fakeEntry{val: val, exp: time.Now().Add(ttl)}
}

// secret returns the secret of the latest request the node was sent.
func (f *fakeNode) secret() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSecret
}

// injectFor sets the fault and delay of each request by its script's name
// and its keys (nil: the node's own again).
func (f *fakeNode) injectFor(by func(name string, keys []string) (fault, time.Duration)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faultFor = by
}

// inject sets the node's fault and the delay before each request runs.
func (f *fakeNode) inject(fl fault, delay time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault, f.delay = fl, delay
}

// count returns how many times the script called name was sent ("" for all);
// with name "close", how many times Close was called.
func (f *fakeNode) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "close":
		return f.closes
	case "":
		n := 0
		for _, c := range f.calls {
			n += c
		}
		return n
	}
	return f.calls[name]
}
