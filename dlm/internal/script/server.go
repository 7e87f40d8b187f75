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
