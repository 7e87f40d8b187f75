// Package hostile is a fake Redis node for the backends' tests of what a
// node's replies can do to the client: it greets a client as a RESP2
// server does, and answers every script call (EVAL, EVALSHA) and every
// SUBSCRIBE with a reply header chosen by the test, then sends nothing more.
package hostile

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Start starts a node on a loopback port that answers scripts and
// subscriptions with header (such as "$100000000\r\n") and stops it when t
// ends. It returns the node's host:port.
func Start(t testing.TB, header string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c, header)
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// serve answers the commands of c until it closes.
func serve(c net.Conn, header string) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		name, err := command(br)
		if err != nil {
			return
		}
		reply := "+OK\r\n"
		switch name {
		case "HELLO": // RESP2 only, as Redis before 6
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			reply = "+PONG\r\n"
		case "EVAL", "EVALSHA", "SUBSCRIBE", "SSUBSCRIBE":
			reply = header
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// command reads one command, an array of bulk strings, and returns its
// name in upper case.
func command(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if !strings.HasPrefix(line, "*") || err != nil || n < 1 || n > 1<<10 {
		return "", io.ErrUnexpectedEOF
	}
	var name string
	for i := 0; i < n; i++ {
		head, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
		if !strings.HasPrefix(head, "$") || err != nil || size < 0 || size > 1<<20 {
			return "", io.ErrUnexpectedEOF
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(br, arg); err != nil {
			return "", err
		}
		if i == 0 {
			name = strings.ToUpper(string(arg[:size]))
		}
	}
	return name, nil
}
