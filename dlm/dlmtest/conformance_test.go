package dlmtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/leakcheck"
	"github.com/dlmgo/redlock/internal/resp"
)

func TestNodeOnResp(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	snap := leakcheck.Scoped()
	dlmtest.TestNode(t, func(t *testing.T) driver.Node {
		return resp.NewNode(&driver.Config{Addr: s.Addr()})
	})
	snap.Check(t, 5*time.Second)
}

func TestNodeOnRespTLSPasswordDB(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t, redistest.WithTLS(), redistest.WithArgs("--requirepass", "s3cret"))
	cfg, err := driver.ParseURL("rediss://:s3cret@" + s.Addr() + "/3?tls_ca_file=" + s.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	dlmtest.TestNode(t, func(t *testing.T) driver.Node { return resp.NewNode(cfg) })
}

// brokenAdapters each break one rule of the driver.Node contract, and name
// the subtests of TestNode that must catch it.
var brokenAdapters = map[string]struct {
	wrap    func(driver.Node) driver.Node
	catches []string
}{
	"integers as strings": {func(n driver.Node) driver.Node { return stringInts{n} }, []string{"Replies", "Concurrency"}},
	"ignores the context": {func(n driver.Node) driver.Node { return noContext{n} }, []string{"Timeout", "Cancel", "DoneContext"}},
	"EVAL every time":     {func(n driver.Node) driver.Node { return evalOnly{n} }, []string{"EVALSHAFirst"}},
	"wraps error replies": {func(n driver.Node) driver.Node { return wrapErrors{n} }, []string{"ErrorReplies"}},
}

// brokenAdapterEnv selects the broken adapter TestBrokenAdapterChild runs
// the suite on.
const brokenAdapterEnv = "DLMTEST_BROKEN_ADAPTER"

// TestSuiteCatchesBrokenAdapters runs TestNode on each broken adapter in a
// child process, and checks that exactly the subtests meant to catch the
// fault fail, with a passing one for contrast.
func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	t.Parallel()
	for name, b := range brokenAdapters {
		subtests := append([]string{"Addr"}, b.catches...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.v", "-test.count=1",
			"-test.run=^TestBrokenAdapterChild$/^("+strings.Join(subtests, "|")+")$")
		cmd.Env = append(os.Environ(), brokenAdapterEnv+"="+name)
		out, err := cmd.CombinedOutput()
		cancel()
		if _, failed := err.(*exec.ExitError); !failed {
			t.Errorf("%s: the suite's process ended with %v; want exit status 1\n%s", name, err, out)
			continue
		}
		for _, sub := range subtests {
			want := "--- FAIL: TestBrokenAdapterChild/" + sub + " "
			if sub == "Addr" {
				want = "--- PASS: TestBrokenAdapterChild/Addr "
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: the suite's output lacks %q:\n%s", name, want, out)
			}
		}
	}
}

// TestBrokenAdapterChild runs TestNode on the broken adapter named by
// $DLMTEST_BROKEN_ADAPTER, in the child process of
// TestSuiteCatchesBrokenAdapters. Without it, it does nothing.
func TestBrokenAdapterChild(t *testing.T) {
	t.Parallel()
	name := os.Getenv(brokenAdapterEnv)
	if name == "" {
		return
	}
	b, ok := brokenAdapters[name]
	if !ok {
		t.Fatalf("%s=%q: no such broken adapter", brokenAdapterEnv, name)
	}
	s := redistest.StartServer(t)
	dlmtest.TestNode(t, func(t *testing.T) driver.Node {
		return b.wrap(resp.NewNode(&driver.Config{Addr: s.Addr()}))
	})
}

// stringInts returns integers as decimal strings.
type stringInts struct{ driver.Node }

func (n stringInts) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	v, err := n.Node.Eval(ctx, s, keys, args)
	return intsToStrings(v), err
}

func intsToStrings(v any) any {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = intsToStrings(e)
		}
		return out
	}
	return v
}

// noContext waits for the server however long it takes.
type noContext struct{ driver.Node }

func (n noContext) Eval(_ context.Context, s *driver.Script, keys, args []string) (any, error) {
	return n.Node.Eval(context.Background(), s, keys, args)
}

// evalOnly sends a digest no server has, so every call ends in EVAL.
type evalOnly struct{ driver.Node }

func (n evalOnly) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	bogus := driver.NewScript(fmt.Sprintf("%s -- %d", s.Source, time.Now().UnixNano()))
	return n.Node.Eval(ctx, &driver.Script{Source: s.Source, Hash: bogus.Hash}, keys, args)
}

// wrapErrors puts its own prefix before every error.
type wrapErrors struct{ driver.Node }

func (n wrapErrors) Eval(ctx context.Context, s *driver.Script, keys, args []string) (any, error) {
	v, err := n.Node.Eval(ctx, s, keys, args)
	if err != nil {
		err = fmt.Errorf("mynode: %w", err)
	}
	return v, err
}
