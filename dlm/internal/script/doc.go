// Package script is the single definition of package dlm's Lua scripts and
// of the names of the keys and channels they touch: every script dlm sends
// to a node, the suffixes of the keys kept beside a lock key, the readers'
// mark, the payloads announced on a wake channel and the flag that asks for
// them. Package dlm builds its requests from it, and the in-memory node of
// package memlock recognises the scripts it runs in Go by identity with
// these values (a *driver.Script pointer compared with ==), so neither
// keeps a copy of any of it.
//
// Every script takes the lock's keys as KEYS and the holder's secret as
// ARGV[1]; each one's doc comment states its KEYS, its ARGV and its replies.
// A node's answer is all or nothing for the keys it is given, so a lock over
// several keys is counted per node. Scripts that announce grants and
// releases take announce's flag as their last argument (a [Flag]).
package script
