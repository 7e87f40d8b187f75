package script_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

// scriptCommands returns the commands a node ran since its stats were
// reset, but for the script's own EVAL or EVALSHA, sorted: what the script
// called (INFO commandstats counts the calls of scripts).
func scriptCommands(t *testing.T, s *redistest.Server) []string {
	t.Helper()
	v, err := s.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := v.(string)
	var out []string
	for _, line := range strings.Split(info, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, ":")
		switch cmd, _, _ := strings.Cut(name, "|"); cmd {
		case "eval", "evalsha", "config", "info", "script":
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// TestLightPath runs the mutex's scripts on a redis-server where nothing
// but the lock key is there, and where a line, an intent or a mark of
// listeners is, and requires the commands each called: a release that
// finds nothing beside the key to serve is a lookup (EXISTS of what may be
// beside it, PUBSUB NUMSUB of its broadcast channel) and a
// compare-and-delete (GET, then DEL where the key holds the secret), and a
// fair acquire of a free key with no line is a lookup of the line (ZCARD)
// and a SET; neither reads the clock or scans a line.
func TestLightPath(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	cfg, err := driver.ParseURL("redis://" + s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	loud := script.Flag{Mode: script.Loud}.Arg()
	keys := append([]string{lk}, script.LinesOf([]string{lk})...)
	ws := script.LineKeys(lk)[0]
	rel := func(id, how string) []string { return []string{"s1", id, "0", life, reserve, how, loud} }
	acq := func(id, fair string) []string { return []string{"s1", ttl, id, life, "5", bound, fair, loud} }
	tests := []struct {
		name   string
		setup  [][]string
		script *driver.Script
		args   []string
		want   []string // the commands called, sorted
		reply  any
	}{
		{"release, nothing beside", [][]string{{"SET", lk, "s1", "PX", ttl}}, script.Release, rel("", script.ReleaseLock), []string{"del", "exists", "get", "pubsub|numsub"}, int64(1)},
		{"release of a waiter's lock, nothing beside", [][]string{{"SET", lk, "s1", "PX", ttl}}, script.Release, rel(w1, script.ReleaseLock), []string{"del", "exists", "get", "pubsub|numsub"}, int64(1)},
		{"release, another's key", [][]string{{"SET", lk, "s2", "PX", ttl}}, script.Release, rel("", script.ReleaseLock), []string{"exists", "get", "pubsub|numsub"}, int64(0)},
		{"failed attempt's release, nothing beside", [][]string{{"SET", lk, "s1", "PX", ttl}}, script.Release, rel("", script.ReleaseAttempt), []string{"del", "exists", "get", "pubsub|numsub"}, int64(1)},
		{"release, a line", [][]string{{"SET", lk, "s1", "PX", ttl}, {"ZADD", ws, "1", w2}}, script.Release, rel("", script.ReleaseLock), nil, int64(1)},
		{"release, listeners marked", [][]string{{"SET", lk, "s1", "PX", ttl}, {"SET", script.ListenKey(lk), "1", "PX", ttl}}, script.Release, rel("", script.ReleaseLock), nil, int64(1)},
		{"release, an intent", [][]string{{"SET", lk, "s1", "PX", ttl}, {"SET", script.IntentKey(lk), "1", "PX", ttl}}, script.Release, rel("", script.ReleaseLock), nil, int64(1)},
		{"fair acquire, free, no line", nil, script.Acquire, acq(w1, "1"), []string{"get", "set", "zcard"}, []any{int64(1), int64(0)}},
		{"acquire, free", nil, script.Acquire, acq(w1, "0"), []string{"get", "set"}, []any{int64(1), int64(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.Do("FLUSHALL"); err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.setup {
				if _, err := s.Do(c...); err != nil {
					t.Fatal(err)
				}
			}
			// Loaded before the stats are reset, so that a NOSCRIPT's
			// fallback does not count.
			if _, err := s.Do("SCRIPT", "LOAD", tt.script.Source); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Do("CONFIG", "RESETSTAT"); err != nil {
				t.Fatal(err)
			}
			got, err := n.Eval(ctx, tt.script, keys, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !equalReply(got, tt.reply) {
				t.Errorf("reply %#v; want %#v", got, tt.reply)
			}
			cmds := scriptCommands(t, s)
			if tt.want == nil {
				// The full way: it reads the line or the clock, or
				// announces the release.
				if !slices.Contains(cmds, "zrange") && !slices.Contains(cmds, "time") && !slices.Contains(cmds, "publish") {
					t.Errorf("commands %q; want the full release (zrange, time or publish)", cmds)
				}
				return
			}
			if !slices.Equal(cmds, tt.want) {
				t.Errorf("commands %q; want %q", cmds, tt.want)
			}
		})
	}
}

// equalReply compares two replies of integers and arrays of them.
func equalReply(a, b any) bool {
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok {
		return slices.EqualFunc(as, bs, equalReply)
	}
	return a == b
}

// TestReleaseWithoutExists runs the release as a user whose ACL was written
// for an earlier release, without +exists: the lookup fails, and the
// release takes the full way, which frees the key all the same.
func TestReleaseWithoutExists(t *testing.T) {
	t.Parallel()
	rules := "resetkeys ~redlock:* resetchannels &redlock:* -@all +evalsha +eval +get +set +del +pexpire +pttl +time +zadd +zrem +zrange +zrangebyscore +zscore +zcard +publish +pubsub|numsub"
	s := redistest.StartServer(t, redistest.WithACLFile(t, "user old on >pw-old "+rules))
	cfg, err := driver.ParseURL("redis://old:pw-old@" + s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	n := resp.NewNode(cfg)
	t.Cleanup(func() { n.Close() })
	ctx := context.Background()
	if _, err := s.Do("SET", lk, "s1", "PX", ttl); err != nil {
		t.Fatal(err)
	}
	keys := append([]string{lk}, script.LinesOf([]string{lk})...)
	got, err := n.Eval(ctx, script.Release, keys, []string{"s1", "", "0", life, reserve, script.ReleaseLock, script.Flag{Mode: script.Loud}.Arg()})
	if err != nil || got != int64(1) {
		t.Fatalf("Release = %v, %v; want 1, nil", got, err)
	}
	if v, err := s.Do("EXISTS", lk); err != nil || v != int64(0) {
		t.Errorf("EXISTS %s = %v, %v after the release; want 0", lk, v, err)
	}
}
