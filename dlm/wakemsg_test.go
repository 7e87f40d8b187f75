package dlm

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// TestParseWake checks the wake messages parseWake accepts, with what they
// announce, and that it refuses hostile ones: counts with a sign, too many
// digits, digits that are not ASCII, ids of the wrong length or alphabet,
// bytes that are not UTF-8, and long payloads.
func TestParseWake(t *testing.T) {
	t.Parallel()
	const id = "AZaz09-_AZaz09-_AZaz09"
	for _, tc := range []struct {
		payload string
		want    wakeMsg
		ok      bool
	}{
		{"t", wakeMsg{kind: wakeTaken}, true},
		{"", wakeMsg{kind: wakeAny}, true},
		{"r0", wakeMsg{kind: wakeAny}, true},
		{"r7", wakeMsg{kind: wakeAny, listening: 7}, true},
		{"r007", wakeMsg{kind: wakeAny, listening: 7}, true},
		{"r1048576", wakeMsg{kind: wakeAny, listening: maxListening}, true},
		{"r1048577", wakeMsg{kind: wakeAny, listening: maxListening}, true},
		{"r" + strings.Repeat("9", 18), wakeMsg{kind: wakeAny, listening: maxListening}, true},
		{id, wakeMsg{kind: wakeFair, id: id}, true},
		{"r" + strings.Repeat("9", 19), wakeMsg{}, false},
		{"r9223372036854775807", wakeMsg{}, false},
		{"r" + strings.Repeat("1", 21), wakeMsg{kind: wakeFair, id: "r" + strings.Repeat("1", 21)}, true},
		{"r" + strings.Repeat("1", 1<<20), wakeMsg{}, false},
		{"r", wakeMsg{}, false},
		{"r-1", wakeMsg{}, false},
		{"r-9223372036854775808", wakeMsg{}, false},
		{"r+1", wakeMsg{}, false},
		{"r 1", wakeMsg{}, false},
		{"r1 ", wakeMsg{}, false},
		{"r1\x00", wakeMsg{}, false},
		{"r1e3", wakeMsg{}, false},
		{"r0x1", wakeMsg{}, false},
		{"r1_000", wakeMsg{}, false},
		{"r\u0661\u0662", wakeMsg{}, false},
		{"R1", wakeMsg{}, false},
		{"T", wakeMsg{}, false},
		{"tt", wakeMsg{}, false},
		{"t\x00", wakeMsg{}, false},
		{id[:21], wakeMsg{}, false},
		{id + "A", wakeMsg{}, false},
		{id[:21] + "=", wakeMsg{}, false},
		{id[:21] + "+", wakeMsg{}, false},
		{id[:21] + "/", wakeMsg{}, false},
		{id[:21] + " ", wakeMsg{}, false},
		{id[:20] + "é", wakeMsg{}, false},
		{"\xff\xfe\xfd", wakeMsg{}, false},
		{strings.Repeat("\xff", fairIDLen), wakeMsg{}, false},
		{strings.Repeat("x", 1<<20), wakeMsg{}, false},
	} {
		got, ok := parseWake(tc.payload)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseWake(%.40q) = %+v, %v; want %+v, %v", tc.payload, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFairIDLen checks that a fair waiter's id has the length parseWake
// expects, longer than any release, so that the two are told apart by
// their length.
func TestFairIDLen(t *testing.T) {
	t.Parallel()
	id, err := newSecret()
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != fairIDLen || fairIDLen <= len(script.WakeRelease)+maxCountDigits {
		t.Errorf("a fair waiter's id has %d bytes, fairIDLen %d, the longest release %d; want the first two equal and greater than the third",
			len(id), fairIDLen, len(script.WakeRelease)+maxCountDigits)
	}
	if msg, ok := parseWake(id); !ok || msg.kind != wakeFair {
		t.Errorf("parseWake(a fair waiter's id) = %+v, %v; want a fair release", msg, ok)
	}
}

// wakeGrammar is parseWake's grammar, written independently of it.
var wakeGrammar = regexp.MustCompile(`\A(?:t|r[0-9]{1,18}|[A-Za-z0-9_-]{22})?\z`)

// FuzzWakeMessage feeds arbitrary payloads to parseWake and, as a node's
// subscription delivers them, to a waker with a plain, a fair and another
// fair watcher. parseWake must accept exactly its grammar, with a count in
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
		msg, ok := parseWake(payload)
		if ok != wakeGrammar.MatchString(payload) {
			t.Fatalf("parseWake(%q) accepted: %v; the grammar says %v", payload, ok, !ok)
		}
		if ok && (msg.listening < 0 || msg.listening > maxListening || msg.kind < wakeTaken || msg.kind > wakeFair) {
			t.Fatalf("parseWake(%q) = %+v; want a known kind and a count in [0, %d]", payload, msg, maxListening)
		}

		w := &waker{pumps: make([]*pump, 1), chans: map[string]*wakeChan{}}
		plain := w.watch([]string{"k"}, "")
		fair := w.watch([]string{"k"}, "waiter-id-of-twenty-22")
		other := w.watch([]string{"k"}, "another-id-of-twenty-2")
		watchers := []*watcher{plain, fair, other}
		h := handler{w: w}
		malformed := uint64(0)
		for _, p := range append([]string{payload}, strings.Split(payload, "\n")...) {
			before := w.ignored.Load()
			h.Message(script.WakeChannel("k"), p)
			_, ok := parseWake(p)
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
				wt.drain()
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
