package redistest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/resp"
)

// Server is a redis-server child process on a loopback port, owned by one
// test. Its methods are for the goroutine running that test; they fail the
// test when the process does not do as told. Clients may be connected while
// it is killed, paused or restarted: that is what it is for.
type Server struct {
	t       testing.TB
	bin     string
	cfg     serverConfig
	certs   *certs // nil without WithTLS
	logPath string
	port    int
	proc    *os.Process // nil while the server is down
	paused  bool
}

// doTimeout bounds [Server.Do].
const doTimeout = 5 * time.Second

// StartServer starts one redis-server for t and kills it in t.Cleanup. See
// [StartServers].
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	return StartServers(t, 1, opts...)[0]
}

// StartServers starts n redis-server processes at once, each on its own free
// 127.0.0.1 port with no persistence and no configuration file, and returns
// when all of them answer. Each one is killed, and its port released, in
// t.Cleanup, whatever state the test left it in. If one fails to start,
// StartServers fails t with the end of the server's output.
func StartServers(t testing.TB, n int, opts ...ServerOption) []*Server {
	t.Helper()
	if n < 1 {
		t.Fatalf("redistest: StartServers(%d): want at least one server", n)
	}
	var cfg serverConfig
	for _, o := range opts {
		o(&cfg)
	}
	bin := RedisServerPath(t)
	if cfg.sentinelConf != "" {
		bin = sentinelPath(bin)
	}
	var cs *certs
	if cfg.tls {
		var err error
		if cs, err = makeCerts(t.TempDir()); err != nil {
			t.Fatalf("redistest: TLS certificates: %v", err)
		}
	}
	servers := make([]*Server, n)
	for i := range servers {
		s := &Server{t: t, bin: bin, cfg: cfg, certs: cs, logPath: filepath.Join(t.TempDir(), "redis.log")}
		t.Cleanup(s.cleanup)
		servers[i] = s
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.startOnFreePort()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redistest: starting %d redis-server(s): %v", n, err)
	}
	return servers
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Port returns the server's port. It stays the same across [Server.Restart].
func (s *Server) Port() int { return s.port }

// Pid returns the process id of the running redis-server, or 0 while it is
// down.
func (s *Server) Pid() int {
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid
}

// TLSConfig returns a client TLS configuration that trusts a server started
// with [WithTLS], or nil for a plain server.
func (s *Server) TLSConfig() *tls.Config {
	if s.certs == nil {
		return nil
	}
	return s.certs.clientConfig()
}

// CAFile returns the path of the PEM certificate authority that signed the
// certificate of a server started with [WithTLS], for a URL's tls_ca_file
// parameter, or "" for a plain server.
func (s *Server) CAFile() string {
	if s.certs == nil {
		return ""
	}
	return s.certs.caFile
}

// Do sends one command over a new connection, authenticated if the server
// was started with --requirepass, and returns the reply normalized as the
// [driver] package documentation describes. It gives up after 5 seconds. It
// is for setting up and checking a test: FLUSHALL, GET, PTTL, CLIENT PAUSE,
// SCRIPT FLUSH.
func (s *Server) Do(args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), doTimeout)
	defer cancel()
	return s.do(ctx, args...)
}

func (s *Server) do(ctx context.Context, args ...string) (any, error) {
	c, err := resp.Dial(ctx, s.clientConfig())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(ctx, args...)
}

// clientConfig describes a connection to the server.
func (s *Server) clientConfig() *driver.Config {
	return &driver.Config{Addr: s.Addr(), Password: s.cfg.password(), TLS: s.TLSConfig()}
}

// Kill ends the server with SIGKILL, as a crash would, and waits until the
// process is gone and its port is free. Its data is lost. Killing a server
// that is down does nothing.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.kill(); err != nil {
		s.t.Fatalf("redistest: kill redis-server on %s: %v", s.Addr(), err)
	}
}

// Restart starts the server again, empty, on the same port, and returns when
// it answers. A running server is killed first.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.kill(); err != nil {
		s.t.Fatalf("redistest: kill redis-server on %s: %v", s.Addr(), err)
	}
	if err := s.startOnPort(); err != nil {
		s.t.Fatalf("redistest: restart redis-server on %s: %v", s.Addr(), err)
	}
}

// Pause stops the server with SIGSTOP and returns once it is stopped: it
// accepts connections but answers nothing, as a stalled machine would, and
// clients see timeouts. Keys whose TTL runs out while it is paused vanish
// right after [Server.Resume].
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.pause(); err != nil {
		s.t.Fatalf("redistest: pause redis-server on %s: %v", s.Addr(), err)
	}
}

// Resume continues a paused server with SIGCONT. Resuming a server that is
// not paused does nothing.
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.resume(); err != nil {
		s.t.Fatalf("redistest: resume redis-server on %s: %v", s.Addr(), err)
	}
}

// Stop shuts the server down gracefully with SIGTERM, or SIGKILL if it does
// not exit within 5 seconds, and waits for it to exit. Stopping a server that
// is down does nothing.
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.stop(); err != nil {
		s.t.Fatalf("redistest: stop redis-server on %s: %v", s.Addr(), err)
	}
}

// cleanup kills the server: a graceful stop waits for Redis's next cron
// tick, up to 100ms, and a test's data is not worth keeping.
func (s *Server) cleanup() {
	if err := s.kill(); err != nil {
		s.t.Errorf("redistest: kill redis-server on %s: %v", s.Addr(), err)
	}
	if s.port != 0 {
		releasePort(s.port)
	}
}
