package bench

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClusterStartsAndStops(t *testing.T) {
	bin, err := RedisServerPath("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := StartCluster(ctx, bin, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if a := c.Addrs(); len(a) != 2 || a[0] == a[1] {
		t.Fatalf("Addrs() = %v, want two distinct addresses", a)
	}
	var pids []int
	for _, s := range c.Servers {
		if s.Version == "" {
			t.Errorf("%s reported no version", s.Addr)
		}
		conn, err := dialRESP(ctx, s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := conn.do("CONFIG", "GET", "appendonly")
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := v.([]any); len(got) != 2 || got[1] != "no" {
			t.Errorf("%s: CONFIG GET appendonly = %v, want no", s.Addr, v)
		}
		pids = append(pids, s.cmd.Process.Pid)
	}
	c.Stop()
	c.Stop() // a second Stop does nothing
	for _, pid := range pids {
		// The process has been waited for, so its pid is gone.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis-server %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
}

func TestRedisServerPathMissing(t *testing.T) {
	if _, err := RedisServerPath("/nonexistent/redis-server"); err == nil {
		t.Error("RedisServerPath found a binary that does not exist")
	}
	t.Setenv("REDIS_SERVER", os.DevNull+"/nope")
	if _, err := RedisServerPath(""); err == nil {
		t.Error("RedisServerPath accepted a REDIS_SERVER that does not exist")
	}
}
