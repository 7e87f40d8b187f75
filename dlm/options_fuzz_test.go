package dlm

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// FuzzOptions feeds random TTLs, drift factors, node timeouts, retry counts,
// prefixes and keys to the option checks and, through a manager over one
// fake node, to TryLock, Extend and Unlock. Nothing may panic; a value is
// either refused with ErrInvalid before any round trip, or gives a lock
// with some validity left after the drift allowance and a positive node
// timeout. Operations on a fake node that answers at once end with a typed
// error or none, and leave no key behind unless a node request timed out.
func FuzzOptions(f *testing.F) {
	day := int64(24 * time.Hour)
	for _, s := range []struct {
		ttl         int64
		drift       float64
		nodeTimeout int64
		tries       int
		prefix, key string
		extendTTL   int64
	}{
		{int64(DefaultTTL), DefaultDriftFactor, 0, 0, DefaultKeyPrefix, "orders:42", int64(time.Second)},
		{int64(3 * time.Millisecond), 0, int64(time.Second), 1, "", "{", int64(3 * time.Millisecond)},
		{int64(2*time.Millisecond + 1), 0, 0, 0, "{x}", "a}b", 0},
		{math.MaxInt64, 0.4999999999, math.MaxInt64, math.MaxInt, "p", strings.Repeat("k", MaxKeyLen), math.MaxInt64},
		{math.MinInt64, math.Inf(-1), math.MinInt64, math.MinInt, "p", strings.Repeat("k", MaxKeyLen+1), math.MinInt64},
		{day, math.NaN(), 1, -1, "\x00", "\x00", -1},
		{day, 0.5, -1, 0, "redlock:", "a b\nc", day},
		{int64(time.Millisecond), math.Copysign(0, -1), 1, 0, "", "", int64(time.Millisecond)},
	} {
		f.Add(s.ttl, s.drift, s.nodeTimeout, s.tries, s.prefix, s.key, s.extendTTL)
	}
	f.Fuzz(func(t *testing.T, ttl int64, drift float64, nodeTimeout int64, tries int, prefix, key string, extendTTL int64) {
		opts := []Option{
			WithTTL(time.Duration(ttl)), WithDriftFactor(drift), WithNodeTimeout(time.Duration(nodeTimeout)),
			WithRetry(tries, nil), WithKeyPrefix(prefix),
		}
		cfg, err := defaultConfig().with(opts)
		valid := err == nil
		if !valid && !errors.Is(err, ErrInvalid) {
			t.Fatalf("config.with(%v, %v, %v, %d) = %v; want nil or ErrInvalid", time.Duration(ttl), drift, time.Duration(nodeTimeout), tries, err)
		}
		if valid {
			if v := cfg.ttl.Truncate(time.Millisecond) - cfg.drift(cfg.ttl); v <= 0 {
				t.Fatalf("config.with(TTL %v, drift %v) accepted, validity %v; want it refused", cfg.ttl, cfg.driftFactor, v)
			}
			if cfg.timeout() <= 0 {
				t.Fatalf("config.with(TTL %v, node timeout %v) accepted, timeout() %v; want > 0", cfg.ttl, cfg.nodeTimeout, cfg.timeout())
			}
			if ms, err := strconv.ParseInt(ttlMillis(cfg.ttl), 10, 64); err != nil || ms < 1 {
				t.Fatalf("ttlMillis(%v) = %q; want a whole number of milliseconds, at least 1", cfg.ttl, ttlMillis(cfg.ttl))
			}
		}
		keyErr := checkKey(key)
		if keyOK := key != "" && len(key) <= MaxKeyLen; keyOK != (keyErr == nil) || keyErr != nil && !errors.Is(keyErr, ErrInvalid) {
			t.Fatalf("checkKey(%d bytes) = %v; want ErrInvalid just when empty or longer than %d", len(key), keyErr, MaxKeyLen)
		}

		// The same options as a manager's defaults.
		node := newFakeNode(0)
		if m, err := New([]driver.Node{node}, asManager(opts)...); valid != (err == nil) || err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("New(%d options) = %v; config.with said %v", len(opts), err, valid)
		} else if m != nil {
			m.Close()
		}

		// And per call, on a manager with the defaults.
		m, err := New([]driver.Node{node})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := m.TryLock(ctx, key, opts...)
		if !valid || keyErr != nil {
			if l != nil || !errors.Is(err, ErrInvalid) || node.count("") != 0 {
				t.Fatalf("TryLock(%q) with bad input = %v, %v after %d requests; want ErrInvalid and none", key, l, err, node.count(""))
			}
			return
		}
		// A node timeout under a second may cut requests short, a tiny
		// TTL may be used up by the round trip: either fails the attempt.
		sane := cfg.timeout() >= time.Second
		rkey := cfg.redisKey(key)
		if err != nil {
			if l != nil || !errors.Is(err, ErrNotObtained) && !errors.Is(err, ErrUnavailable) {
				t.Fatalf("TryLock(%q) = %v, %v; want a lock, ErrNotObtained or ErrUnavailable", key, l, err)
			}
			if _, _, held := node.get(rkey); held && sane {
				t.Fatalf("TryLock(%q) failed with %v and left the key behind", key, err)
			}
			return
		}
		if v, _, held := node.get(rkey); cfg.ttl >= time.Second && (!held || v != node.secret()) {
			t.Fatalf("TryLock(%q) succeeded but the node holds %q under %q", key, v, rkey)
		}
		if err := l.Extend(ctx, time.Duration(extendTTL)); err != nil &&
			!errors.Is(err, ErrInvalid) && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Extend(%v) = %v; want nil, ErrInvalid, ErrLockLost or ErrUnavailable", time.Duration(extendTTL), err)
		}
		err = l.Unlock(ctx)
		if err != nil && !errors.Is(err, ErrLockLost) && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Unlock = %v; want nil, ErrLockLost or ErrUnavailable", err)
		}
		if _, _, held := node.get(rkey); held && sane {
			t.Fatalf("Unlock = %v and left the key behind", err)
		}
	})
}
