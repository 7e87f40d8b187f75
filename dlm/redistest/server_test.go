package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
	"github.com/dlmgo/redlock/internal/resp"
)

func TestStartServers(t *testing.T) {
	t.Parallel()
	servers := redistest.StartServers(t, 3)
	ports, pids := map[int]bool{}, map[int]bool{}
	for _, s := range servers {
		if want := fmt.Sprintf("127.0.0.1:%d", s.Port()); s.Addr() != want {
			t.Errorf("Addr() = %q; want %q", s.Addr(), want)
		}
		if ports[s.Port()] || pids[s.Pid()] || s.Pid() <= 0 {
			t.Errorf("server on port %d, pid %d: want distinct ports and pids", s.Port(), s.Pid())
		}
		ports[s.Port()], pids[s.Pid()] = true, true
		for _, tc := range []struct {
			args []string
			want any
		}{
			{[]string{"PING"}, "PONG"},
			{[]string{"CONFIG", "GET", "save"}, []any{"save", ""}},
			{[]string{"CONFIG", "GET", "appendonly"}, []any{"appendonly", "no"}},
			{[]string{"CONFIG", "GET", "bind"}, []any{"bind", "127.0.0.1"}},
		} {
			if got, err := s.Do(tc.args...); err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: Do(%q) = %#v, %v; want %#v", s.Addr(), tc.args, got, err, tc.want)
			}
		}
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	port, pid := s.Port(), s.Pid()
	node := resp.NewNode(&driver.Config{Addr: s.Addr()})
	defer node.Close()
	if err := node.Ping(context.Background()); err != nil {
		t.Fatalf("Ping before the kill: %v", err)
	}
	mustDo(t, s, "SET", "k", "v")

	s.Kill()
	s.Kill() // a no-op on a server that is down
	if s.Pid() != 0 || processAlive(pid) {
		t.Errorf("after Kill, Pid() = %d and process %d alive = %v; want 0 and gone", s.Pid(), pid, processAlive(pid))
	}
	if _, err := s.Do("PING"); err == nil {
		t.Error("Do(PING) after Kill succeeded")
	}
	l, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Fatalf("port %d not free after Kill: %v", port, err)
	}
	l.Close()

	s.Restart()
	if s.Port() != port || s.Pid() == pid || s.Pid() == 0 {
		t.Errorf("after Restart: port %d, pid %d; want port %d and a new pid", s.Port(), s.Pid(), port)
	}
	if v := mustDo(t, s, "GET", "k"); v != nil {
		t.Errorf("GET k after Restart = %#v; want nil: the server restarts empty", v)
	}
	// The node's pooled connection died with the old process.
	if err := node.Ping(context.Background()); err != nil {
		t.Errorf("Ping through a node connected before the restart: %v", err)
	}

	s.Restart() // kills the running server first
	if v := mustDo(t, s, "PING"); v != "PONG" {
		t.Errorf("PING after a Restart of a running server = %#v", v)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	node := resp.NewNode(&driver.Config{Addr: s.Addr()})
	defer node.Close()
	s.Pause()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := node.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Ping of a paused server = %v; want context.DeadlineExceeded", err)
	}
	s.Resume()
	s.Resume() // a no-op on a running server
	if v := mustDo(t, s, "PING"); v != "PONG" {
		t.Errorf("PING after Resume = %#v", v)
	}
}

// TestCleanup checks that every server is gone once its test ends,
// whatever state the test left it in.
func TestCleanup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		leave func(*redistest.Server)
	}{
		{"running", func(*redistest.Server) {}},
		{"paused", (*redistest.Server).Pause},
		{"killed", (*redistest.Server).Kill},
		{"stopped twice", func(s *redistest.Server) { s.Stop(); s.Stop() }},
		{"restarted", (*redistest.Server).Restart},
	} {
		var pid, port int
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.StartServer(t)
			tc.leave(s)
			pid, port = s.Pid(), s.Port()
		})
		if pid != 0 && processAlive(pid) {
			t.Errorf("%s: process %d still alive after its test ended", tc.name, pid)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("%s: port %d not free after the test ended: %v", tc.name, port, err)
			continue
		}
		l.Close()
	}
}

func TestRequirePass(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t, redistest.WithArgs("--requirepass", "s3cret"))
	if v := mustDo(t, s, "PING"); v != "PONG" {
		t.Errorf("Do(PING) on a server with a password = %#v; want PONG", v)
	}
	for _, tc := range []struct {
		name     string
		password string
		want     string // error prefix, or "" for success
	}{
		{"right password", "s3cret", ""},
		{"no password", "", "NOAUTH"},
		{"wrong password", "wrong", "WRONGPASS"},
	} {
		node := resp.NewNode(&driver.Config{Addr: s.Addr(), Password: tc.password})
		err := node.Ping(context.Background())
		node.Close()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Ping = %v; want %q", tc.name, err, tc.want)
		}
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t, redistest.WithTLS())
	if v := mustDo(t, s, "PING"); v != "PONG" {
		t.Errorf("Do(PING) over TLS = %#v; want PONG", v)
	}
	cfg, err := driver.ParseURL("rediss://" + s.Addr() + "/2?tls_ca_file=" + s.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	node := resp.NewNode(cfg)
	defer node.Close()
	if err := node.Ping(context.Background()); err != nil {
		t.Errorf("Ping over TLS with tls_ca_file: %v", err)
	}
	plain := resp.NewNode(&driver.Config{Addr: s.Addr(), ReadTimeout: time.Second})
	defer plain.Close()
	if err := plain.Ping(context.Background()); err == nil {
		t.Error("Ping without TLS on a TLS-only server succeeded")
	}
}

func TestStartFailureShowsOutput(t *testing.T) {
	t.Parallel()
	ft := &fatalRecorder{TB: t}
	runFatal(func() { redistest.StartServer(ft, redistest.WithArgs("--no-such-option", "1")) })
	if !strings.Contains(ft.msg, "no-such-option") {
		t.Errorf("StartServer with a bad option failed with %q; want redis-server's complaint quoted", ft.msg)
	}
}

func mustDo(t *testing.T, s *redistest.Server, args ...string) any {
	t.Helper()
	v, err := s.Do(args...)
	if err != nil {
		t.Fatalf("Do(%q) on %s: %v", args, s.Addr(), err)
	}
	return v
}

// processAlive reports whether pid names a process, a zombie included.
func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
