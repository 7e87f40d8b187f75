package dlmtest

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// replyServer is a TCP server on a loopback port that answers every RESP
// command of every connection with one canned reply: a server in a state
// a real one is hard to put in on demand (loading its data set, a Cluster
// without quorum, at its maxclients).
type replyServer struct {
	l     net.Listener
	reply string
	wg    sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// startReplyServer starts a replyServer answering reply, a whole RESP reply
// ("-LOADING ...\r\n"), and stops it, closing its connections, when t ends.
func startReplyServer(t *testing.T, reply string) *replyServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replyServer{l: l, reply: reply, conns: map[net.Conn]bool{}}
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

// Addr returns the server's host:port.
func (s *replyServer) Addr() string { return s.l.Addr().String() }

func (s *replyServer) accept() {
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

// serve answers each command read from c until c fails or closes.
func (s *replyServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for skipCommand(br) == nil {
		if _, err := io.WriteString(c, s.reply); err != nil {
			return
		}
	}
}

// Bounds on what skipCommand accepts from a client.
const (
	maxCommandArgs = 1 << 10
	maxArgLen      = 1 << 20
)

// skipCommand reads one command: an array of bulk strings, or an inline
// command on one line.
func skipCommand(br *bufio.Reader) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "*") {
		return nil // an inline command
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 || n > maxCommandArgs {
		return io.ErrUnexpectedEOF
	}
	for i := 0; i < n; i++ {
		head, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if !strings.HasPrefix(head, "$") || err != nil || size < 0 || size > maxArgLen {
			return io.ErrUnexpectedEOF
		}
		if _, err := br.Discard(size + 2); err != nil {
			return err
		}
	}
	return nil
}
