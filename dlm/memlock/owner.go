package memlock

import (
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// setOwner is the SetOwner script: the holder's label stored beside the
// lock key, under the digest of its secret, the node's time and with the
// key's TTL, when the key holds the secret. n.mu is held.
func (n *Node) setOwner(keys, args []string) (any, error) {
	if len(keys) < 2 || len(args) < 2 {
		return nil, errTooFewArgs
	}
	if v, ok := n.get(keys[0]); !ok || !owns(v, args[0]) {
		return int64(0), nil
	}
	ttl := n.pttl(keys[0])
	if ttl <= 0 {
		return int64(0), nil
	}
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	n.set(keys[1], digest(args[0])+now+" "+args[1], time.Duration(ttl)*time.Millisecond)
	return int64(1), nil
}

// touchOwner is the TouchOwner script: the owner key given the lock key's
// TTL when the key holds the secret. n.mu is held.
func (n *Node) touchOwner(keys, args []string) (any, error) {
	if len(keys) < 2 || len(args) < 1 {
		return nil, errTooFewArgs
	}
	if v, ok := n.get(keys[0]); !ok || !owns(v, args[0]) {
		return int64(0), nil
	}
	ttl := n.pttl(keys[0])
	if ttl <= 0 {
		return int64(0), nil
	}
	o, ok := n.get(keys[1])
	if !ok {
		return int64(0), nil
	}
	n.set(keys[1], o, time.Duration(ttl)*time.Millisecond)
	return int64(1), nil
}

// ownerOf is the scripts' ownerOf: the grant time and label of lock key k,
// whose value is v, or 0 and "" when its owner key names no owner of v.
// n.mu is held.
func (n *Node) ownerOf(k, v string) (int64, string) {
	o, ok := n.get(k + script.OwnerSuffix)
	if !ok || len(o) > script.MaxOwnerValue || len(o) < script.LeaderDigestLen || o[:script.LeaderDigestLen] != digest(v) {
		return 0, ""
	}
	since, label, ok := strings.Cut(o[script.LeaderDigestLen:], " ")
	if !ok {
		return 0, ""
	}
	ms, err := strconv.ParseInt(since, 10, 64)
	if err != nil {
		return 0, label
	}
	return ms, label
}

// statusOwner is the StatusOwner script. n.mu is held.
func (n *Node) statusOwner(keys []string) (any, error) {
	if len(keys) < 2 {
		return nil, errTooFewArgs
	}
	v, ok := n.get(keys[0])
	var reserved, since int64
	label := ""
	if strings.HasPrefix(v, script.ReservedFor("")) {
		reserved = 1
	}
	if ok && reserved == 0 && len(v) <= script.MaxOwnerValue {
		since, label = n.ownerOf(keys[0], v)
	}
	return []any{n.pttl(keys[0]), n.counter(keys[1]), reserved, since, label}, nil
}

// forceRelease is the ForceRelease script: the keys deleted, whoever holds
// them. n.mu is held.
func (n *Node) forceRelease(keys []string) (any, error) {
	var deleted int64
	for _, k := range keys {
		if _, ok := n.get(k); ok {
			delete(n.keys, k)
			deleted++
		}
	}
	return deleted, nil
}
