package memlock

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// digest is redis.sha1hex(v).
func digest(v string) string {
	sum := sha1.Sum([]byte(v))
	return hex.EncodeToString(sum[:])
}

// setLeader is the SetLeader script: the leader's value stored beside the
// election's lock key, under the digest of its secret and with the key's
// TTL, when the key holds the secret; the grant announced. n.mu is held.
func (n *Node) setLeader(keys, args []string) (any, error) {
	if len(keys) < 2 || len(args) < 3 {
		return nil, errTooFewArgs
	}
	if v, ok := n.get(keys[0]); !ok || !owns(v, args[0]) {
		return int64(0), nil
	}
	ttl := n.pttl(keys[0])
	if ttl <= 0 {
		return int64(0), nil
	}
	n.set(keys[1], digest(args[0])+args[1], time.Duration(ttl)*time.Millisecond)
	n.announcerOf(args).broadcastPayload(keys[0], script.WakeGrant)
	return int64(1), nil
}

// leader is the Leader script: the election read without its secret, each
// key bounded by its argument's bytes. A reserved value (a key handed on
// to the next candidate) reads as absent. n.mu is held.
func (n *Node) leader(keys, args []string) (any, error) {
	if len(keys) < 2 || len(args) < 2 {
		return nil, errTooFewArgs
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil {
		return nil, errNotInteger
	}
	v, ok := n.get(keys[0])
	if len(v) > limit {
		// Measured, never read: see script.Leader.
		return []any{int64(len(v))}, nil
	}
	if !ok || strings.HasPrefix(v, script.ReservedPrefix) {
		return []any{}, nil
	}
	id, ttl := digest(v), n.pttl(keys[0])
	if i := strings.IndexByte(v, ':'); i >= 0 {
		return []any{id, ttl, v[i+1:]}, nil // a candidate of the previous release
	}
	vlimit, err := strconv.Atoi(args[1])
	if err != nil {
		return nil, errNotInteger
	}
	s, _ := n.get(keys[1])
	switch {
	case len(s) > vlimit:
		return []any{id, ttl, int64(len(s))}, nil
	case len(s) < script.LeaderDigestLen || s[:script.LeaderDigestLen] != id:
		return []any{id, ttl}, nil
	}
	return []any{id, ttl, s[script.LeaderDigestLen:]}, nil
}

// extendLeader is a [script.BatchLeader] entry: the election's lock key
// extended as the mutex's is, and its leader key with it when it was.
// n.mu is held.
func (n *Node) extendLeader(keys []string, secret, ttl string) (any, error) {
	r, err := n.extend(keys[:1], []string{secret, ttl})
	if err != nil || r != int64(1) {
		return r, err
	}
	ms, _ := strconv.ParseInt(ttl, 10, 64) // parsed by extend
	n.pexpire(keys[1], time.Duration(ms)*time.Millisecond)
	return r, nil
}
