package rueidis_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	rueidisclient "github.com/redis/rueidis"

	"github.com/dlmgo/redlock/backends/rueidis"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestReplies checks the normalization of Lua replies over RESP3 (the
// default against Redis 7) and RESP2, which must agree.
func TestReplies(t *testing.T) {
	t.Parallel()
	checkNoLeak(t)
	s := redistest.StartServer(t)
	nodes := map[string]driver.Node{
		"RESP3": openURL(t, "redis+rueidis://"+s.Addr()),
		"RESP2": rueidis.NewNode(newClient(t, rueidisclient.ClientOption{
			InitAddress: []string{s.Addr()}, DisableCache: true, AlwaysRESP2: true,
		})),
	}
	for _, n := range nodes {
		defer n.Close()
	}
	for _, tc := range []struct {
		src  string
		want any
	}{
		{"return nil", nil},
		{"return true", int64(1)},
		{"return false", nil},
		{"return 0", int64(0)},
		{"return -7", int64(-7)},
		{"return 3.9", int64(3)}, // Lua numbers are truncated to integers
		{"return ''", ""},
		{"return 'bulk'", "bulk"},
		{"return redis.status_reply('QUEUED')", "QUEUED"},
		{"return redis.call('SET', KEYS[1], 'v')", "OK"},
		{"return redis.call('GET', KEYS[1])", "v"},
		{"return redis.call('GET', KEYS[1]..':missing')", nil},
		{"return redis.call('PEXPIRE', KEYS[1], 60000)", int64(1)},
		{"return {}", []any{}},
		// A Lua array ends at its first nil; false is a value, sent as nil.
		{"return {1, 'two', {3, true}, false, 5}", []any{int64(1), "two", []any{int64(3), int64(1)}, nil, int64(5)}},
		{"return {double=2.5}", "2.5"},
		{"return {map={a=false}}", []any{"a", nil}}, // RESP2 has no map: a flat array
		{"return {set={x=true}}", []any{"x"}},
	} {
		for proto, n := range nodes {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			got, err := n.Eval(ctx, driver.NewScript(tc.src), []string{"dlmtest:reply"}, nil)
			cancel()
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: Eval(%q) = %#v, %v; want %#v, nil", proto, tc.src, got, err, tc.want)
			}
		}
	}
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	checkNoLeak(t)
	s := redistest.StartServer(t)
	n := openURL(t, "redis+rueidis://"+s.Addr())
	defer n.Close()
	for _, tc := range []struct{ src, prefix string }{
		{"return redis.error_reply('ERR plain')", "ERR plain"},
		{"return redis.error_reply('MYCODE custom')", "MYCODE custom"},
		{"return redis.call('INCR', 'a', 'b')", "ERR Wrong number of args"},
		{"return redis.call('HSET', KEYS[1])", "ERR Wrong number of args"},
		{"error('raw lua error')", "ERR user_script:1: raw lua error"},
		{"return redis.call('NOSUCHCOMMAND')", "ERR Unknown Redis command"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := n.Eval(ctx, driver.NewScript(tc.src), []string{"dlmtest:err"}, nil)
		cancel()
		if err == nil || !strings.HasPrefix(err.Error(), tc.prefix) || got != nil {
			t.Errorf("Eval(%q) = %#v, %v; want nil and an error starting with %q", tc.src, got, err, tc.prefix)
		}
		var re *rueidisclient.RedisError
		if !errors.As(err, &re) {
			t.Errorf("Eval(%q) error %T: want a *rueidis.RedisError in its chain", tc.src, err)
		}
	}

	// An error nested in an array is an error element.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := n.Eval(ctx, driver.NewScript("return {1, redis.error_reply('ERR inner')}"), nil, nil)
	arr, _ := got.([]any)
	if err != nil || len(arr) != 2 || arr[0] != int64(1) || fmt.Sprint(arr[1]) != "ERR inner" {
		t.Errorf("Eval(nested error) = %#v, %v; want [1, error(ERR inner)], nil", got, err)
	}
}

// TestNoScriptFallback checks that a script flushed from the server's cache
// is sent again with EVAL.
func TestNoScriptFallback(t *testing.T) {
	t.Parallel()
	checkNoLeak(t)
	s := redistest.StartServer(t)
	n := openURL(t, "redis+rueidis://"+s.Addr())
	defer n.Close()
	sc := driver.NewScript("return 'fallback'")
	for i := 0; i < 3; i++ {
		if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := n.Eval(ctx, sc, nil, nil)
		cancel()
		if err != nil || got != "fallback" {
			t.Fatalf("Eval after SCRIPT FLUSH #%d = %#v, %v; want \"fallback\", nil", i+1, got, err)
		}
		if v, err := s.Do("SCRIPT", "EXISTS", sc.Hash); err != nil || !reflect.DeepEqual(v, []any{int64(1)}) {
			t.Fatalf("SCRIPT EXISTS after the fallback = %#v, %v; want [1]", v, err)
		}
	}
}
