package dlmtest

import (
	"errors"
	"net"
	"sync"
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
