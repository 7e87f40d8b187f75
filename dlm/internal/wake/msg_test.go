package wake

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestParseWake checks the wake messages parse accepts, with what they
// announce, and that it refuses hostile ones: counts with a sign, too many
// digits, digits that are not ASCII, ids of the wrong length or alphabet,
// bytes that are not UTF-8, and long payloads.
func TestParseWake(t *testing.T) {
	t.Parallel()
	const id = "AZaz09-_AZaz09-_AZaz09"
	for _, tc := range []struct {
		payload string
		want    msg
		ok      bool
	}{
		{"t", msg{kind: kindGrant}, true},
		{"", msg{kind: kindRelease}, true},
		{"r0", msg{kind: kindRelease}, true},
		{"r7", msg{kind: kindRelease, listening: 7}, true},
		{"r007", msg{kind: kindRelease, listening: 7}, true},
		{"r1048576", msg{kind: kindRelease, listening: maxListening}, true},
		{"r1048577", msg{kind: kindRelease, listening: maxListening}, true},
		{"r" + strings.Repeat("9", 18), msg{kind: kindRelease, listening: maxListening}, true},
		{id, msg{kind: kindFair, id: id}, true},
		{"r" + strings.Repeat("9", 19), msg{}, false},
		{"r9223372036854775807", msg{}, false},
		{"r" + strings.Repeat("1", 21), msg{kind: kindFair, id: "r" + strings.Repeat("1", 21)}, true},
		{"r" + strings.Repeat("1", 1<<20), msg{}, false},
		{"r", msg{}, false},
		{"r-1", msg{}, false},
		{"r-9223372036854775808", msg{}, false},
		{"r+1", msg{}, false},
		{"r 1", msg{}, false},
		{"r1 ", msg{}, false},
		{"r1\x00", msg{}, false},
		{"r1e3", msg{}, false},
		{"r0x1", msg{}, false},
		{"r1_000", msg{}, false},
		{"r\u0661\u0662", msg{}, false},
		{"R1", msg{}, false},
		{"T", msg{}, false},
		{"tt", msg{}, false},
		{"t\x00", msg{}, false},
		{id[:21], msg{}, false},
		{id + "A", msg{}, false},
		{id[:21] + "=", msg{}, false},
		{id[:21] + "+", msg{}, false},
		{id[:21] + "/", msg{}, false},
		{id[:21] + " ", msg{}, false},
		{id[:20] + "é", msg{}, false},
		{"\xff\xfe\xfd", msg{}, false},
		{strings.Repeat("\xff", IDLen), msg{}, false},
		{strings.Repeat("x", 1<<20), msg{}, false},
	} {
		got, ok := parse(tc.payload)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parse(%.40q) = %+v, %v; want %+v, %v", tc.payload, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFairIDLen checks that an id of IDLen characters, as a fair waiter's
// (package dlm checks its ids' length), is longer than any release and
// parses as a fair release, so that the two are told apart by length.
func TestFairIDLen(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("A", IDLen)
	if IDLen <= len(script.WakeRelease)+maxCountDigits {
		t.Errorf("IDLen %d, the longest release %d; want IDLen greater", IDLen, len(script.WakeRelease)+maxCountDigits)
	}
	if msg, ok := parse(id); !ok || msg.kind != kindFair {
		t.Errorf("parse(a fair waiter's id) = %+v, %v; want a fair release", msg, ok)
	}
}

// wakeGrammar is parse's grammar, written independently of it.
var wakeGrammar = regexp.MustCompile(`\A(?:t|r[0-9]{1,18}|[A-Za-z0-9_-]{22})?\z`)

// FuzzWakeMessage feeds arbitrary payloads to parse and, as a node's
// subscription delivers them, to a waker with a plain, a fair and another
// fair watcher. parse must accept exactly its grammar, with a count in
// [0, maxListening]; nothing may panic; the wait spread after any of them
// stays within [0, maxSpread) for any attempt; a malformed payload wakes
// nobody and is counted; and a well-formed release after the garbage still
// wakes every watcher, with its count.
func FuzzWakeMessage(f *testing.F) {
	for _, s := range []string{
		"", "t", "r0", "r7", "r" + strings.Repeat("9", 18), "r" + strings.Repeat("9", 19), "r-1", "r", "r+5",
		"r\u0661", "AZaz09-_AZaz09-_AZaz09", "waiter-id-of-twenty-2!", "\xff\xfe", "r1\nr2\nt\n\n",
		"r-9223372036854775808\nr999999999999999999", strings.Repeat("x", 4096),
	} {
		f.Add(s, int64(time.Millisecond))
	}
	f.Add("r999999999999999999", int64(math.MaxInt64))
	f.Add("r3", int64(1))
	f.Add("r3", int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, payload string, attempt int64) {
		msg, ok := parse(payload)
		if ok != wakeGrammar.MatchString(payload) {
			t.Fatalf("parse(%q) accepted: %v; the grammar says %v", payload, ok, !ok)
		}
		if ok && (msg.listening < 0 || msg.listening > maxListening || msg.kind < kindGrant || msg.kind > kindFair) {
			t.Fatalf("parse(%q) = %+v; want a known kind and a count in [0, %d]", payload, msg, maxListening)
		}

		w := &Waker{pumps: make([]*pump, 1), chans: map[string]*wakeChan{}}
		plain := w.Watch([]string{"k"}, "")
		fair := w.Watch([]string{"k"}, "waiter-id-of-twenty-22")
		other := w.Watch([]string{"k"}, "another-id-of-twenty-2")
		watchers := []*Watcher{plain, fair, other}
		h := handler{w: w}
		malformed := uint64(0)
		for _, p := range append([]string{payload}, strings.Split(payload, "\n")...) {
			before := w.ignored.Load()
			h.Message(script.WakeChannel("k"), p)
			_, ok := parse(p)
			if !ok {
				malformed++
			}
			if got := w.ignored.Load() - before; got != map[bool]uint64{false: 1}[ok] {
				t.Fatalf("Message(%q) counted %d malformed messages; want %d", p, got, map[bool]uint64{false: 1}[ok])
			}
			for _, wt := range watchers {
				if d := wt.spread(time.Duration(attempt)); d < 0 || d >= maxSpread {
					t.Fatalf("after Message(%q), spread(%v) = %v; want in [0, %v)", p, time.Duration(attempt), d, maxSpread)
				}
				if !ok && len(wt.c)+len(wt.taken) > 0 {
					t.Fatalf("Message(%q), malformed, woke a watcher", p)
				}
				wt.Drain()
				select {
				case <-wt.taken:
				default:
				}
			}
		}
		if got := w.ignored.Load(); got != malformed {
			t.Fatalf("counted %d malformed messages; want %d", got, malformed)
		}
		h.Message(script.WakeChannel("k"), "r5")
		for i, wt := range watchers {
			if len(wt.c) != 1 || wt.listening.Load() != 5 {
				t.Fatalf("watcher %d after garbage %q, then r5: woken %v, listening %d; want woken, 5", i, payload, len(wt.c) == 1, wt.listening.Load())
			}
		}
	})
}
