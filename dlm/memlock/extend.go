package memlock

import (
	"errors"
	"strconv"

	"github.com/dlmgo/redlock/dlm/internal/script"
)

// errBatch is the failure of a batched extension whose arguments do not
// describe its keys, as the Lua would fail on them.
var errBatch = errors.New("ERR memlock: the batched extension's arguments do not match its keys")

// extendBatch is the batched extension ([script.ExtendBatch]): each entry
// of each group (a kind, a TTL, a count, then each entry's secret)
// extended as the script of its kind would extend it alone, on its own
// keys taken from KEYS in turn. The reply has an integer per entry. n.mu is
// held, so the batch is one atomic step, as the script is on Redis.
func (n *Node) extendBatch(keys, args []string) (any, error) {
	var out []any
	for len(args) > 0 {
		if len(args) < script.BatchHeader {
			return nil, errBatch
		}
		kind, ttl := args[0], args[1]
		count, err := strconv.Atoi(args[2])
		if err != nil || count < 0 || count > len(args)-script.BatchHeader {
			return nil, errBatch
		}
		secrets := args[script.BatchHeader : script.BatchHeader+count]
		args = args[script.BatchHeader+count:]
		for _, secret := range secrets {
			var (
				own []string
				r   any
				err error
			)
			switch kind {
			case script.BatchRead:
				if own, keys, err = splitKeys(keys, 2); err == nil {
					r, err = n.readExtend(own, []string{secret, ttl})
				}
			case script.BatchPermit:
				if own, keys, err = splitKeys(keys, 1); err == nil {
					r, err = n.permitExtend(own, []string{secret, ttl})
				}
			case script.BatchLeader:
				if own, keys, err = splitKeys(keys, 2); err == nil {
					r, err = n.extendLeader(own, secret, ttl)
				}
			default:
				k, perr := strconv.Atoi(kind)
				if perr != nil || k < 1 {
					return nil, errBatch
				}
				if own, keys, err = splitKeys(keys, k); err == nil {
					r, err = n.extend(own, []string{secret, ttl})
				}
			}
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	if out == nil {
		out = []any{}
	}
	return out, nil
}

// splitKeys splits the first k of keys off the rest.
func splitKeys(keys []string, k int) (own, rest []string, err error) {
	if k > len(keys) {
		return nil, nil, errBatch
	}
	return keys[:k], keys[k:], nil
}
