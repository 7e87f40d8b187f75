package script

import "github.com/dlmgo/redlock/dlm/driver"

// ServerID asks a node which server it is, so that one server named twice
// is not counted twice in a quorum.
//
// KEYS: none. ARGV: none. Reply: the run_id from INFO server, or "" when
// the caller may not read INFO.
var ServerID = driver.NewScript(`
local info = redis.pcall('INFO', 'server')
if type(info) ~= 'string' then return '' end
return string.match(info, 'run_id:(%x+)') or ''
`)

// ServerProbe writes a value through one node for another to read: two
// nodes that said the same run_id (ServerID) are one server only if what
// is written through one is read through the other. A run_id is the
// node's own word, which a hostile node may give for another's; a value
// written under a fresh key cannot be read through a node that does not
// reach the same data.
//
// KEYS: the probe key (ProbeKey). ARGV: the value, its TTL in ms. Reply:
// the value the key held before, or nil.
var ServerProbe = driver.NewScript(`
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return old
`)

// ProbeKey returns the key of a ServerProbe under the manager's prefix,
// with nonce, fresh for each probe. It has no '{', so it is never a lock's
// key (PREFIX{NAME}) nor one beside a lock's.
func ProbeKey(prefix, nonce string) string { return prefix + "server-probe:" + nonce }
