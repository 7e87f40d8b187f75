package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Error is an error reply from Redis. Its text is the reply as Redis sent
// it, starting with the error code: "NOSCRIPT No matching script...".
type Error string

func (e Error) Error() string { return string(e) }

// errProtocol is wrapped by the errors for replies that break RESP2.
var errProtocol = errors.New("resp: protocol error")

// maxBulkLen is the largest bulk string Redis sends (proto-max-bulk-len).
const maxBulkLen = 512 << 20

// writeCommand writes args as a RESP array of bulk strings.
func writeCommand(w *bufio.Writer, args []string) error {
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
	return w.Flush()
}

// readReply reads one reply and normalizes it: nil for nil bulk strings and
// nil arrays, int64 for integers, string for bulk strings and status
// replies, []any for arrays, [Error] for error replies. The error result is
// only for I/O failures and protocol violations, after which the stream is
// out of step and the connection must be dropped.
func readReply(r *bufio.Reader) (any, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, fmt.Errorf("%w: empty line", errProtocol)
	}
	switch kind, rest := line[0], line[1:]; kind {
	case '+':
		return rest, nil
	case '-':
		return Error(rest), nil
	case ':':
		return parseInt(rest)
	case '$':
		return readBulk(r, rest)
	case '*':
		return readArray(r, rest)
	default:
		return nil, fmt.Errorf("%w: unexpected reply type %q", errProtocol, kind)
	}
}

// readLine reads up to CRLF and returns the line without it.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) && line != "" {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	line, ok := strings.CutSuffix(line, "\r\n")
	if !ok {
		return "", fmt.Errorf("%w: line not ended by CRLF", errProtocol)
	}
	return line, nil
}

func parseInt(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad integer %q", errProtocol, s)
	}
	return n, nil
}

func readBulk(r *bufio.Reader, header string) (any, error) {
	n, err := parseInt(header)
	switch {
	case err != nil:
		return nil, err
	case n == -1:
		return nil, nil
	case n < 0 || n > maxBulkLen:
		return nil, fmt.Errorf("%w: bulk length %d", errProtocol, n)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return nil, fmt.Errorf("%w: bulk string not ended by CRLF", errProtocol)
	}
	return string(buf[:n]), nil
}

func readArray(r *bufio.Reader, header string) (any, error) {
	n, err := parseInt(header)
	switch {
	case err != nil:
		return nil, err
	case n == -1:
		return nil, nil
	case n < 0:
		return nil, fmt.Errorf("%w: array length %d", errProtocol, n)
	}
	// The length comes from the wire: grow as elements arrive rather than
	// trust it for one allocation.
	elems := make([]any, 0, min(n, 1024))
	for range n {
		v, err := readReply(r)
		if err != nil {
			return nil, err
		}
		elems = append(elems, v)
	}
	return elems, nil
}
