package memlock

import (
	"strconv"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// announcer is package script's announce for one run of a script: its
// flag, the script's last argument, read as the Lua reads it, and the
// functions announce defines. Sharded asks for shard channels (SPUBLISH,
// PUBSUB SHARDNUMSUB): a node's subscriptions are to plain channels, so,
// as on a redis-server whose clients SUBSCRIBE, a Sharded announcement
// reaches nobody (package dlm asks for it only on a Redis Cluster, which
// memlock is not). n.mu is held while it is used.
type announcer struct {
	n    *Node
	flag script.Flag
}

// announcerOf reads announce's flag from a script's arguments.
func (n *Node) announcerOf(args []string) announcer {
	a := announcer{n: n}
	if len(args) > 0 {
		a.flag = script.ParseFlag(args[len(args)-1])
	}
	return a
}

// loud says whether the flag asks for announcements.
func (a announcer) loud() bool { return a.flag.Mode == script.Loud || a.flag.Mode == script.Sharded }

// sharded says whether the flag is for a node that is a Redis Cluster,
// whose clients listen on shard channels.
func (a announcer) sharded() bool {
	return a.flag.Mode == script.Sharded || a.flag.Mode == script.QuietSharded
}

// broadcast is announce's broadcast(key, nil): [script.WakeRelease] and
// the number of listeners on key's broadcast channel, when loud and anyone
// listens there.
func (a announcer) broadcast(key string) {
	if !a.loud() {
		return
	}
	ch := script.WakeChannel(key)
	if subs := a.listeners(ch); subs > 0 {
		a.publish(ch, script.WakeRelease+strconv.Itoa(subs))
	}
}

// released is announce's released(key): when loud, the mark of listeners
// on key's broadcast channel deleted and the release broadcast.
func (a announcer) released(key string) {
	if !a.loud() {
		return
	}
	delete(a.n.keys, script.ListenKey(key))
	a.broadcast(key)
}

// listeners is PUBSUB NUMSUB, or SHARDNUMSUB when sharded, of channel.
func (a announcer) listeners(channel string) int {
	if a.sharded() {
		return 0
	}
	return a.n.listeners(channel)
}

// publish is PUBLISH, or SPUBLISH when Sharded, of payload on channel.
func (a announcer) publish(channel, payload string) {
	if a.flag.Mode != script.Sharded {
		a.n.publish(channel, payload)
	}
}

// broadcastPayload is announce's broadcast(key, payload).
func (a announcer) broadcastPayload(key, payload string) {
	if a.loud() {
		a.publish(script.WakeChannel(key), payload)
	}
}

// wake is announce's wake(key, id): the waiter id named on the channel of
// the manager its first [script.ManagerIDLen] bytes are.
func (a announcer) wake(key, id string) {
	if a.loud() {
		a.publish(script.ManagerChannel(key, id[:min(len(id), script.ManagerIDLen)]), id)
	}
}

// readersHold is announce's readersHold(key, v): refused by readers
// (v is [script.ReadersMark]), a waiting writer records its intent for ttl,
// the script's ARGV[2], whose error it returns as SET's.
func (a announcer) readersHold(key, v string, ttl string) error {
	if v != script.ReadersMark || !a.flag.WriterWaits {
		return nil
	}
	d, err := millis(ttl)
	if err != nil {
		return err
	}
	a.n.set(script.IntentKey(key), "1", d)
	return nil
}

// heard is announce's heard(key, left): the mark of listeners on key's
// broadcast channel set for left ms and ttl, the script's ARGV[2], more,
// whose error it returns as SET's.
func (a announcer) heard(key string, left int64, ttl string) error {
	d, err := millis(ttl)
	if err != nil {
		return err
	}
	d += time.Duration(left) * time.Millisecond
	if d <= 0 {
		return errInvalidExpire
	}
	a.n.set(script.ListenKey(key), "1", d)
	return nil
}

// clearIntent is announce's clearIntent(key): a writer's intent deleted.
func (a announcer) clearIntent(key string) {
	delete(a.n.keys, script.IntentKey(key))
}

// reserve sets key to the mark of a key handed to waiter id for ms, the
// script's argument, whose error it returns as SET's.
func (n *Node) reserve(key, id string, ms luaNumber) error {
	d, err := pxOf(ms)
	if err != nil {
		return err
	}
	n.set(key, script.ReservedFor(id), d)
	return nil
}

// pxOf reads a Lua number passed to SET's PX.
func pxOf(ms luaNumber) (time.Duration, error) {
	if !ms.ok {
		return 0, errNilArgument
	}
	v, err := whole(ms.v, "PX")
	if err != nil || v <= 0 {
		return 0, errInvalidExpire
	}
	return time.Duration(v) * time.Millisecond, nil
}
