package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// respConn is a minimal RESP2 connection for the harness's own needs:
// checking that a server is up, reading INFO, loading a script, and the
// pipelined physical-limit measurement. It is not safe for concurrent use.
type respConn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

// dialRESP connects to addr within ctx.
func dialRESP(ctx context.Context, addr string) (*respConn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return &respConn{c: c, r: bufio.NewReaderSize(c, 64<<10), w: bufio.NewWriterSize(c, 64<<10)}, nil
}

// Close closes the connection.
func (c *respConn) Close() error { return c.c.Close() }

// setDeadline bounds the following reads and writes; the zero time removes
// the bound.
func (c *respConn) setDeadline(t time.Time) error { return c.c.SetDeadline(t) }

// do sends one command and reads its reply: string for simple and bulk
// strings, int64, nil, []any, or an error for an error reply.
func (c *respConn) do(args ...string) (any, error) {
	c.w.Write(appendCommand(nil, args...))
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	return c.read()
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// errProtocol is wrapped by replies the harness cannot parse.
var errProtocol = errors.New("RESP protocol error")

// redisError is an error reply.
type redisError string

func (e redisError) Error() string { return string(e) }

// read reads one reply.
func (c *respConn) read() (any, error) {
	line, err := c.line()
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, fmt.Errorf("%w: empty line", errProtocol)
	}
	body := string(line[1:])
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, redisError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := readFull(c.r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = c.read(); err != nil {
				var re redisError
				if !errors.As(err, &re) {
					return nil, err
				}
				out[i] = re
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unexpected %q", errProtocol, line)
}

// line reads one CRLF-terminated line and returns it without the CRLF. The
// slice is valid until the next read.
func (c *respConn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q", errProtocol, line)
	}
	return line[:len(line)-2], nil
}

func readFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
