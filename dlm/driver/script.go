package driver

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
)

// Script is a Lua script with its SHA-1 digest, computed once, so nodes can
// run it by EVALSHA and fall back to EVAL.
type Script struct {
	// Source is the Lua text.
	Source string
	// Hash is the lower-case hex SHA-1 of Source, as SCRIPT LOAD returns it.
	Hash string
}

// NewScript returns a Script for src with its digest computed.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{Source: src, Hash: hex.EncodeToString(sum[:])}
}

// IsNoScript reports whether err is, or wraps, the reply a node gives to
// EVALSHA for a script it has not cached. Adapters use it to decide when to
// fall back to EVAL.
func IsNoScript(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if strings.HasPrefix(err.Error(), "NOSCRIPT") {
			return true
		}
	}
	return false
}
