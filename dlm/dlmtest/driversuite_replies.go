package dlmtest

import (
	"context"
	"errors"
	"github.com/dlmgo/redlock/dlm/redistest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// driverReplyCases are scripts and the normalized replies package driver
// documents for them. wantErr is the start of an error reply's message.
//
// A RESP3 false that a script sends after redis.setresp(3) is not among
// them: Redis sends it to a RESP2 connection as 0, to a RESP3 one as a
// boolean, which a driver may read as nil.
var driverReplyCases = []struct {
	src     string
	want    any
	wantErr string
}{
	{src: "return nil", want: nil},
	{src: "return false", want: nil},
	{src: "return true", want: int64(1)},
	{src: "return 42", want: int64(42)},
	{src: "return -7", want: int64(-7)},
	{src: "return 3.9", want: int64(3)},
	{src: "return 'bulk'", want: "bulk"},
	{src: "return ''", want: ""},
	{src: "return ARGV[1]", want: "arg"},
	{src: "return KEYS[1]", want: "{k}1"},
	{src: "return redis.status_reply('FINE')", want: "FINE"},
	{src: "return redis.call('SET', KEYS[1], 'v')", want: "OK"},
	{src: "return redis.call('GET', 'missing')", want: nil},
	{src: "return {}", want: []any{}},
	{src: "return {1, 'two', {3, {}}}", want: []any{int64(1), "two", []any{int64(3), []any{}}}},
	{src: "return {1, false, 'x'}", want: []any{int64(1), nil, "x"}},
	{src: "return {1, nil, 3}", want: []any{int64(1)}}, // Lua stops at nil
	{src: "return redis.error_reply('MYERR custom')", wantErr: "MYERR custom"},
	{src: "return {err = 'NOPE no'}", wantErr: "NOPE no"},
	{src: "return redis.call('INCR', 'notanumber-' .. KEYS[1])", wantErr: "ERR"},
	{src: "return redis.call('NOSUCHCOMMAND')", wantErr: "ERR"},
	// RESP3 replies read as RESP2 would have sent them.
	{src: "redis.setresp(3); return {map = {a = 1}}", want: []any{"a", int64(1)}},
	{src: "redis.setresp(3); return {double = 3.5}", want: "3.5"},
	{src: "redis.setresp(3); return true", want: int64(1)},
	{src: "redis.setresp(3); return nil", want: nil},
}

func (d driverSuite) testReplies(t *testing.T) {
	s := redistest.StartServer(t)
	if _, err := s.Do("SET", "notanumber-{k}1", "x"); err != nil {
		t.Fatal(err)
	}
	n := d.open(t, d.plain+s.Addr())
	for _, tc := range driverReplyCases {
		v, err := evalSource(n, tc.src, []string{"{k}1"}, []string{"arg"})
		if tc.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
				t.Errorf("Eval(%q) = %#v, %v; want an error starting %q", tc.src, v, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(v, tc.want) {
			t.Errorf("Eval(%q) = %#v, %v; want %#v, nil", tc.src, v, err, tc.want)
		}
	}
}

func (d driverSuite) testNestedErrorReply(t *testing.T) {
	s := redistest.StartServer(t)
	n := d.open(t, d.plain+s.Addr())
	src := "return {1, redis.error_reply('INNER trouble')}"
	v, err := evalSource(n, src, nil, nil)
	a, ok := v.([]any)
	if err != nil || !ok || len(a) != 2 || a[0] != int64(1) {
		t.Fatalf("Eval(%q) = %#v, %v; want [1, error]", src, v, err)
	}
	if e, ok := a[1].(error); !ok || e.Error() != "INNER trouble" {
		t.Errorf("Eval(%q)[1] = %#v; want an error INNER trouble", src, a[1])
	}
}

func (d driverSuite) testNoScriptFallback(t *testing.T) {
	s := redistest.StartServer(t)
	n := d.open(t, d.plain+s.Addr())
	script := driver.NewScript("return 'cached'")
	for i := 0; i < 3; i++ {
		if i == 2 {
			if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := evalSource(n, script.Source, nil, nil); v != "cached" || err != nil {
			t.Fatalf("Eval #%d = %v, %v; want cached, nil", i, v, err)
		}
		if v, err := s.Do("SCRIPT", "EXISTS", script.Hash); err != nil || !reflect.DeepEqual(v, []any{int64(1)}) {
			t.Fatalf("SCRIPT EXISTS after Eval #%d = %v, %v; want [1]", i, v, err)
		}
	}
}

// Timing of the driver suite's calls on a paused server: how soon the
// context ends, and how much later than it a call may return. A paused
// server never answers, so a call that returns at all before the node's
// read timeout (pausedReadTimeout) returned at its context's end; the
// slack is generous, for a loaded machine, and far below that timeout.
const (
	pausedGiveUp      = 100 * time.Millisecond
	pausedSlack       = 5 * time.Second
	pausedReadTimeout = "30s"
)

func (d driverSuite) testContextDone(t *testing.T) {
	s := redistest.StartServer(t)
	n := d.open(t, d.plain+s.Addr()+"?read_timeout="+pausedReadTimeout+"&write_timeout="+pausedReadTimeout)
	script := driver.NewScript(echoScript)
	if v, err := evalSource(n, echoScript, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}

	t.Run("AlreadyDone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := n.Eval(ctx, script, nil, []string{"x"}); !errors.Is(err, context.Canceled) {
			t.Errorf("Eval with a cancelled context = %v; want context.Canceled", err)
		}
		if p, ok := n.(driver.Pinger); ok {
			if err := p.Ping(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("Ping with a cancelled context = %v; want context.Canceled", err)
			}
		}
	})

	s.Pause()
	defer s.Resume()
	t.Run("Deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), pausedGiveUp)
		defer cancel()
		start := time.Now()
		_, err := n.Eval(ctx, script, nil, []string{"x"})
		if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || el > pausedGiveUp+pausedSlack {
			t.Errorf("Eval on a paused server with a %v deadline = %v after %v; want context.DeadlineExceeded", pausedGiveUp, err, el)
		}
	})
	t.Run("CancelBeforeDeadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		time.AfterFunc(pausedGiveUp, cancel)
		start := time.Now()
		_, err := n.Eval(ctx, script, nil, []string{"x"})
		if el := time.Since(start); !errors.Is(err, context.Canceled) || el > pausedGiveUp+pausedSlack {
			t.Errorf("Eval on a paused server cancelled after %v = %v after %v; want context.Canceled", pausedGiveUp, err, el)
		}
	})
}

// testLateReplyNotReused checks that a connection whose request timed out is
// not reused: its late reply must not answer the next request.
func (d driverSuite) testLateReplyNotReused(t *testing.T) {
	s := redistest.StartServer(t)
	n := d.open(t, d.plain+s.Addr()+"?pool_size=1")
	script := driver.NewScript(echoScript)
	if v, err := evalSource(n, echoScript, nil, []string{"warm"}); v != "warm" || err != nil {
		t.Fatalf("Eval = %v, %v; want warm, nil", v, err)
	}
	s.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), pausedGiveUp)
	_, err := n.Eval(ctx, script, nil, []string{"late"})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Eval on a paused server = %v; want context.DeadlineExceeded", err)
	}
	s.Resume()
	for i := 0; i < 3; i++ {
		if v, err := evalSource(n, echoScript, nil, []string{"fresh"}); v != "fresh" || err != nil {
			t.Errorf("Eval #%d after Resume = %v, %v; want fresh, nil", i, v, err)
		}
	}
}
