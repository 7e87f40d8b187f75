package redigo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/dlmtest"
	"github.com/dlmgo/redlock/dlm/driver"
)

// replyCases are scripts and the normalized replies package driver
// documents for them. wantErr is the start of an error reply's message.
var replyCases = []struct {
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
	// Redis sends a RESP3 false to a RESP2 client as 0; a plain Lua false
	// (without setresp) is nil in both protocols.
	{src: "redis.setresp(3); return false", want: int64(0)},
	{src: "redis.setresp(3); return nil", want: nil},
}

func TestReplies(t *testing.T) {
	s := dlmtest.StartServer(t)
	if _, err := s.Do("SET", "notanumber-{k}1", "x"); err != nil {
		t.Fatal(err)
	}
	n := openNode(t, "redis+redigo://"+s.Addr())
	for _, tc := range replyCases {
		v, err := eval(n, tc.src, []string{"{k}1"}, []string{"arg"})
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

func TestNestedErrorReply(t *testing.T) {
	s := dlmtest.StartServer(t)
	n := openNode(t, "redis+redigo://"+s.Addr())
	src := "return {1, redis.error_reply('INNER trouble')}"
	v, err := eval(n, src, nil, nil)
	a, ok := v.([]any)
	if err != nil || !ok || len(a) != 2 || a[0] != int64(1) {
		t.Fatalf("Eval(%q) = %#v, %v; want [1, error]", src, v, err)
	}
	if e, ok := a[1].(error); !ok || e.Error() != "INNER trouble" {
		t.Errorf("Eval(%q)[1] = %#v; want an error INNER trouble", src, a[1])
	}
}

func TestNoScriptFallback(t *testing.T) {
	s := dlmtest.StartServer(t)
	n := openNode(t, "redis+redigo://"+s.Addr())
	script := driver.NewScript("return 'cached'")
	for i := 0; i < 3; i++ {
		if i == 2 {
			if _, err := s.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		if v, err := eval(n, script.Source, nil, nil); v != "cached" || err != nil {
			t.Fatalf("Eval #%d = %v, %v; want cached, nil", i, v, err)
		}
		if v, err := s.Do("SCRIPT", "EXISTS", script.Hash); err != nil || !reflect.DeepEqual(v, []any{int64(1)}) {
			t.Fatalf("SCRIPT EXISTS after Eval #%d = %v, %v; want [1]", i, v, err)
		}
	}
}
