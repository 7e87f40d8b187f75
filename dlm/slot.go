package dlm

import (
	"fmt"
	"strings"

	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// A node that is a whole Redis Cluster ([driver.Sharded]) runs each script
// on the master owning its keys' hash slot, and refuses keys of several
// slots. A lock over several keys whose Redis keys fall in different slots
// is therefore refused up front on such a manager, with ErrInvalid naming
// the cause, rather than sent and counted as node failures ("unavailable")
// and retried in vain. Splitting the keys by slot and running the scripts
// per slot was the other option; it would make a node's grant of a
// multi-key lock several independent grants, with partial grants to release
// and fencing counters to reconcile across slots, for a use that a common
// hash tag serves as well.

// nodeArgs returns how n's call picks a request's arguments: for a node
// that is a Redis Cluster, announce's flag is Sharded rather than Loud,
// sharded pub/sub, and QuietSharded rather than Quiet, so that the
// listeners a script counts are the shard channels' (see script.Flag); a
// waiting writer's mark stays. A request without a flag is sent as it is.
func nodeArgs(n *node) func(*round.Request) []string {
	i := n.i
	if !n.cluster {
		return func(req *round.Request) []string { return req.ArgsFor(i) }
	}
	return func(req *round.Request) []string {
		args := req.ArgsFor(i)
		if req.Quiet == nil {
			return args // no flag: the script announces nothing
		}
		f := req.Flag
		f.Mode = script.QuietSharded
		if req.Flag.Mode == script.Loud && req.LoudOn(i) {
			f.Mode = script.Sharded
		}
		return append(args[:len(args)-1:len(args)-1], f.Arg())
	}
}

// sharded returns the address of the first node that says it is a Redis
// Cluster, or "" when none does.
func (ns nodeSet) sharded() string {
	for _, n := range ns {
		if n.cluster {
			return n.addr
		}
	}
	return ""
}

// checkSlots returns ErrInvalid when rkeys fall in more than one hash slot
// and a node is a Redis Cluster (ns.sharded names it).
func (ns nodeSet) checkSlots(keys, rkeys []string) error {
	if len(rkeys) < 2 {
		return nil
	}
	sharded := ns.sharded()
	if sharded == "" {
		return nil
	}
	first := keySlot(rkeys[0])
	for i, k := range rkeys[1:] {
		if s := keySlot(k); s != first {
			return fmt.Errorf("%w: keys %q and %q fall in different hash slots (%d and %d) and node %s is a Redis Cluster, "+
				"whose scripts cannot span slots: give the keys a common hash tag, as in \"{order42}:a\" and \"{order42}:b\"",
				ErrInvalid, keys[0], keys[i+1], first, s, sharded)
		}
	}
	return nil
}

// keySlot returns the Redis Cluster hash slot of key: CRC16 of the key, or
// of the part between its first "{" and the first "}" after it when that
// part is not empty, modulo 16384.
func keySlot(key string) uint16 {
	if tag, ok := hashTag(key); ok {
		key = tag
	}
	return crc16(key) % 16384
}

// hashTag returns the hash tag of key, the part between its first "{" and
// the first "}" after it, and whether there is one: a key without "{", or
// whose first "{" is followed by no "}" or at once by "}", has none, and
// Redis Cluster hashes it whole.
func hashTag(key string) (string, bool) {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j], true
		}
	}
	return "", false
}

// checkTag returns ErrInvalid when a node is a Redis Cluster (ns.sharded
// names it) and rkey, the Redis key of the lock key
// key, has no hash tag. The library derives a lock's other keys from its
// Redis key by a suffix (":fence", ":wake", ":guard", ...) and relies on
// the tag, the key between braces, to put them all in the lock's slot;
// a key beginning with "}" closes the tag at once, leaving it empty, so
// that Redis Cluster would hash each derived key whole, in a slot of its
// own, and refuse the scripts that use them together (CROSSSLOT) on every
// attempt. A key containing "}" elsewhere keeps a tag, its part before the
// "}", which its derived keys share.
func (ns nodeSet) checkTag(key, rkey string) error {
	sharded := ns.sharded()
	if sharded == "" {
		return nil
	}
	if _, ok := hashTag(rkey); ok {
		return nil
	}
	if strings.HasPrefix(key, "}") {
		return fmt.Errorf("%w: key %q begins with \"}\", which closes the hash tag of its Redis key %q at once, "+
			"and node %s is a Redis Cluster: with an empty hash tag the lock's keys would fall in different slots; "+
			"use a key that does not begin with \"}\"", ErrInvalid, key, rkey, sharded)
	}
	return fmt.Errorf("%w: the Redis key %q of key %q has no hash tag (see WithKeyPrefix), and node %s is a Redis Cluster: "+
		"the lock's keys would fall in different slots", ErrInvalid, rkey, key, sharded)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
