package adapterkit

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/dlmgo/redlock/dlm/driver"
)

// chunkConn is a connection whose reads return chunks, one per Read, then
// io.EOF.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(b []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(b, c.chunks[0])
	if c.chunks[0] = c.chunks[0][n:]; len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// readGuarded reads chunks through a connection guarded by limit and
// returns what reached the reader and the error that ended it (nil for
// io.EOF).
func readGuarded(limit int64, chunks ...[]byte) ([]byte, error) {
	c := LimitReplies(&chunkConn{chunks: chunks}, limit)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, nil
		}
		if err != nil {
			// The error is for good.
			if n2, err2 := c.Read(buf); n2 != 0 || err2 != err {
				return got, errors.New("a second Read after the error returned something else")
			}
			return got, err
		}
	}
}

// splits returns b whole, in two pieces at every byte boundary, and one
// byte at a time.
func splits(b []byte) [][][]byte {
	out := [][][]byte{{b}}
	for i := 1; i < len(b); i++ {
		out = append(out, [][]byte{b[:i:i], b[i:]})
	}
	bytewise := make([][]byte, len(b))
	for i := range b {
		bytewise[i] = b[i : i+1 : i+1]
	}
	return append(out, bytewise)
}

func TestLimitReplies(t *testing.T) {
	t.Parallel()
	const limit = 1000
	for _, tc := range []struct {
		name, stream string
		// want is "" for a stream that passes whole, else the start of
		// the error; passed is then how many bytes reach the reader.
		want   string
		passed int
	}{
		// Every RESP2 and RESP3 type, within the limit.
		{"simple string", "+OK\r\n", "", 0},
		{"error", "-ERR no\r\n", "", 0},
		{"integer", ":-42\r\n", "", 0},
		{"bulk", "$5\r\nhello\r\n", "", 0},
		{"empty bulk", "$0\r\n\r\n", "", 0},
		{"minus zero bulk", "$-0\r\n\r\n+OK\r\n", "", 0},
		{"null bulk", "$-1\r\n", "", 0},
		{"null array", "*-1\r\n", "", 0},
		{"array", "*3\r\n:1\r\n$1\r\na\r\n+b\r\n", "", 0},
		{"empty array", "*0\r\n+OK\r\n", "", 0},
		{"null", "_\r\n", "", 0},
		{"boolean", "#t\r\n", "", 0},
		{"double", ",3.14\r\n", "", 0},
		{"big number", "(3492890328409238509324850943850943825024385\r\n", "", 0},
		{"verbatim", "=15\r\ntxt:Some string\r\n", "", 0},
		{"blob error", "!21\r\nSYNTAX invalid syntax\r\n", "", 0},
		{"map", "%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n:1\r\n:2\r\n", "", 0},
		{"set", "~2\r\n+a\r\n+b\r\n", "", 0},
		{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n", "", 0},
		{"attribute", "|1\r\n+key\r\n+v\r\n*2\r\n:1\r\n:2\r\n", "", 0},
		{"nested attribute", "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n", "", 0},
		{"empty attribute", "|0\r\n+OK\r\n", "", 0},
		{"nested", "*2\r\n*2\r\n%1\r\n+a\r\n~1\r\n:1\r\n$1\r\nx\r\n>1\r\n+p\r\n", "", 0},
		{"pipelined replies", strings.Repeat("*2\r\n$300\r\n"+strings.Repeat("x", 300)+"\r\n:1\r\n", 10), "", 0},
		{"bulk payload that looks like headers", "$12\r\n*99999999\r\n\r\n", "", 0},

		// Headers over the limit: the reader gets what came before the
		// digit that passed it, never the header's CRLF.
		{"huge array", "*10000000000\r\n", "reply over the node's reply limit", 3},
		{"huge bulk", "$1000000000000\r\n", "reply over the node's reply limit", 4},
		{"bulk one byte over", "$999\r\n", "reply over the node's reply limit", 3},
		{"huge map", "%8\r\n", "reply over the node's reply limit", 1},
		{"huge set", "~16\r\n", "reply over the node's reply limit", 2},
		{"huge push", ">16\r\n", "reply over the node's reply limit", 2},
		{"huge attribute", "|8\r\n", "reply over the node's reply limit", 1},
		{"huge verbatim", "=1001\r\n", "reply over the node's reply limit", 4},
		{"huge blob error", "!1001\r\n", "reply over the node's reply limit", 4},
		{"after a good reply", "+OK\r\n$9999\r\n", "reply over the node's reply limit", 8},
		{"overflowing digits", "$99999999999999999999999999999\r\n", "reply over the node's reply limit", 3},
		{"leading zeros past the limit", "$" + strings.Repeat("0", 1000) + "1\r\n", "reply over the node's reply limit", 1000},
		// Counts add up over one reply's elements, nested or not.
		{"elements add up", "*2\r\n$500\r\n" + strings.Repeat("x", 500) + "\r\n$400\r\n", "reply over the node's reply limit", 515},
		{"nested aggregates add up", "*1\r\n*7\r\n*8\r\n", "reply over the node's reply limit", 9},
		{"attribute counts with its reply", "|4\r\n+a\r\n+b\r\n+c\r\n+d\r\n+e\r\n+f\r\n+g\r\n+h\r\n*8\r\n", "reply over the node's reply limit", 37},
		{"long line", "+" + strings.Repeat("a", 2000) + "\r\n", "reply over the node's reply limit", 1000},

		// What is not RESP.
		{"unknown type", "@1\r\n", "malformed reply: unknown reply type '@'", 0},
		{"length below -1", "$-2\r\n", "malformed reply: length below -1", 2},
		{"huge negative length", "*-99999999999999999999\r\n", "malformed reply: length below -1", 2},
		{"two signs", "$--1\r\n", "malformed reply: bad length byte", 2},
		{"sign after a digit", "$1-\r\n", "malformed reply: bad length byte", 2},
		{"empty length", "$\r\n", "malformed reply: bad length byte", 1},
		{"no LF", "$1\rx", "malformed reply: length not ended by CRLF", 3},
		{"plus sign", "*+1\r\n", "malformed reply: bad length byte", 1},
		{"streamed string", "$?\r\n;4\r\nHell\r\n;0\r\n", "malformed reply: streamed reply", 1},
		{"streamed array", "*?\r\n:1\r\n.\r\n", "malformed reply: streamed reply", 1},
		{"inline text", "OK\r\n", "malformed reply: unknown reply type 'O'", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunks := range splits([]byte(tc.stream)) {
				got, err := readGuarded(limit, chunks...)
				switch {
				case tc.want == "" && (err != nil || string(got) != tc.stream):
					t.Fatalf("read in %d chunks: %q, %v; want %q, nil", len(chunks), got, err, tc.stream)
				case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
					t.Fatalf("read in %d chunks: error %v; want one starting %q", len(chunks), err, tc.want)
				case tc.want != "" && string(got) != tc.stream[:tc.passed]:
					t.Fatalf("read in %d chunks: %q reached the reader; want %q", len(chunks), got, tc.stream[:tc.passed])
				}
			}
		})
	}
}

// TestLimitRepliesResetsPerReply checks that the count starts again with
// each reply: a stream of replies each near the limit passes.
func TestLimitRepliesResetsPerReply(t *testing.T) {
	t.Parallel()
	one := "*2\r\n$800\r\n" + strings.Repeat("x", 800) + "\r\n:1\r\n"
	stream := strings.Repeat(one, 100)
	got, err := readGuarded(1000, []byte(stream))
	if err != nil || string(got) != stream {
		t.Fatalf("100 replies of %d bytes each under a limit of 1000: %d bytes, %v; want all, nil", len(one), len(got), err)
	}
}

// TestLimitRepliesDepth checks that aggregates may nest 256 deep and no
// deeper, whatever the limit.
func TestLimitRepliesDepth(t *testing.T) {
	t.Parallel()
	deepest := strings.Repeat("*1\r\n", maxReplyDepth) + ":1\r\n"
	if got, err := readGuarded(1<<20, []byte(deepest)); err != nil || string(got) != deepest {
		t.Errorf("%d nested arrays: %d bytes, %v; want all, nil", maxReplyDepth, len(got), err)
	}
	deeper := strings.Repeat("*1\r\n", maxReplyDepth+1)
	got, err := readGuarded(1<<20, []byte(deeper))
	if want := 4*maxReplyDepth + 3; !errors.Is(err, ErrReplyLimit) || len(got) != want {
		t.Errorf("%d nested arrays: %d bytes, %v; want %d bytes, ErrReplyLimit", maxReplyDepth+1, len(got), err, want)
	}
}

func TestLimitRepliesErrors(t *testing.T) {
	t.Parallel()
	_, err := readGuarded(1000, []byte("*10000000000\r\n"))
	if !errors.Is(err, ErrReplyLimit) {
		t.Errorf("errors.Is(%v, ErrReplyLimit) = false; want true", err)
	}
	if want := "an aggregate announcing 100 would take the reply past 1000 bytes"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q; want it to say %q", err, want)
	}
	_, err = readGuarded(1000, []byte("@"))
	if errors.Is(err, ErrReplyLimit) || !errors.Is(err, errMalformedReply) {
		t.Errorf("error %v for an unknown type; want errMalformedReply, not ErrReplyLimit", err)
	}
}

// TestLimitRepliesOff checks that a limit of 0 leaves the connection as it
// is, and that a guarded connection keeps its socket.
func TestLimitRepliesOff(t *testing.T) {
	t.Parallel()
	nc := &chunkConn{}
	if c := LimitReplies(nc, 0); c != net.Conn(nc) {
		t.Errorf("LimitReplies(nc, 0) = %T; want nc itself", c)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if _, ok := LimitReplies(tc, 1).(syscall.Conn); !ok {
		t.Errorf("LimitReplies of a TCP connection is no syscall.Conn")
	}
	if _, ok := LimitReplies(nc, 1).(syscall.Conn); ok {
		t.Errorf("LimitReplies of a connection without a socket is a syscall.Conn")
	}
}

func TestReplyLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want int64 }{
		{0, driver.DefaultReplyLimit}, {-1, 0}, {5, 5}, {1 << 60, maxLimit},
	} {
		if got := ReplyLimit(&driver.Config{ReplyLimit: tc.cfg}); got != tc.want {
			t.Errorf("ReplyLimit(ReplyLimit: %d) = %d; want %d", tc.cfg, got, tc.want)
		}
	}
}

// refElement parses the element at b[i:] as a strict RESP reader that
// believes nothing it has not read: it returns the element's end, its
// announced bulk bytes and aggregate elements (nested ones included), and
// ok false when b ends first or holds what is not RESP, or nests deeper
// than maxReplyDepth.
func refElement(b []byte, i, depth int) (end int, bulk, elems int64, ok bool) {
	if i >= len(b) {
		return 0, 0, 0, false
	}
	nl := bytes.IndexByte(b[i:], '\n')
	if nl < 1 {
		return 0, 0, 0, false
	}
	line, next := b[i+1:i+nl], i+nl+1
	switch b[i] {
	case '+', '-', ':', ',', '(', '#', '_':
		return next, 0, 0, true
	}
	if !strings.ContainsRune("$=!*~>%|", rune(b[i])) || len(line) < 2 || line[len(line)-1] != '\r' || len(line) > 20 {
		return 0, 0, 0, false
	}
	digits := string(line[:len(line)-1])
	if digits == "-1" {
		return next, 0, 0, b[i] != '|'
	}
	var n int64
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, 0, 0, false
		}
		n = n*10 + int64(c-'0')
	}
	switch b[i] {
	case '$', '=', '!':
		if int64(len(b)-next) < n+2 {
			return 0, 0, 0, false
		}
		return next + int(n) + 2, n, 0, true
	case '%', '|':
		n *= 2
	case '*', '~', '>':
	default:
		return 0, 0, 0, false
	}
	if n > 0 && depth == maxReplyDepth {
		return 0, 0, 0, false
	}
	elems = n
	for k := int64(0); k < n; k++ {
		for {
			e, bl, el, ok := refElement(b, next, depth+1)
			if !ok {
				return 0, 0, 0, false
			}
			attr := b[next] == '|'
			next, bulk, elems = e, bulk+bl, elems+el
			if !attr {
				break
			}
		}
	}
	return next, bulk, elems, true
}

// FuzzLimitReplies checks the guard against a strict reader on any stream,
// limit and split: it never panics, sees the same however the stream is
// cut, lets through every well-formed reply whose bytes and elements stay
// within the limit, and stops every reply that announces more than it
// before the reply's end reaches the reader.
func FuzzLimitReplies(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "*2\r\n$3\r\nabc\r\n:1\r\n", "%1\r\n+a\r\n*1\r\n_\r\n", "|1\r\n+a\r\n+b\r\n$2\r\nxy\r\n",
		"*10000000000\r\n", "$1000000000000\r\n", ">2\r\n+a\r\n+b\r\n*-1\r\n", "$-2\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n",
	} {
		f.Add([]byte(s), uint16(100), uint8(3))
	}
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16, cut uint8) {
		lim := int64(limit) + 1
		whole, wholeErr := readGuarded(lim, stream)
		var chunks [][]byte
		for rest := stream; len(rest) > 0; {
			n := min(int(cut)%7+1, len(rest))
			chunks, rest = append(chunks, rest[:n:n]), rest[n:]
		}
		cutGot, cutErr := readGuarded(lim, chunks...)
		if !bytes.Equal(whole, cutGot) || (wholeErr == nil) != (cutErr == nil) || wholeErr != nil && wholeErr.Error() != cutErr.Error() {
			t.Fatalf("whole: %q, %v; in pieces of %d: %q, %v", whole, wholeErr, int(cut)%7+1, cutGot, cutErr)
		}
		for i := 0; i < len(stream); {
			start := i
			var bulk, elems int64
			for { // attributes belong with the reply after them
				end, bl, el, ok := refElement(stream, i, 0)
				if !ok {
					return // malformed or cut short: nothing more to say
				}
				attr := stream[i] == '|'
				i, bulk, elems = end, bulk+bl, elems+el
				if !attr {
					break
				}
			}
			switch {
			case bulk+elems*elementCost > lim:
				if wholeErr == nil || len(whole) >= i {
					t.Fatalf("reply %q announcing %d bytes and %d elements reached the reader under a limit of %d", stream[start:i], bulk, elems, lim)
				}
				return
			case int64(i-start)+elems*elementCost <= lim && len(whole) < i:
				t.Fatalf("reply %q of %d bytes and %d elements stopped under a limit of %d: %v", stream[start:i], i-start, elems, lim, wholeErr)
			}
			if len(whole) < i {
				return // stopped within the margin of the header bytes
			}
		}
	})
}

// loopConn is a connection whose every Read returns reply.
type loopConn struct {
	net.Conn
	reply []byte
}

func (c loopConn) Read(b []byte) (int, error) { return copy(b, c.reply), nil }

// BenchmarkLimitReplies measures the guard on what one uncontended
// lock+unlock on five nodes reads: ten replies of four bytes (":1\r\n"),
// one Read each (40 bytes a cycle, measured with the servers'
// total_net_output_bytes), with the guard and without it.
func BenchmarkLimitReplies(b *testing.B) {
	for _, bc := range []struct {
		name  string
		limit int64
	}{{"guarded", driver.DefaultReplyLimit}, {"none", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			c := LimitReplies(loopConn{reply: []byte(":1\r\n")}, bc.limit)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for range 10 {
					if _, err := c.Read(buf); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
