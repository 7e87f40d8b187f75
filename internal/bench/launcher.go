package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Timing of a server's start.
const (
	startAttempts = 5                      // ports tried when another process takes the picked one
	readyTimeout  = 10 * time.Second       // from exec to the first answer
	probeTimeout  = 500 * time.Millisecond // one readiness check
)

// RedisServerPath returns the redis-server binary to run: bin if not empty,
// else the REDIS_SERVER environment variable, else redis-server from PATH.
func RedisServerPath(bin string) (string, error) {
	if bin == "" {
		bin = os.Getenv("REDIS_SERVER")
	}
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w (install it with `apt-get install redis-server`, or run `make bench`, which does)", err)
	}
	return path, nil
}

// A Cluster is a set of independent redis-server processes on loopback
// ports, with no persistence, owned by this process. Stop kills them; on
// Linux the kernel also kills them if this process dies without stopping
// them, and they run in a process group of their own, so a Ctrl-C in the
// terminal reaches the harness, which stops them, rather than them.
type Cluster struct {
	Servers []*Server
	dir     string // logs
	once    sync.Once
}

// A Server is one redis-server process of a [Cluster].
type Server struct {
	Addr    string // 127.0.0.1:PORT
	Version string // redis_version from INFO
	bin     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has been waited for
}

// StartCluster starts n redis-server processes from bin at once and returns
// when every one answers. If any fails to start, the others are stopped.
func StartCluster(ctx context.Context, bin string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("bench: %d servers: want at least one", n)
	}
	dir, err := os.MkdirTemp("", "lockbench-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, Servers: make([]*Server, n)}
	for i := range c.Servers {
		c.Servers[i] = &Server{bin: bin, logPath: filepath.Join(dir, fmt.Sprintf("redis-%d.log", i))}
	}
	ports := newPortSet()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range c.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.start(ctx, ports)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Stop()
		return nil, fmt.Errorf("bench: starting %d redis-server(s): %w", n, err)
	}
	return c, nil
}

// Addrs returns the servers' addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr
	}
	return out
}

// Stop kills every server, waits until they have exited and removes their
// logs. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		for _, s := range c.Servers {
			s.kill()
		}
		os.RemoveAll(c.dir)
	})
}

// start runs the server on a free port, trying another port when some other
// process binds the picked one first.
func (s *Server) start(ctx context.Context, ports *portSet) error {
	var err error
	for range startAttempts {
		var port int
		if port, err = ports.pick(); err != nil {
			return err
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.launch(ctx, port); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

// errPortInUse is wrapped by a start that failed because the port was taken.
var errPortInUse = errors.New("port in use")

// launch runs redis-server on port and waits until it answers.
func (s *Server) launch(ctx context.Context, port int) error {
	out, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = out, out
	setProcAttr(cmd)
	err = cmd.Start()
	out.Close()
	if err != nil {
		return fmt.Errorf("run %s: %w", s.bin, err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	if err := s.awaitReady(ctx); err != nil {
		s.kill()
		return err
	}
	return nil
}

// awaitReady polls the server until this process answers on its port, it
// exits, or the time is up.
func (s *Server) awaitReady(ctx context.Context) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-s.exited:
			log := s.logTail()
			err := fmt.Errorf("redis-server on %s exited before answering; its output ends:\n%s", s.Addr, log)
			if strings.Contains(log, "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		err := s.probe(ctx)
		if err == nil || errors.Is(err, errPortInUse) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within %v (%v); its output ends:\n%s", s.Addr, readyTimeout, err, s.logTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// probe checks that the server answers and that it is this process that
// answers, rather than another program's server that got the port first.
func (s *Server) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := dialRESP(ctx, s.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := c.do("INFO", "server")
	if err != nil {
		return err
	}
	info, _ := v.(string)
	if !strings.Contains(info, "process_id:"+strconv.Itoa(s.cmd.Process.Pid)+"\r\n") {
		return fmt.Errorf("%w: another process answers on %s", errPortInUse, s.Addr)
	}
	s.Version = infoField(info, "redis_version")
	return nil
}

// infoField returns the value of field in an INFO reply, or "".
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// kill ends the process with SIGKILL, if it runs, and waits until it has
// exited.
func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// logTail returns the end of the server's output.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return err.Error()
	}
	const keep = 2048
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}

// portSet hands out loopback ports that were free a moment ago, never the
// same one twice.
type portSet struct {
	mu    sync.Mutex
	taken map[int]bool
}

func newPortSet() *portSet { return &portSet{taken: make(map[int]bool)} }

func (p *portSet) pick() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		p.mu.Lock()
		free := !p.taken[port]
		p.taken[port] = true
		p.mu.Unlock()
		if free {
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port after 100 tries")
}
