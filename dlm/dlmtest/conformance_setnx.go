package dlmtest

import (
	"context"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// testSetNXGet checks a node that implements [driver.Setter]: a free key is
// set with the TTL and the reply is nil; a held key is left as it is and
// the reply is its value; a key of another type and a done context are
// errors. A node that does not implement it passes.
func testSetNXGet(t *testing.T, nt *nodeTester) {
	st, ok := nt.node.(driver.Setter)
	if !ok {
		t.Logf("%T does not implement driver.Setter; nothing to check", nt.node)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	k, list := nt.key("{setnx}"), nt.key("{setnx}list")
	const state = `return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}`
	if v, err := st.SetNXGet(ctx, k, "first", "60000"); v != nil || err != nil {
		t.Fatalf("SetNXGet of a free key = %s, %v; want nil, nil", show(v), err)
	}
	got, _ := nt.mustEval(t, state, []string{k}, nil).([]any)
	if len(got) != 2 || got[0] != "first" {
		t.Fatalf("GET, PTTL after SetNXGet = %s; want first and its TTL", show(got))
	}
	if ttl, _ := got[1].(int64); ttl <= 0 || ttl > 60000 {
		t.Errorf("PTTL after SetNXGet with 60000 ms = %s; want 1 to 60000", show(got[1]))
	}
	if v, err := st.SetNXGet(ctx, k, "second", "1000"); v != "first" || err != nil {
		t.Errorf("SetNXGet of a held key = %s, %v; want \"first\", nil", show(v), err)
	}
	got, _ = nt.mustEval(t, state, []string{k}, nil).([]any)
	if ttl, _ := got[1].(int64); len(got) != 2 || got[0] != "first" || ttl <= 1000 {
		t.Errorf("GET, PTTL after SetNXGet of a held key = %s; want first with its TTL of 60000 ms, unchanged", show(got))
	}
	nt.mustEval(t, `return redis.call('RPUSH', KEYS[1], 'x')`, []string{list}, nil)
	if v, err := st.SetNXGet(ctx, list, "x", "60000"); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("SetNXGet of a list = %s, %v; want an error starting WRONGTYPE", show(v), err)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if v, err := st.SetNXGet(done, nt.key("{setnx}done"), "x", "60000"); err == nil {
		t.Errorf("SetNXGet with a done context = %s, nil; want its error", show(v))
	}
}
