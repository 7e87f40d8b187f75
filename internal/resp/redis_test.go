package resp_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// TestRealRedis makes a round trip of every reply type through a real
// redis-server, with AUTH as a named user and SELECT.
func TestRealRedis(t *testing.T) {
	s := redistest.StartServer(t, redistest.WithArgs("--user", "alice", "on", ">pw", "~*", "+@all"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dial := func(db int) *resp.Conn {
		c, err := resp.Dial(ctx, &driver.Config{Addr: s.Addr(), Username: "alice", Password: "pw", DB: db})
		if err != nil {
			t.Fatalf("Dial as alice, db %d: %v", db, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	db2, db0 := dial(2), dial(0)
	const binary = "a\r\n\x00\xff ключ"
	for _, tc := range []struct {
		c    *resp.Conn
		args []string
		want any
	}{
		{db2, []string{"SET", "k", binary}, "OK"},
		{db2, []string{"GET", "k"}, binary},
		{db0, []string{"GET", "k"}, nil},
		{db2, []string{"ACL", "WHOAMI"}, "alice"},
		{db2, []string{"RPUSH", "l", "x", ""}, int64(2)},
		{db2, []string{"LRANGE", "l", "0", "-1"}, []any{"x", ""}},
		{db2, []string{"LRANGE", "none", "0", "-1"}, []any{}},
		{db2, []string{"EVAL", "return {1, {false, 'y'}, -3}", "0"}, []any{int64(1), []any{nil, "y"}, int64(-3)}},
	} {
		got, err := tc.c.Do(ctx, tc.args...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Do(%q) = %#v, %v; want %#v", tc.args, got, err, tc.want)
		}
	}
	_, err := db2.Do(ctx, "EVALSHA", strings.Repeat("0", 40), "0")
	if !driver.IsNoScript(err) {
		t.Errorf("EVALSHA of an unknown digest = %v; want a NOSCRIPT error", err)
	}
	if v, err := db2.Do(ctx, "PING"); v != "PONG" || err != nil {
		t.Errorf("PING after an error reply = %#v, %v; want PONG", v, err)
	}
}
