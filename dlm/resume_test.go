package dlm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// roundTrip encodes l's Handle as JSON and decodes it, as a job runner
// passing the lock to a worker would.
func roundTrip(t *testing.T, l *Lock) Handle {
	t.Helper()
	b, err := json.Marshal(l.Handle())
	if err != nil {
		t.Fatalf("json.Marshal(Handle()) = %v", err)
	}
	var h Handle
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("json.Unmarshal(%s) = %v", b, err)
	}
	return h
}

// TestHandleJSON checks that a Handle carries the lock's keys, secret and
// validity, and survives a JSON round trip unchanged.
func TestHandleJSON(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, keys := range [][]string{{"k"}, {"b", "a"}} {
		fs := newFakes(5)
		m := newManager(t, fs)
		l, err := m.LockAll(context.Background(), keys)
		if err != nil {
			t.Fatal(err)
		}
		h := l.Handle()
		if !slices.Equal(h.Keys, l.Keys()) || h.Secret != l.secret || h.Secret == "" || h.Until.Sub(l.Until().Round(0)).Abs() > time.Millisecond {
			t.Errorf("Handle() = %+v; want keys %q, the lock's secret, Until %v", h, l.Keys(), l.Until())
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		for _, field := range []string{`"keys":`, `"secret":`, `"until":`} {
			if !strings.Contains(string(b), field) {
				t.Errorf("Handle as JSON %s has no %s field", b, field)
			}
		}
		got := roundTrip(t, l)
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		// Each Handle reads the clocks anew: Until may differ by the time
		// between the two calls.
		if !slices.Equal(got.Keys, h.Keys) || got.Secret != h.Secret || got.Until.Sub(h.Until).Abs() > time.Millisecond {
			t.Errorf("Handle after a JSON round trip = %s; want %s", again, b)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() = %v", err)
		}
	}
}

// TestResume checks that a lock handed to a second Manager over the same
// nodes can be extended and unlocked there, and that the original holder
// can no longer extend it once the new holder unlocked it.
func TestResume(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	for _, keys := range [][]string{{"k"}, {"c", "a", "b"}} {
		fs := newFakes(5)
		m1 := newManager(t, fs, patient)
		m2 := newManager(t, fs)
		orig, err := m1.LockAll(context.Background(), keys)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the acquire on every node", func() bool { return countAll(fs, "acquire") == 5 })
		h := roundTrip(t, orig)
		l, err := m2.Resume(context.Background(), h)
		if err != nil {
			t.Fatalf("Resume(%+v) = %v", h, err)
		}
		if l.Key() != orig.Key() || !slices.Equal(l.Keys(), orig.Keys()) {
			t.Errorf("Resume(…).Keys() = %q; want %q", l.Keys(), orig.Keys())
		}
		// Never later than the original's (the clocks are read so that a
		// pause between two reads can only make it earlier), and earlier
		// by no more than a pause of the process: well within a node
		// timeout, however busy the machine.
		if d := l.Until().Sub(orig.Until()); d > 0 || d < -m2.cfg.timeout() {
			t.Errorf("Resume(…).Until() is %v off the original's; want it in [-%v, 0]", d, m2.cfg.timeout())
		}
		if got := countAll(fs, "") - 5; got != 0 {
			t.Errorf("Resume sent %d requests; want none", got)
		}
		if err := l.Extend(context.Background(), time.Minute); err != nil {
			t.Errorf("Extend() of the resumed lock = %v; want nil", err)
		}
		if err := l.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock() of the resumed lock = %v; want nil", err)
		}
		for _, k := range keys {
			waitFor(t, "the keys released on every node", func() bool { return noneHold(fs, rkey(k)) })
		}
		if err := orig.Extend(context.Background(), time.Minute); !errors.Is(err, ErrLockLost) {
			t.Errorf("Extend() by the original holder after the new one unlocked = %v; want ErrLockLost", err)
		}
		for _, k := range keys {
			if !noneHold(fs, rkey(k)) {
				t.Errorf("after the original's Extend, nodes hold %s = %q; want nothing revived", k, holders(fs, rkey(k)))
			}
		}
	}
}

// TestResumeInvalid checks that Resume rejects a handle without a secret,
// keys or Until, and one whose validity has ended, without a round trip;
// and that a missing Until is named as such, not as a validity that ended
// in year 1.
func TestResumeInvalid(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(5)
	m := newManager(t, fs)
	later := time.Now().Add(time.Minute)
	secret := mustSecret(t)
	var nilCtx context.Context
	for _, tc := range []struct {
		name string
		ctx  context.Context
		h    Handle
		want error
		says string // in the error, when set
	}{
		{"no secret", context.Background(), Handle{Keys: []string{"k"}, Until: later}, ErrInvalid, "Handle has no secret"},
		{"no keys", context.Background(), Handle{Secret: secret, Until: later}, ErrInvalid, ""},
		{"empty key", context.Background(), Handle{Keys: []string{""}, Secret: secret, Until: later}, ErrInvalid, ""},
		{"nil ctx", nilCtx, Handle{Keys: []string{"k"}, Secret: secret, Until: later}, ErrInvalid, ""},
		{"bad option", context.Background(), Handle{Keys: []string{"k"}, Secret: secret, Until: later}, ErrInvalid, ""},
		{"expired", context.Background(), Handle{Keys: []string{"k"}, Secret: secret, Until: time.Now().Add(-time.Millisecond)}, ErrLockLost, "validity ended"},
		{"zero Until", context.Background(), Handle{Keys: []string{"k"}, Secret: secret}, ErrInvalid, "handle has no Until"},
	} {
		var opts []Option
		if tc.name == "bad option" {
			opts = []Option{WithAutoExtend(AutoExtend{Remaining: 2})}
		}
		l, err := m.Resume(tc.ctx, tc.h, opts...)
		if l != nil || !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.says) {
			t.Errorf("Resume(%s) = a lock: %t, %v; want %v saying %q", tc.name, l != nil, err, tc.want, tc.says)
		}
	}
	m.Close()
	if _, err := m.Resume(context.Background(), Handle{Keys: []string{"k"}, Secret: secret, Until: later}); !errors.Is(err, ErrClosed) {
		t.Errorf("Resume on a closed Manager = %v; want ErrClosed", err)
	}
	if got := countAll(fs, ""); got != 0 {
		t.Errorf("failed Resume calls sent %d requests; want 0", got)
	}
}

// mustSecret returns a fresh secret of the library's own shape.
func mustSecret(t *testing.T) string {
	t.Helper()
	s, err := newSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestResumeSecretShape checks that Resume accepts only a secret of the
// shape newSecret makes, without a round trip: not an empty one, one too
// short or too long, one with bytes outside URL-safe base64, one whose
// unused bits are set, nor a reserved value such as the readers' marker;
// and that its error never quotes the secret.
func TestResumeSecretShape(t *testing.T) {
	checkLeaks(t)
	fs := newFakes(3)
	m := newManager(t, fs)
	good := mustSecret(t)
	for _, tc := range []struct {
		name, secret string
		ok           bool
	}{
		{"made by newSecret", good, true},
		{"all zero bits", strings.Repeat("A", 22), true},
		{"empty", "", false},
		{"too short", good[:21], false},
		{"one byte", "t", false},
		{"too long", good + "A", false},
		{"a leader's value after it", good + ":leader-1", false},
		{"padded", good + "==", false},
		{"standard base64 alphabet", "+/" + good[2:], false},
		{"a space", " " + good[1:], false},
		{"a newline", good[:21] + "\n", false},
		{"non-ASCII", "é" + good[2:], false},
		{"unused bits set", good[:21] + "B", false}, // 16 bytes leave the last character's low 4 bits unused
		{"the readers' marker", script.ReadersMark, false},
		{"over-long", strings.Repeat("A", 1<<20), false},
	} {
		h := Handle{Keys: []string{"k"}, Secret: tc.secret, Until: time.Now().Add(time.Minute)}
		l, err := m.Resume(context.Background(), h)
		if tc.ok {
			if err != nil {
				t.Errorf("Resume(secret %s) = %v; want a lock", tc.name, err)
			}
			continue
		}
		if l != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("Resume(secret %s) = a lock: %t, %v; want ErrInvalid", tc.name, l != nil, err)
		}
		if len(tc.secret) > 1 && strings.Contains(fmt.Sprint(err), tc.secret) {
			t.Errorf("Resume(secret %s) = %v; want an error that does not quote the secret", tc.name, err)
		}
	}
	if got := countAll(fs, ""); got != 0 {
		t.Errorf("Resume sent %d requests; want none", got)
	}
}

// TestResumeTTLMustMatch checks item 12 of the security review: a Handle
// carries its lock's TTL (JSON "ttl"), and Resume refuses with ErrInvalid,
// without a round trip, a call whose TTL differs from it, or a TTL that is
// not positive; the call with the Handle's TTL resumes. A Handle of v0.1.0,
// whose JSON has no "ttl", resumes with the TTL of the call, its validity
// capped by that TTL.
func TestResumeTTLMustMatch(t *testing.T) {
	t.Parallel()
	checkLeaks(t)
	fs := newFakes(3)
	const ttl = 2 * time.Second
	m := newManager(t, fs, patient)

	orig, err := m.TryLock(context.Background(), "k", WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Unlock(context.Background())
	waitFor(t, "the acquire on every node", func() bool { return countAll(fs, "acquire") == 3 })
	b, err := json.Marshal(orig.Handle())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ttl":2000000000`) {
		t.Errorf("Handle of a lock with TTL %v as JSON = %s; want \"ttl\":2000000000", ttl, b)
	}
	h := roundTrip(t, orig)
	// withTTL is h's JSON with its "ttl" set to v, or taken out when v is "".
	withTTL := func(v string) Handle {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "ttl")
		if v != "" {
			fields["ttl"] = json.RawMessage(v)
		}
		nb, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		var out Handle
		if err := json.Unmarshal(nb, &out); err != nil {
			t.Fatalf("json.Unmarshal(%s) = %v", nb, err)
		}
		return out
	}
	before := countAll(fs, "")
	for _, tc := range []struct {
		name string
		h    Handle
		opts []Option
	}{
		{"the manager's default TTL", h, nil},
		{"a longer TTL", h, []Option{WithTTL(time.Minute)}},
		{"a shorter TTL", h, []Option{WithTTL(time.Second)}},
		{"a negative TTL in the Handle", withTTL("-2000000000"), []Option{WithTTL(ttl)}},
	} {
		l, err := m.Resume(context.Background(), tc.h, tc.opts...)
		if l != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("Resume(Handle of TTL %v, %s) = a lock: %t, %v; want ErrInvalid", ttl, tc.name, l != nil, err)
		}
	}
	if got := countAll(fs, "") - before; got != 0 {
		t.Errorf("the refused Resume calls sent %d requests; want 0", got)
	}
	l, err := m.Resume(context.Background(), h, WithTTL(ttl))
	if err != nil {
		t.Fatalf("Resume(Handle of TTL %v, WithTTL(%v)) = %v; want a lock", ttl, ttl, err)
	}
	if err := l.Extend(context.Background(), ttl); err != nil {
		t.Errorf("Extend() of the resumed lock = %v", err)
	}
	// A Handle of v0.1.0 has no TTL: the call's TTL stands.
	old := withTTL("")
	for _, callTTL := range []time.Duration{time.Second, DefaultTTL} {
		var opts []Option
		if callTTL != DefaultTTL {
			opts = []Option{WithTTL(callTTL)}
		}
		l, err := m.Resume(context.Background(), old, opts...)
		if err != nil {
			t.Errorf("Resume(Handle without a TTL, TTL %v) = %v; want a lock", callTTL, err)
			continue
		}
		if left := time.Until(l.Until()); left > callTTL {
			t.Errorf("Resume(Handle without a TTL, TTL %v).Until() = now + %v; want at most the call's TTL", callTTL, left)
		}
	}
}
