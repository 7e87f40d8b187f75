//go:build !unix

package resp

import "net"

// idleClosed cannot tell on this system; a connection the server closed
// fails its next request.
func idleClosed(net.Conn) bool { return false }
