package adapterkit

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/dlmgo/redlock/dlm/driver"
)

// The client libraries allocate what a reply's header announces before the
// payload arrives: go-redis and redigo a []byte of the bulk length or a
// []any of the array length, rueidis and valkey-go a []byte or a
// []RedisMessage (40 bytes each). A node that answers "*10000000000\r\n" or
// "$1000000000000\r\n", fifteen bytes, ends the process with "fatal error:
// runtime: out of memory", which no recover catches. A connection a backend
// dials for a node opened from a URL therefore reads through
// [LimitReplies], which parses the RESP2 and RESP3 headers as they pass (the
// payloads only counted, never copied) and fails the connection before a
// header that would take a reply past the node's limit reaches the library.
//
// A client the user built and wraps (NewNode of each backend) is left as it
// is: it may be the program's own client, with replies of its own.

// ErrReplyLimit is wrapped by the error a connection guarded by
// [LimitReplies] returns, and the client library with it, when a reply
// announces more than the node's reply limit; check it with errors.Is.
var ErrReplyLimit = errors.New("reply over the node's reply limit (reply_limit)")

// errMalformedReply is wrapped by the error of a guarded connection whose
// server sent what is not RESP: the library would fail on it too, but a
// guard that cannot follow the stream cannot vouch for what comes next.
var errMalformedReply = errors.New("malformed reply")

const (
	// elementCost is what one element of an array, map (each key and
	// each value), set, push or attribute counts against the limit: more
	// than any of the four libraries allocates for it on the header.
	elementCost = 64
	// maxReplyDepth bounds the nesting of aggregates in one reply. The
	// libraries parse nested replies by recursion; no server reply nests
	// more than a few levels.
	maxReplyDepth = 256
	// maxLimit caps a limit so that no sum of costs overflows.
	maxLimit = 1 << 50
)

// ReplyLimit returns the reply limit of a node made from cfg, in bytes, or
// 0 for none: [driver.Config.ReplyLimit], with 0 meaning
// [driver.DefaultReplyLimit] and a negative value none.
func ReplyLimit(cfg *driver.Config) int64 {
	switch {
	case cfg.ReplyLimit < 0:
		return 0
	case cfg.ReplyLimit == 0:
		return driver.DefaultReplyLimit
	}
	return min(cfg.ReplyLimit, maxLimit)
}

// LimitReplies returns nc guarded by limit, in bytes, or nc itself when
// limit is 0: what one reply (a top-level reply with its attributes and
// nested elements, or a push) announces, counted as its header, line and
// bulk bytes plus 64 bytes per aggregate element, may not pass limit; nor
// may its aggregates nest more than 256 deep. The connection's Read returns
// the bytes before the header that would pass it, then an error that wraps
// [ErrReplyLimit], and the same error for good: the library sees a broken
// connection, never the header. Bytes that are not RESP (an unknown type, a
// malformed length, a streamed "?" length, which Redis never sends) fail it
// likewise. Writes pass untouched. The guarded connection keeps nc's
// [syscall.Conn], which go-redis and redigo look at to check idle
// connections.
//
// Read parses the stream in order, so it must not be called by two
// goroutines at once; no client library does so.
func LimitReplies(nc net.Conn, limit int64) net.Conn {
	if limit <= 0 {
		return nc
	}
	g := &guardedConn{Conn: nc, p: replyParser{limit: min(limit, maxLimit)}}
	if sc, ok := nc.(syscall.Conn); ok {
		return &guardedSyscallConn{g, sc}
	}
	return g
}

// guardedConn is a connection whose reads pass a [replyParser].
type guardedConn struct {
	net.Conn
	p   replyParser
	err error // for good, once the parser refused the stream
}

func (c *guardedConn) Read(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		if ok, perr := c.p.feed(b[:n]); perr != nil {
			c.err = perr
			return ok, perr
		}
	}
	return n, err
}

// guardedSyscallConn is a guardedConn over a connection with a socket.
type guardedSyscallConn struct {
	*guardedConn
	sc syscall.Conn
}

func (c *guardedSyscallConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// Parser states: what the next byte is.
const (
	stType     = iota // the type byte of an element
	stLength          // a length's sign or digits, up to its CR
	stLengthLF        // the LF after a length
	stLine            // a simple element's line, up to its LF
	stPayload         // a bulk payload and its CRLF, counted in left
)

// frame is an aggregate being read.
type frame struct {
	left int64 // elements still to come
	attr bool  // an attribute, which is no element of its parent
}

// replyParser follows a RESP2/RESP3 reply stream header by header.
type replyParser struct {
	limit int64
	used  int64 // counted for the reply being read
	state int
	typ   byte  // type of the element being read
	neg   bool  // the length has a minus sign
	len   int64 // the length's digits so far; in stPayload, bytes left
	dig   bool  // the length has a digit
	stack []frame
}

// feed parses b, the next bytes of the stream. It returns len(b) and nil,
// or the number of bytes that may reach the library, those before the byte
// that gave the stream away, and the error.
func (p *replyParser) feed(b []byte) (int, error) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch p.state {
		case stPayload:
			// Skipped whole; its length was counted with its header.
			skip := min(int64(len(b)-i), p.len)
			p.len -= skip
			i += int(skip) - 1
			if p.len == 0 {
				p.state = stType
				p.elementDone()
			}
			continue
		case stType:
			p.typ = c
			switch c {
			case '+', '-', ':', ',', '(', '#', '_':
				p.state = stLine
			case '$', '=', '!', '*', '~', '>', '%', '|':
				p.state, p.neg, p.len, p.dig = stLength, false, 0, false
			default:
				return i, p.malformed("unknown reply type %q", c)
			}
		case stLine:
			if c == '\n' {
				p.state = stType
				p.elementDone()
				continue
			}
		case stLength:
			switch {
			case '0' <= c && c <= '9':
				p.len = p.len*10 + int64(c-'0')
				p.dig = true
				if p.neg && p.len > 1 {
					return i, p.malformed("length below -1")
				}
				if !p.neg && p.used+p.cost(p.len) > p.limit {
					return i, p.over()
				}
			case c == '-' && !p.neg && !p.dig:
				p.neg = true
			case c == '\r' && p.dig:
				p.state = stLengthLF
			case c == '?' && !p.neg && !p.dig:
				return i, p.malformed("streamed reply (length ?)")
			default:
				return i, p.malformed("bad length byte %q", c)
			}
		case stLengthLF:
			if c != '\n' {
				return i, p.malformed("length not ended by CRLF")
			}
			if err := p.header(); err != nil {
				return i, err
			}
			continue
		}
		// Every byte of a header or line counts.
		if p.used++; p.used > p.limit {
			return i, p.over()
		}
	}
	return len(b), nil
}

// cost is what a header of p.typ announcing n counts.
func (p *replyParser) cost(n int64) int64 {
	switch p.typ {
	case '$', '=', '!':
		return n
	case '%', '|':
		return 2 * n * elementCost
	}
	return n * elementCost
}

// header ends a length header, whose CRLF has just passed.
func (p *replyParser) header() error {
	p.state = stType
	if p.neg && p.len == 1 { // -1: a null bulk string or array
		p.elementDone()
		return nil
	}
	p.used += p.cost(p.len)
	switch p.typ {
	case '$', '=', '!':
		p.state, p.len = stPayload, p.len+2
		return nil
	}
	n := p.len
	if p.typ == '%' || p.typ == '|' {
		n *= 2
	}
	switch {
	case n > 0 && len(p.stack) == maxReplyDepth:
		return fmt.Errorf("%w: aggregates nested more than %d deep", ErrReplyLimit, maxReplyDepth)
	case n > 0:
		p.stack = append(p.stack, frame{left: n, attr: p.typ == '|'})
	case p.typ != '|': // an empty aggregate is a whole element
		p.elementDone()
	}
	return nil
}

// elementDone ends an element: it counts against the aggregate it is in,
// which it may end in turn. An element that ends at the top is a whole
// reply, whose count starts again, unless it was an attribute, which
// belongs with the reply that follows it.
func (p *replyParser) elementDone() {
	for len(p.stack) > 0 {
		top := &p.stack[len(p.stack)-1]
		if top.left--; top.left > 0 {
			return
		}
		attr := top.attr
		p.stack = p.stack[:len(p.stack)-1]
		if attr {
			return
		}
	}
	p.used = 0
}

func (p *replyParser) over() error {
	what := "a reply"
	switch p.typ {
	case '$', '=', '!':
		what = "a string"
	case '*', '~', '>', '%', '|':
		what = "an aggregate"
	}
	if p.state == stLength {
		return fmt.Errorf("%w: %s announcing %d would take the reply past %d bytes", ErrReplyLimit, what, p.len, p.limit)
	}
	return fmt.Errorf("%w: a reply longer than %d bytes", ErrReplyLimit, p.limit)
}

func (p *replyParser) malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformedReply, fmt.Sprintf(format, args...))
}
