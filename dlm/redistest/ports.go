package redistest

import (
	"errors"
	"net"
	"sync"
	"testing"
)

// ports remembers the ports handed to servers of this process, so that two
// servers started at once are not given the same one. Another process can
// still take a port between the pick and redis-server's bind; the caller
// sees the bind fail and picks again.
var ports = struct {
	sync.Mutex
	taken map[int]bool
}{taken: make(map[int]bool)}

// pickPort returns a loopback port that was free a moment ago.
func pickPort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, err
		}
		ports.Lock()
		free := !ports.taken[port]
		ports.taken[port] = true
		ports.Unlock()
		if free {
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port after 100 tries")
}

// releasePort makes port available to later servers.
func releasePort(port int) {
	ports.Lock()
	delete(ports.taken, port)
	ports.Unlock()
}

// UnusedPort returns a loopback port on which nothing listens, for a test
// of what a client does when no server answers. No server of this process
// is given it before t's cleanup; another process still could take it.
func UnusedPort(t testing.TB) int {
	t.Helper()
	port, err := pickPort()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { releasePort(port) })
	return port
}
