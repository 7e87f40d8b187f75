package dlmtest

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// binary is a string no text protocol would pass through unharmed.
const binary = "a b\r\n\x00\xff\xfe\tключ 🔒\x00"

func testReplies(t *testing.T, nt *nodeTester) {
	for _, tc := range []struct {
		name string
		src  string
		keys []string // names under the test's prefix
		args []string
		want any
	}{
		{name: "integer", src: `return 42`, want: int64(42)},
		{name: "negative integer", src: `return -7`, want: int64(-7)},
		{name: "large integer", src: `return 4611686018427387904`, want: int64(1 << 62)},
		{name: "large negative integer", src: `return -4611686018427387904`, want: int64(-1 << 62)},
		{name: "integer from redis.call", src: `return redis.call('INCRBY', KEYS[1], '5000000000')`,
			keys: []string{"counter"}, want: int64(5000000000)},
		{name: "Lua number truncated", src: `return 3.99`, want: int64(3)},
		{name: "Lua true", src: `return true`, want: int64(1)},
		{name: "Lua false", src: `return false`, want: nil},
		{name: "Lua nil", src: `return nil`, want: nil},
		{name: "missing key", src: `return redis.call('GET', KEYS[1])`, keys: []string{"missing"}, want: nil},
		{name: "bulk string", src: `return 'hello world'`, want: "hello world"},
		{name: "empty bulk string", src: `return ''`, want: ""},
		{name: "bulk string with NUL", src: `return 'a\0b'`, want: "a\x00b"},
		{name: "binary bulk string", src: `return ARGV[1]`, args: []string{binary}, want: binary},
		{name: "long bulk string", src: `return string.rep('x', 1048576)`, want: strings.Repeat("x", 1<<20)},
		{name: "status table", src: `return {ok='OK'}`, want: "OK"},
		{name: "status_reply", src: `return redis.status_reply('QUEUED')`, want: "QUEUED"},
		{name: "status from redis.call", src: `return redis.call('SET', KEYS[1], 'v')`, keys: []string{"set"}, want: "OK"},
		{name: "array", src: `return {1, 'two', 3}`, want: []any{int64(1), "two", int64(3)}},
		{name: "nested arrays", src: `return {1, {'a', {'b', {}}}, {}}`,
			want: []any{int64(1), []any{"a", []any{"b", []any{}}}, []any{}}},
		{name: "false inside array", src: `return {1, false, 3}`, want: []any{int64(1), nil, int64(3)}},
		{name: "empty array", src: `return {}`, want: []any{}},
		{name: "array from redis.call", src: `redis.call('RPUSH', KEYS[1], 'a', 'b'); return redis.call('LRANGE', KEYS[1], 0, -1)`,
			keys: []string{"list"}, want: []any{"a", "b"}},
		{name: "empty array from redis.call", src: `return redis.call('LRANGE', KEYS[1], 0, -1)`,
			keys: []string{"nolist"}, want: []any{}},
	} {
		keys := make([]string, len(tc.keys))
		for i, k := range tc.keys {
			keys[i] = nt.key(k)
		}
		got, err := nt.eval(tc.src, keys, tc.args)
		if err != nil {
			t.Errorf("%s: Eval(%q) error: %v", tc.name, tc.src, err)
			continue
		}
		if !sameReply(got, tc.want) {
			t.Errorf("%s: Eval(%q) = %s; want %s", tc.name, tc.src, show(got), show(tc.want))
		}
	}
}

func testKeysAndArgs(t *testing.T, nt *nodeTester) {
	var manyKeys, manyArgs []string
	for i := range 20 {
		manyKeys = append(manyKeys, nt.prefix+fmt.Sprintf("k%02d", i))
	}
	for i := range 100 {
		manyArgs = append(manyArgs, fmt.Sprintf("arg-%03d", i))
	}
	for _, tc := range []struct {
		name       string
		keys, args []string
	}{
		{"none", nil, nil},
		{"keys only", []string{nt.prefix + "a", nt.prefix + "b"}, nil},
		{"args only", nil, []string{"x", "y"}},
		{"empty strings", []string{nt.prefix}, []string{"", "x", ""}},
		{"binary", []string{nt.prefix + binary}, []string{"\x00", "\r\n", " ", "ключ 🔒", "\xff\xfe", binary}},
		{"many, in order", manyKeys, manyArgs},
	} {
		got, err := nt.eval(`return {KEYS, ARGV}`, tc.keys, tc.args)
		want := []any{strings2any(tc.keys), strings2any(tc.args)}
		if err != nil || !sameReply(got, want) {
			t.Errorf("%s: Eval(return {KEYS, ARGV}, %q, %q) = %s, %v; want %s", tc.name, tc.keys, tc.args, show(got), err, show(want))
		}
	}
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func testNoScriptFallback(t *testing.T, nt *nodeTester) {
	src := uniqueScript(`return ARGV[1]`)
	for _, call := range []string{"first call, not cached: EVALSHA, NOSCRIPT, EVAL", "second call, cached"} {
		if got, err := nt.eval(src, nil, []string{call}); err != nil || got != call {
			t.Errorf("%s: Eval = %s, %v; want %q, nil", call, show(got), err, call)
		}
	}
	// Many goroutines meeting NOSCRIPT for the same script at once.
	src = uniqueScript(`return ARGV[1]`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := strconv.Itoa(i)
			if got, err := nt.eval(src, nil, []string{want}); err != nil || got != want {
				t.Errorf("concurrent first calls: Eval = %s, %v; want %q, nil", show(got), err, want)
			}
		}()
	}
	wg.Wait()
}

// succeeded returns how many calls of cmd that did not fail (as EVALSHA of
// an uncached script fails) the server counted, from INFO commandstats.
// Before Redis 7 the stats do not count failures; a failed call counts.
func succeeded(info, cmd string) int {
	for _, line := range strings.Split(info, "\r\n") {
		stats, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		n := 0
		for _, field := range strings.Split(stats, ",") {
			name, value, _ := strings.Cut(field, "=")
			v, _ := strconv.Atoi(value)
			switch name {
			case "calls":
				n += v
			case "failed_calls":
				n -= v
			}
		}
		return n
	}
	return 0
}

func testEvalShaFirst(t *testing.T, nt *nodeTester) {
	stats := uniqueScript(`return redis.call('INFO', 'commandstats')`)
	target := uniqueScript(`return 1`)
	count := func() (evalsha, eval int) {
		info, _ := nt.mustEval(t, stats, nil, nil).(string)
		return succeeded(info, "evalsha"), succeeded(info, "eval")
	}
	count()
	nt.mustEval(t, target, nil, nil)
	shaBefore, evalBefore := count()
	const runs = 5
	for range runs {
		nt.mustEval(t, target, nil, nil)
	}
	shaAfter, evalAfter := count()
	// The last count is an EVALSHA of a cached script too; other clients of
	// the server can only add calls.
	if d := shaAfter - shaBefore; d < runs+1 {
		t.Errorf("%d Evals of a cached script and one of INFO: the server counted %d EVALSHA that ran and %d EVAL; "+
			"want at least %d EVALSHA: Eval must send EVALSHA with Script.Hash first, and EVAL only on NOSCRIPT",
			runs, d, evalAfter-evalBefore, runs+1)
	}
}

func testErrorReplies(t *testing.T, nt *nodeTester) {
	for _, tc := range []struct {
		name, src, wantPrefix string
	}{
		{"error_reply", `return redis.error_reply('MYERR boom')`, "MYERR boom"},
		{"error table", `return {err='MYERR table'}`, "MYERR table"},
		{"failed redis.call", `redis.call('SET', KEYS[1], 'text'); return redis.call('INCR', KEYS[1])`, "ERR "},
		{"wrong type", `redis.call('SET', KEYS[1], 'text'); return redis.call('LPUSH', KEYS[1], 'x')`, "WRONGTYPE "},
		{"Lua error()", `error('plain')`, "ERR "},
		{"compile error, after NOSCRIPT", `return +`, "ERR "},
	} {
		v, err := nt.eval(uniqueScript(tc.src), []string{nt.key(tc.name)}, nil)
		switch {
		case err == nil:
			t.Errorf("%s: Eval(%q) = %s, nil; want an error", tc.name, tc.src, show(v))
		case driver.IsNoScript(err):
			t.Errorf("%s: Eval(%q) error %q; want the script's own error, after the EVAL fallback", tc.name, tc.src, err)
		case !strings.HasPrefix(err.Error(), tc.wantPrefix):
			t.Errorf("%s: Eval(%q) error %q; want a message starting with %q, the Redis error code", tc.name, tc.src, err, tc.wantPrefix)
		}
	}
	nt.checkUsable(t, "error replies")
}
