package resp

import (
	"bufio"
	"net"
	"sync"
	"testing"
)

// fakeServer speaks just enough RESP to test a Conn: it reads commands and
// answers the i-th command of each connection with replies[i], and the rest
// with silence.
type fakeServer struct {
	l       net.Listener
	replies []string
	wg      sync.WaitGroup

	mu      sync.Mutex
	conns   []net.Conn
	cmds    [][]string
	stopped bool // set by the cleanup: a connection accepted after it is closed at once
}

func startFake(t *testing.T, replies ...string) *fakeServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{l: l, replies: replies}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		s.closeConns()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) addr() string { return s.l.Addr().String() }

func (s *fakeServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		// A client's dial completes before Accept returns: a connection
		// may come out of Accept after the cleanup closed every other one,
		// and must not leave its serve waiting for a read forever.
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			c.Close()
			continue
		}
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *fakeServer) serve(c net.Conn) {
	defer s.wg.Done()
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		v, err := readReply(br)
		if err != nil {
			return
		}
		var cmd []string
		for _, a := range v.([]any) {
			cmd = append(cmd, a.(string))
		}
		s.mu.Lock()
		s.cmds = append(s.cmds, cmd)
		s.mu.Unlock()
		if i < len(s.replies) {
			if _, err := c.Write([]byte(s.replies[i])); err != nil {
				return
			}
		}
	}
}

// closeConns closes the server's end of every connection.
func (s *fakeServer) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// commands returns the commands received so far, from all connections.
func (s *fakeServer) commands() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.cmds...)
}
