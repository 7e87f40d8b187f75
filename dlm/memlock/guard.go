package memlock

import (
	"strconv"
	"time"
)

// guarded runs body, a guarded script's body, behind the restart guard's
// prelude: keys end with the guard key, which body does not get, and
// args[window] is the guard's window (ms). It returns -1, as the Lua does,
// while the guard holds the node back. n.mu is held.
func (n *Node) guarded(keys, args []string, window int, body func(keys []string) (any, error)) (any, error) {
	if len(keys) == 0 || window >= len(args) {
		return nil, errTooFewArgs
	}
	back, err := n.guard(keys[len(keys)-1], args[window])
	switch {
	case err != nil:
		return nil, err
	case back:
		return int64(-1), nil
	}
	return body(keys[:len(keys)-1])
}

// guard is the restart guard's prelude, step for step: the guard key holds
// the node time (ms) from which the node counts, and every run sets its
// TTL to the time left until then plus the window. A missing guard key is
// computed from the node's uptime as the Lua computes it, with the node
// taken to have been up since the Unix epoch: memlock models no restart
// but [Node.FlushAll], which loses the keys and never holds the node back.
// It reports whether the node is held back. n.mu is held.
func (n *Node) guard(key, window string) (bool, error) {
	w, err := number(window)
	if err != nil {
		return false, err
	}
	now := nowMillis()
	safe := int64(-1)
	if v, ok := n.get(key); ok {
		if safe, err = number(v); err != nil {
			return false, err
		}
	}
	if safe < 0 {
		up := now / 1000 // uptime_in_seconds, since the epoch
		safe = now - (up-1)*1000 + w
	}
	life := time.Duration(max(safe-now, 0)+w) * time.Millisecond
	if life <= 0 {
		return false, errInvalidExpire
	}
	n.set(key, strconv.FormatInt(safe, 10), life)
	return now < safe, nil
}
