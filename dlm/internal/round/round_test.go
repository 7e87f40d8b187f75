package round

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

var errRestarted = errors.New("node restarted")

// nodeErr is the test's wrapping of a node's failure.
type nodeErr struct {
	node int
	err  error
}

func (e *nodeErr) Error() string { return fmt.Sprintf("node %d: %v", e.node, e.err) }
func (e *nodeErr) Unwrap() error { return e.err }

// fakes are nodes whose acquire replies are given by the test, each sent
// once the node's gate is open, and whose releases are recorded.
type fakes struct {
	replies []any
	gates   []chan struct{} // nil: the node answers at once
	// releases are the release replies by node, an error for a failure;
	// nil: every release frees one key.
	releases []any

	mu       sync.Mutex
	released []int
}

func (f *fakes) calls() []Call {
	calls := make([]Call, len(f.replies))
	for i := range calls {
		calls[i] = func(ctx context.Context, req *Request) (any, error) {
			if req.Op == "unlock" {
				f.mu.Lock()
				f.released = append(f.released, i)
				f.mu.Unlock()
				if f.releases != nil {
					if err, ok := f.releases[i].(error); ok {
						return nil, err
					}
					return f.releases[i], nil
				}
				return int64(1), nil
			}
			if g := f.gates[i]; g != nil {
				select {
				case <-g:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if err, ok := f.replies[i].(error); ok {
				return nil, err
			}
			return f.replies[i], nil
		}
	}
	return calls
}

// newRound returns a round over f's nodes, whose pool the test's cleanup
// stops, and a check, run before it, that no goroutine of the test is
// left once it stopped.
func newRound(t *testing.T, f *fakes) (*Round, *Pool) {
	t.Helper()
	snap := leakcheck.Scoped()
	pool := NewPool()
	t.Cleanup(func() {
		pool.Stop()
		snap.Check(t, 2*time.Second)
	})
	return New(pool, f.calls(), func(i int, err error) error { return &nodeErr{i, err} }, errRestarted), pool
}

func acquireReq() *Request {
	return &Request{Op: "lock", Want: 1, Timeout: time.Minute, Early: true}
}

// TestReleaseAttemptReleasesLateGrants checks that a round stopped early,
// three of five nodes having refused, hands back the replies still due,
// and that ReleaseAttempt releases the nodes among them that grant late,
// and none of those that refused.
func TestReleaseAttemptReleasesLateGrants(t *testing.T) {
	t.Parallel()
	late := make(chan struct{})
	f := &fakes{
		replies: []any{int64(0), int64(0), int64(0), int64(1), int64(1)},
		gates:   []chan struct{}{nil, nil, nil, late, late},
	}
	r, pool := newRound(t, f)
	v, p := r.Poll(context.Background(), acquireReq())
	if v.No != 3 || v.Yes != 0 || p == nil {
		t.Fatalf("Poll with 3 of 5 nodes refusing, 2 not answering = %d no, %d yes, pending %v; want 3 no, 0 yes, a pending", v.No, v.Yes, p != nil)
	}
	r.ReleaseAttempt(context.Background(), &Request{Op: "unlock", Want: 1, Timeout: time.Minute}, &v, p, nil)
	close(late)
	pool.Stop() // waits for the background releases
	slices.Sort(f.released)
	if want := []int{3, 4}; !slices.Equal(f.released, want) {
		t.Errorf("ReleaseAttempt released nodes %v; want %v, the late grants, and not the nodes that refused", f.released, want)
	}
}

// TestReleaseAttemptSkipsRefusals checks which nodes a failed round that
// waited for every node releases: those that granted or failed, not those
// that refused.
func TestReleaseAttemptSkipsRefusals(t *testing.T) {
	t.Parallel()
	f := &fakes{
		replies: []any{int64(1), int64(0), errors.New("down"), int64(0), int64(0)},
		gates:   make([]chan struct{}, 5),
	}
	r, pool := newRound(t, f)
	req := acquireReq()
	req.Early = false
	v, p := r.Poll(context.Background(), req)
	if v.Yes != 1 || v.No != 3 || v.Failed != 1 || p != nil {
		t.Fatalf("Poll = %d yes, %d no, %d failed, pending %v; want 1, 3, 1 and none", v.Yes, v.No, v.Failed, p != nil)
	}
	r.ReleaseAttempt(context.Background(), &Request{Op: "unlock", Want: 1, Timeout: time.Minute}, &v, p, nil)
	pool.Stop()
	slices.Sort(f.released)
	if want := []int{0, 2}; !slices.Equal(f.released, want) {
		t.Errorf("ReleaseAttempt released nodes %v; want %v", f.released, want)
	}
}

// TestPollCancelled checks that a round whose caller's context ends counts
// the nodes still due as failed with its error, marks the vote cut, and
// hands back the replies still due only when it stops early.
func TestPollCancelled(t *testing.T) {
	t.Parallel()
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprintf("early=%v", early), func(t *testing.T) {
			t.Parallel()
			hang := make(chan struct{})
			f := &fakes{replies: make([]any, 3), gates: []chan struct{}{hang, hang, hang}}
			for i := range f.replies {
				f.replies[i] = int64(1)
			}
			r, _ := newRound(t, f)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			req := acquireReq()
			req.Early = early
			v, p := r.Poll(ctx, req)
			close(hang)
			if p != nil {
				p.Wait()
			}
			if !v.Cut || v.Failed != 3 || (p != nil) != early {
				t.Errorf("Poll cancelled = cut %v, %d failed, pending %v; want cut, 3 failed, pending %v", v.Cut, v.Failed, p != nil, early)
			}
			for i, err := range v.Errs {
				var ne *nodeErr
				if !errors.As(err, &ne) || ne.node != i || !errors.Is(err, context.Canceled) {
					t.Errorf("node %d's failure = %v; want node %d's, wrapping %v", i, err, i, context.Canceled)
				}
			}
		})
	}
}

// TestReplies checks how one node's reply counts, by the request's kind.
func TestReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		reply       any
		fenced      bool
		plain       bool // a script whose reply is no pair (Extend)
		yes         bool
		fence, tick int64
		err         error // nil: none; errRestarted; errAny: another
	}{
		{name: "yes", reply: int64(1), yes: true},
		{name: "no", reply: int64(0)},
		{name: "other integer", reply: int64(2)},
		{name: "restarted", reply: int64(-1), err: errRestarted},
		{name: "string", reply: "OK", err: errAny},
		{name: "fenced", reply: int64(7), fenced: true, yes: true, fence: 7},
		{name: "fenced refused", reply: int64(0), fenced: true},
		{name: "ticketed", reply: []any{int64(1), int64(42)}, yes: true, tick: 42},
		{name: "ticketed refused", reply: []any{int64(0), int64(42)}, tick: 42},
		{name: "line full: no ticket", reply: []any{int64(0), int64(-1)}},
		{name: "pair unexpected", reply: []any{int64(1), int64(42)}, plain: true, err: errAny},
		// A ticket that is no integer reply is written by no script: the
		// reply is the node's failure, never a ticket of 0 (a grant's).
		{name: "refusal, ticket not a number", reply: []any{int64(0), "x"}, err: errAny},
		{name: "grant, ticket not a number", reply: []any{int64(1), "x"}, err: errAny},
		{name: "grant, ticket of digits as a string", reply: []any{int64(1), "0"}, err: errAny},
		{name: "grant, ticket nil", reply: []any{int64(1), nil}, err: errAny},
		{name: "grant, ticket a float", reply: []any{int64(1), 0.0}, err: errAny},
		{name: "grant, ticket an array", reply: []any{int64(1), []any{int64(0)}}, err: errAny},
		{name: "fenced grant, ticket not a number", reply: []any{int64(9), "x"}, fenced: true, err: errAny},
		{name: "refusal, ticket nil", reply: []any{int64(0), nil, int64(5), int64(0)}, err: errAny},
		{name: "ticket of 2^53", reply: []any{int64(0), int64(1 << 53)}, err: errAny},
		{name: "ticket below -1", reply: []any{int64(0), int64(-2)}, err: errAny},
		{name: "fenced ticketed", reply: []any{int64(9), int64(3)}, fenced: true, yes: true, fence: 9, tick: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakes{replies: []any{tc.reply}, gates: make([]chan struct{}, 1)}
			r, _ := newRound(t, f)
			req := acquireReq()
			req.Script = scriptOf(tc.fenced, tc.plain)
			v, _ := r.Poll(context.Background(), req)
			var err error
			if v.Errs != nil {
				err = v.Errs[0]
			}
			switch {
			case (v.Yes == 1) != tc.yes:
				t.Errorf("reply %v counted yes %v; want %v", tc.reply, v.Yes == 1, tc.yes)
			case tc.err == nil && err != nil, tc.err == errAny && err == nil, tc.err == errRestarted && !errors.Is(err, errRestarted):
				t.Errorf("reply %v: failure %v; want %v", tc.reply, err, tc.err)
			case v.Ticket != tc.tick:
				t.Errorf("reply %v: ticket %d; want %d", tc.reply, v.Ticket, tc.tick)
			case tc.fenced && v.Fences[0] != tc.fence:
				t.Errorf("reply %v: fence %d; want %d", tc.reply, v.Fences[0], tc.fence)
			}
		})
	}
}

var errAny = errors.New("any error")

// scriptOf returns a script whose reply has the shape asked for: an
// acquire's pair, with a counter when fenced, or a plain reply.
func scriptOf(fenced, plain bool) *driver.Script {
	switch {
	case plain:
		return script.Extend
	case fenced:
		return script.FencedAcquire
	}
	return script.Acquire
}

// TestInTime checks that a quorum counts only within the validity.
func TestInTime(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name  string
		yes   int
		start time.Time
		ok    bool
	}{
		{"quorum within validity", 3, now, true},
		{"quorum after validity", 3, now.Add(-2 * time.Hour), false},
		{"no quorum", 2, now, false},
	} {
		v := Vote{Yes: tc.yes}
		until, ok := v.InTime(3, time.Hour, tc.start)
		if ok != tc.ok || !until.Equal(tc.start.Add(time.Hour)) {
			t.Errorf("%s: InTime = %v, %v; want %v, %v", tc.name, until, ok, tc.start.Add(time.Hour), tc.ok)
		}
	}
}

// TestEach checks that Each gives every node's raw reply, or its failure
// wrapped as Poll wraps it, and that a node that never answers ends with
// the request's timeout rather than holding Each up.
func TestEach(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	down := errors.New("down")
	hang := make(chan struct{})
	defer close(hang)
	f := &fakes{
		replies: []any{[]any{int64(5), int64(7)}, down, int64(1)},
		gates:   []chan struct{}{nil, nil, hang},
	}
	r, _ := newRound(t, f)
	var (
		mu   sync.Mutex
		vals = make([]any, 3)
		errs = make([]error, 3)
	)
	r.Each(context.Background(), &Request{Op: "status", Timeout: timeout}, func(i int, v any, err error) {
		mu.Lock()
		defer mu.Unlock()
		vals[i], errs[i] = v, err
	})
	if got := fmt.Sprint(vals[0]); got != "[5 7]" || errs[0] != nil {
		t.Errorf("node 0: %v, %v; want its reply [5 7]", vals[0], errs[0])
	}
	var ne *nodeErr
	if !errors.As(errs[1], &ne) || ne.node != 1 || !errors.Is(errs[1], down) {
		t.Errorf("node 1: %v; want node 1's failure wrapping %v", errs[1], down)
	}
	if !errors.As(errs[2], &ne) || ne.node != 2 || !errors.Is(errs[2], context.DeadlineExceeded) {
		t.Errorf("node 2, which never answers: %v; want node 2's failure wrapping %v", errs[2], context.DeadlineExceeded)
	}
}

// TestPollEndedContextNeverGrants checks that Poll under a context that
// ended before the call counts no yes, even when every node's grant is
// waiting to be read: a select between ready cases picks either, so the
// end is checked first. Many rounds make a lost race show.
func TestPollEndedContextNeverGrants(t *testing.T) {
	t.Parallel()
	f := &fakes{replies: []any{int64(1), int64(1), int64(1)}, gates: make([]chan struct{}, 3)}
	r, _ := newRound(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 300 {
		v, p := r.Poll(ctx, acquireReq())
		if p != nil {
			p.Wait()
		}
		if v.Yes != 0 || !v.Cut {
			t.Fatalf("round %d under an ended context: %d yes, cut %v; want 0 yes, cut", i, v.Yes, v.Cut)
		}
	}
}

// TestReleaseAttemptTellsRedo checks which nodes ReleaseAttempt tells its
// Redo of: those whose release failed, and those whose acquire failed and
// whose release freed nothing (the acquire may run after it) — not a node
// released, nor one whose acquire failed but whose release freed the key
// (the acquire ran before it), nor one that refused.
func TestReleaseAttemptTellsRedo(t *testing.T) {
	t.Parallel()
	down := errors.New("down")
	f := &fakes{
		// 0 and 1 grant, 2 and 3 fail, 4 refuses.
		replies:  []any{int64(1), int64(1), down, down, int64(0)},
		gates:    make([]chan struct{}, 5),
		releases: []any{int64(1), down, int64(0), int64(1), int64(0)},
	}
	r, pool := newRound(t, f)
	req := acquireReq()
	req.Early = false
	v, p := r.Poll(context.Background(), req)
	var mu sync.Mutex
	var told []string
	redo := func(req *Request, i int, overtaken bool, rep Reply) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, fmt.Sprintf("%d:%v:%v", i, overtaken, rep.Err != nil))
	}
	r.ReleaseAttempt(context.Background(), &Request{Op: "unlock", Want: 1, Timeout: time.Minute}, &v, p, redo)
	pool.Stop()
	slices.Sort(told)
	if want := []string{"1:false:true", "2:true:false"}; !slices.Equal(told, want) {
		t.Errorf("ReleaseAttempt told redo of %v (node:overtaken:failed); want %v", told, want)
	}
}
