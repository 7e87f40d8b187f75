package redistest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Timing of the process life cycle.
const (
	startAttempts = 5                      // ports tried when others take the picked one
	readyTimeout  = 10 * time.Second       // from exec to the first answer
	probeTimeout  = 500 * time.Millisecond // one readiness check
	rebindTimeout = 2 * time.Second        // Restart waiting for its port
	stopTimeout   = 5 * time.Second        // SIGTERM before SIGKILL
	tailBytes     = 4096                   // output shown when a start fails
)

// errPortInUse is wrapped by a start that failed because the port was taken.
var errPortInUse = errors.New("port in use")

// startOnFreePort picks a port and starts the server on it, picking another
// when some other process binds it first.
func (s *Server) startOnFreePort() error {
	var err error
	for range startAttempts {
		if s.port, err = pickPort(); err != nil {
			return err
		}
		if err = s.launch(); !errors.Is(err, errPortInUse) {
			return err
		}
	}
	return err
}

// startOnPort starts the server on its port again. A client socket may hold
// the port as its local end for a moment after a kill, so a taken port is
// retried for a while.
func (s *Server) startOnPort() error {
	deadline := time.Now().Add(rebindTimeout)
	for {
		err := s.launch()
		if !errors.Is(err, errPortInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// launch runs redis-server on s.port and waits until it answers.
func (s *Server) launch() error {
	out, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	logStart, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		out.Close()
		return err
	}
	// The child writes straight to the file: no copying goroutine to wait for.
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Stdout, cmd.Stderr = out, out
	dieWithParent(cmd)
	err = cmd.Start()
	out.Close()
	if err != nil {
		return fmt.Errorf("run %s: %w", s.bin, err)
	}
	s.proc = cmd.Process
	if err := s.awaitReady(logStart); err != nil {
		return errors.Join(err, s.kill())
	}
	return nil
}

// args is the redis-server command line: no configuration file, no
// persistence, loopback only, then the caller's arguments.
func (s *Server) args() []string {
	args := []string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no",
	}
	if s.certs != nil {
		args = append(args, s.certs.serverArgs(s.port)...)
	}
	if s.cfg.cluster {
		args = append(args, clusterArgs(filepath.Dir(s.logPath))...)
	}
	if s.cfg.sentinelConf != "" {
		// The configuration file comes first; Sentinel rewrites it.
		args = append([]string{s.cfg.sentinelConf, "--sentinel"}, args...)
	}
	return append(args, s.cfg.args...)
}

// awaitReady polls the server until it answers as itself, or exits.
func (s *Server) awaitReady(logStart int64) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ws, err := s.wait(syscall.WNOHANG)
		if err != nil {
			return err
		}
		if s.proc == nil {
			out := s.tail(logStart)
			err := fmt.Errorf("redis-server on port %d exited (%v) before answering; its output ends:\n%s", s.port, ws, out)
			if strings.Contains(out, "Address already in use") {
				return fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		err = s.probe()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d did not answer within %v (%v); its output ends:\n%s",
				s.port, readyTimeout, err, s.tail(logStart))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// probe checks that the server answers, and that it is this process
// answering rather than another process's server that got the port first.
func (s *Server) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	v, err := s.do(ctx, "INFO", "server")
	if err != nil {
		return err
	}
	if info, _ := v.(string); !strings.Contains(info, "process_id:"+strconv.Itoa(s.proc.Pid)+"\r\n") {
		return fmt.Errorf("%w: another redis-server answers on port %d", errPortInUse, s.port)
	}
	return nil
}

// tail returns the end of what the server wrote since offset from.
func (s *Server) tail(from int64) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if end, err := f.Seek(0, io.SeekEnd); err == nil && end-from > tailBytes {
		from = end - tailBytes
	}
	b, err := io.ReadAll(io.NewSectionReader(f, from, tailBytes))
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// wait reports a change of the process's state, as wait4(2) with options
// does, and forgets the process once it has exited.
func (s *Server) wait(options int) (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	for {
		pid, err := syscall.Wait4(s.proc.Pid, &ws, options, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return ws, fmt.Errorf("wait4 %d: %w", s.proc.Pid, err)
		}
		if pid != 0 && (ws.Exited() || ws.Signaled()) {
			s.proc.Release()
			s.proc, s.paused = nil, false
		}
		return ws, nil
	}
}

func (s *Server) signal(sig os.Signal) error {
	if err := s.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%v to %d: %w", sig, s.proc.Pid, err)
	}
	return nil
}

func (s *Server) kill() error {
	if s.proc == nil {
		return nil
	}
	if err := s.signal(syscall.SIGKILL); err != nil {
		return err
	}
	for s.proc != nil {
		if _, err := s.wait(0); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) stop() error {
	if s.proc == nil {
		return nil
	}
	// A stopped process cannot act on SIGTERM.
	if err := s.resume(); err != nil {
		return err
	}
	if err := s.signal(syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(stopTimeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, err := s.wait(syscall.WNOHANG); err != nil || s.proc == nil {
			return err
		}
	}
	return s.kill()
}

func (s *Server) pause() error {
	if s.proc == nil {
		return errors.New("the server is down")
	}
	if s.paused {
		return nil
	}
	if err := s.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	// SIGSTOP takes effect when the process next runs; wait for it.
	for {
		ws, err := s.wait(syscall.WUNTRACED)
		if err != nil {
			return err
		}
		if s.proc == nil {
			return fmt.Errorf("the server exited (%v) instead of stopping", ws)
		}
		if ws.Stopped() {
			s.paused = true
			return nil
		}
	}
}

// resume sends SIGCONT, which takes effect at once, to a paused server.
func (s *Server) resume() error {
	if s.proc == nil || !s.paused {
		return nil
	}
	if err := s.signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.paused = false
	return nil
}
