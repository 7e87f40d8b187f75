package dlmtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// runIDLiar is a RESP proxy on a loopback port in front of a real
// redis-server, the upstream, that answers package dlm's question of which
// server it is (script.ServerID, by EVALSHA or EVAL) with runID, another
// server's run_id, as a hostile node, or a tamperer on a plaintext link,
// may. Every other command goes upstream, byte for byte, and its reply
// comes back, when serve is set: the node is a working server that lies
// about its identity. Without serve, only the connection's own commands
// (HELLO, AUTH, PING, CLIENT, SELECT, ...) go upstream, so that every
// client library connects, and every other command is refused with an
// error reply: the node serves no lock, only the lie.
type runIDLiar struct {
	l        net.Listener
	upstream string
	runID    string
	serve    bool
	wg       sync.WaitGroup
	// lied counts the run_id questions answered with runID.
	lied atomic.Int32

	mu    sync.Mutex
	conns map[net.Conn]bool
}

// startRunIDLiar starts a runIDLiar in front of the server at upstream
// (host:port) and stops it, closing its connections, when t ends.
func startRunIDLiar(t *testing.T, upstream, runID string, serve bool) *runIDLiar {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &runIDLiar{l: l, upstream: upstream, runID: runID, serve: serve, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.conns = nil // a connection accepted from now on is closed at once
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Addr returns the proxy's host:port.
func (p *runIDLiar) Addr() string { return p.l.Addr().String() }

func (p *runIDLiar) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			continue
		}
		p.wg.Add(1)
		go p.serveConn(c, up)
	}
}

// track records a client connection and its upstream, to close them at
// the end; it reports false, closing both, once the listener is closed.
func (p *runIDLiar) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

// connCommands are the commands a client library sends to set up a
// connection, which the proxy passes on even without serve.
var connCommands = map[string]bool{
	"HELLO": true, "AUTH": true, "PING": true, "CLIENT": true, "SELECT": true,
	"ECHO": true, "READONLY": true, "QUIT": true, "RESET": true, "COMMAND": true,
}

// serveConn answers the commands of client c, one at a time, until either
// side closes. A subscription gets the raw link both ways, since its
// replies do not follow its commands one for one.
func (p *runIDLiar) serveConn(c, up net.Conn) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, up)
		p.mu.Unlock()
		c.Close()
		up.Close()
	}()
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	for {
		args, raw, err := readCommand(cr)
		if err != nil {
			return
		}
		name := ""
		if len(args) > 0 {
			name = strings.ToUpper(args[0])
		}
		var reply []byte
		switch {
		case asksServerID(name, args):
			p.lied.Add(1)
			reply = fmt.Appendf(nil, "$%d\r\n%s\r\n", len(p.runID), p.runID)
		case !p.serve && !connCommands[name]:
			reply = []byte("-ERR this node serves no locks\r\n")
		case strings.HasSuffix(name, "SUBSCRIBE"):
			if _, err := up.Write(raw); err != nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				io.Copy(c, ur)
				c.Close()
			}()
			io.Copy(up, cr)
			return
		default:
			if _, err := up.Write(raw); err != nil {
				return
			}
			if reply, err = readRawReply(ur); err != nil {
				return
			}
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// asksServerID reports whether the command name with args runs
// script.ServerID.
func asksServerID(name string, args []string) bool {
	switch {
	case len(args) < 2:
		return false
	case name == "EVALSHA" || name == "EVALSHA_RO":
		return strings.EqualFold(args[1], script.ServerID.Hash)
	case name == "EVAL" || name == "EVAL_RO":
		return args[1] == script.ServerID.Source
	}
	return false
}

// readCommand reads one command, an array of bulk strings or an inline
// command, within the bounds of skipCommand, and returns its arguments and
// its bytes as read.
func readCommand(br *bufio.Reader) (args []string, raw []byte, err error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, nil, err
	}
	raw = []byte(line)
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), raw, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 || n > maxCommandArgs {
		return nil, nil, io.ErrUnexpectedEOF
	}
	for range n {
		head, err := br.ReadString('\n')
		if err != nil {
			return nil, nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if !strings.HasPrefix(head, "$") || err != nil || size < 0 || size > maxArgLen {
			return nil, nil, io.ErrUnexpectedEOF
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(br, arg); err != nil {
			return nil, nil, err
		}
		raw = append(append(raw, head...), arg...)
		args = append(args, string(arg[:size]))
	}
	return args, raw, nil
}

// readRawReply reads one RESP2 or RESP3 reply and returns its bytes.
func readRawReply(br *bufio.Reader) ([]byte, error) {
	var out bytes.Buffer
	if err := copyReply(br, &out, 0); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// copyReply copies one reply from br to out, aggregates to a bounded
// depth.
func copyReply(br *bufio.Reader, out *bytes.Buffer, depth int) error {
	if depth > 16 {
		return io.ErrUnexpectedEOF
	}
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	out.WriteString(line)
	if len(line) < 3 {
		return io.ErrUnexpectedEOF
	}
	n, nerr := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '!', '=':
		if nerr != nil || n > maxArgLen {
			return io.ErrUnexpectedEOF
		}
		if n < 0 {
			return nil
		}
		_, err := io.CopyN(out, br, int64(n)+2)
		return err
	case '*', '~', '>', '%', '|':
		if nerr != nil || n > maxCommandArgs {
			return io.ErrUnexpectedEOF
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if err := copyReply(br, out, depth+1); err != nil {
				return err
			}
		}
		if line[0] == '|' { // attributes come before the reply they describe
			return copyReply(br, out, depth+1)
		}
		return nil
	}
	return io.ErrUnexpectedEOF
}
