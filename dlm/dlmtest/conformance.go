package dlmtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// TestNode checks that the nodes open returns keep the [driver.Node]
// contract on a real Redis: replies normalized as the [driver] package
// documents, keys and arguments passed in order and binary-safe, EVALSHA
// first with the EVAL fallback on NOSCRIPT, error replies returned as errors
// that start with the Redis error code, contexts honoured on a server that
// does not answer, safe concurrent use, Addr and Close. It also checks Ping
// when the node implements [driver.Pinger], SET NX GET when it implements
// [driver.Setter] (which needs Redis 7.0 or later), and subscriptions,
// messages and their end when it implements [driver.Subscriber].
//
// Each subtest calls open for a fresh node and closes it at the end, so open
// must not close it. The Redis behind the node must be a master that lets
// the node's user run EVAL, EVALSHA, INFO, PUBLISH, SUBSCRIBE and the
// commands the scripts call;
// one from [StartServer] is. The suite keeps its keys under a random
// "dlmtest:" prefix and deletes them; two subtests keep the server busy with
// a script for 800ms, so point open at a server of the test's own.
//
// An adapter's test is one line:
//
//	func TestConformance(t *testing.T) {
//		s := redistest.StartServer(t)
//		dlmtest.TestNode(t, func(t *testing.T) driver.Node { return myadapter.New(s.Addr()) })
//	}
func TestNode(t *testing.T, open func(t *testing.T) driver.Node) {
	t.Helper()
	for _, st := range []struct {
		name string
		fn   func(*testing.T, *nodeTester)
	}{
		{"Replies", testReplies},
		{"KeysAndArgs", testKeysAndArgs},
		{"NoScriptFallback", testNoScriptFallback},
		{"EVALSHAFirst", testEvalShaFirst},
		{"ErrorReplies", testErrorReplies},
		{"Timeout", testTimeout},
		{"Cancel", testCancel},
		{"DoneContext", testDoneContext},
		{"Concurrency", testConcurrency},
		{"Ping", testPing},
		{"SetNXGet", testSetNXGet},
		{"PubSub", testPubSub},
		{"Addr", testAddr},
	} {
		t.Run(st.name, func(t *testing.T) {
			st.fn(t, openNode(t, open))
		})
	}
}

// evalTimeout bounds the suite's calls that are meant to succeed.
const evalTimeout = 10 * time.Second

// nodeTester is one subtest's node and the keys it made.
type nodeTester struct {
	node   driver.Node
	prefix string
	keys   []string
}

// openNode opens a node for t and, in t.Cleanup, deletes the keys the test
// made and closes the node.
func openNode(t *testing.T, open func(t *testing.T) driver.Node) *nodeTester {
	t.Helper()
	n := open(t)
	if n == nil {
		t.Fatal("open returned a nil driver.Node")
	}
	nt := &nodeTester{node: n, prefix: "dlmtest:" + randomHex() + ":"}
	t.Cleanup(func() {
		if len(nt.keys) > 0 {
			if _, err := nt.eval(`return redis.call('DEL', unpack(KEYS))`, nt.keys, nil); err != nil {
				t.Errorf("deleting the test's keys: %v", err)
			}
		}
		if err := n.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	return nt
}

// key returns a key under the test's prefix and remembers to delete it.
func (nt *nodeTester) key(name string) string {
	k := nt.prefix + name
	nt.keys = append(nt.keys, k)
	return k
}

// eval runs src with a generous deadline.
func (nt *nodeTester) eval(src string, keys, args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	return nt.node.Eval(ctx, driver.NewScript(src), keys, args)
}

// mustEval runs src and fails t on an error.
func (nt *nodeTester) mustEval(t *testing.T, src string, keys, args []string) any {
	t.Helper()
	v, err := nt.eval(src, keys, args)
	if err != nil {
		t.Fatalf("Eval(%q) error: %v", scriptName(src), err)
	}
	return v
}

// checkUsable fails t unless the node still runs a script and returns its
// own reply, not one left over from an abandoned request.
func (nt *nodeTester) checkUsable(t *testing.T, after string) {
	t.Helper()
	want := "usable-" + randomHex()
	v, err := nt.eval(`return ARGV[1]`, nil, []string{want})
	if err != nil || v != want {
		t.Fatalf("after %s, Eval(return ARGV[1]) = %s, %v; want %q, nil", after, show(v), err, want)
	}
}

// uniqueScript returns body with a comment that gives it a SHA-1 no server
// has cached.
func uniqueScript(body string) string {
	return "-- dlmtest " + randomHex() + "\n" + body
}

func randomHex() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("dlmtest: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// sameReply reports whether got is want with the same Go types throughout.
// An empty array may be a nil or an empty []any.
func sameReply(got, want any) bool {
	w, ok := want.([]any)
	if !ok {
		return got == want
	}
	g, ok := got.([]any)
	if !ok || len(g) != len(w) {
		return false
	}
	for i := range w {
		if !sameReply(g[i], w[i]) {
			return false
		}
	}
	return true
}

// show formats a reply with its Go type.
func show(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s + fmt.Sprintf(" (%T)", v)
}

// scriptName is the last line of a script, which names it in messages
// (the first may be uniqueScript's comment).
func scriptName(src string) string {
	lines := strings.Split(src, "\n")
	return lines[len(lines)-1]
}
