//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// hostileText is what a hostile node, or a tamperer on a plaintext link,
// answers: escape sequences that clear the screen, set the window title,
// colour the text; a bell, a backspace, DEL, a carriage return that
// rewrites the line, a tab that breaks a table's columns; the C1 control
// CSI, as a character and as a raw byte; a bidirectional override. It
// holds no line feed, which would end a RESP line.
const hostileText = "FAKE \x1b[2J\x1b[H\x1b]0;owned\x07\x1b[31mred\x1b[0m \a\b\x7f \rOVER\ttab \u009b31m \x9b31m \u202egnp.exe"

// hostileNode is a RESP server on a loopback port that does just enough for
// a client to connect (PING, HELLO refused as by Redis 5, CLIENT, SELECT)
// and answers every script with script(args).
type hostileNode struct {
	l      net.Listener
	script func(args []string) string
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startHostileNode(t *testing.T, script func(args []string) string) *hostileNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hostileNode{l: l, script: script, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *hostileNode) addr() string { return s.l.Addr().String() }

func (s *hostileNode) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *hostileNode) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for {
		cmd, err := readCommand(br)
		if err != nil {
			return
		}
		var reply string
		switch strings.ToUpper(cmd[0]) {
		case "PING":
			reply = "+PONG\r\n"
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "CLIENT", "SELECT", "AUTH":
			reply = "+OK\r\n"
		case "EVALSHA", "EVAL":
			reply = s.script(cmd[1:])
		default:
			reply = "-ERR unknown command '" + cmd[0] + "'\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one command, an array of bulk strings, with bounds.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if !strings.HasPrefix(line, "*") || err != nil || n < 1 || n > 1024 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	cmd := make([]string, n)
	for i := range cmd {
		head, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if !strings.HasPrefix(head, "$") || err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("not a bulk string: %q", head)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		cmd[i] = string(b[:size])
	}
	return cmd, nil
}

// bulk is s as a RESP bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// wantPrintable fails t if out holds a character that does not print,
// other than a line feed, and unless it holds each of shown.
func wantPrintable(t *testing.T, what, out string, shown ...string) {
	t.Helper()
	if !isPrintable(strings.ReplaceAll(out, "\n", "")) {
		t.Errorf("%s writes characters a terminal acts on:\n%q", what, out)
	}
	for _, s := range shown {
		if !strings.Contains(out, s) {
			t.Errorf("%s does not show %s:\n%s", what, s, out)
		}
	}
}

// TestCLINoControlCharsFromNodes runs redlock on three nodes that answer
// every script with text full of escape sequences and control characters
// — as errors for "redlock status", as the leader's value for "redlock
// elect --observe" — at each log format and level, each node by a backend
// of its own. Nothing redlock writes, on stdout or stderr, as a table,
// JSON or log records, holds a character that does not print but the line
// feeds; and the node's text is still shown, escaped.
func TestCLINoControlCharsFromNodes(t *testing.T) {
	t.Parallel()
	nodes := func(script func([]string) string) string {
		var urls []string
		for _, scheme := range []string{"redis+goredis", "redis+redigo", "redis+valkey"} {
			urls = append(urls, scheme+"://"+startHostileNode(t, script).addr())
		}
		return strings.Join(urls, ",")
	}
	// The nodes answer at once; a redis-server of the test's own measures
	// how slowly the machine does.
	measurePaceThrough(t, redistest.StartServer(t))
	failing := nodes(func([]string) string { return "-ERR " + hostileText + "\r\n" })
	leading := nodes(func(args []string) string {
		// script.Leader's reply: the holder's digest, its PTTL, its value.
		return "*3\r\n" + bulk(strings.Repeat("ab", 20)) + ":60000\r\n" + bulk(hostileText)
	})
	for _, format := range []string{"text", "json"} {
		for _, level := range []string{"debug", "warn"} {
			// A node that times out shows no text: the node timeout is
			// at least a second, stretched to the pace.
			opts := []string{"--log-format", format, "--log-level", level, "--node-timeout", nodeTimeout(t, time.Second).String()}
			t.Run("status/"+format+"/"+level, func(t *testing.T) {
				code, stdout, stderr := redlockRun(t, nil, append(append([]string{"status", "--nodes", failing}, opts...), "k")...)
				if code != 69 {
					t.Errorf("status on three failing nodes = %d; want 69\nstderr:\n%s", code, stderr)
				}
				wantPrintable(t, "status' table", stdout, `\x1b[2J`, `\u009b31m`, `\x9b31m`, `\u202e`)
				wantPrintable(t, "status' log", stderr, "FAKE")
				code, stdout, stderr = redlockRun(t, nil, append(append([]string{"status", "--json", "--nodes", failing}, opts...), "k")...)
				if code != 69 {
					t.Errorf("status --json on three failing nodes = %d; want 69\nstderr:\n%s", code, stderr)
				}
				wantPrintable(t, "status --json", stdout, `\u001b[2J`, `\u009b31m`, `\u202e`)
				wantPrintable(t, "status --json's log", stderr, "FAKE")
			})
			t.Run("run/"+format+"/"+level, func(t *testing.T) {
				code, stdout, stderr := redlockRun(t, nil, runArgs("k", []string{"true"}, append([]string{"--nodes", failing, "--no-wait"}, opts...)...)...)
				if code != 69 {
					t.Errorf("run on three failing nodes = %d; want 69\nstderr:\n%s", code, stderr)
				}
				wantPrintable(t, "run's stdout", stdout)
				wantPrintable(t, "run's log", stderr, "FAKE")
			})
		}
		t.Run("elect --observe/"+format, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				args := []string{"elect", "--observe", "--nodes", leading, "--log-format", format, "--log-level", "debug"}
				if asJSON {
					args = append(args, "--json")
				}
				p := startRedlock(t, nil, append(args, "e")...)
				waitFor(t, "the leader to be printed", func() bool { return strings.Contains(p.stdout.String(), "\n") })
				p.signal(syscall.SIGTERM)
				p.wait()
				wantPrintable(t, fmt.Sprintf("elect --observe (--json %v)", asJSON), p.stdout.String(), `u202egnp.exe`)
				wantPrintable(t, fmt.Sprintf("elect --observe's log (--json %v)", asJSON), p.stderr.String())
			}
		})
	}
}
