// Package evalargs makes the fixed arguments of EVALSHA for the backends
// whose clients take a command as a []any: the script's hash, the number of
// keys and the one-character flags the scripts take.
//
// Turning a string into an interface allocates on every call; these
// arguments are nearly always the same few values, made once here, so that a
// script call allocates nothing for them.
//
// The backend modules import this package across modules, and a user's
// build may pair a backend with a later version of the core (the one module
// github.com/dlmgo/redlock that holds it): change its API only as that of a
// public package, in a compatible way.
package evalargs

import (
	"strconv"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

var (
	numKeys = func() (a [16]any) {
		for i := range a {
			a[i] = strconv.Itoa(i)
		}
		return a
	}()
	hashes sync.Map // *driver.Script -> any(its Hash)
	// common are the arguments the scripts take that nearly always hold
	// one of a few short values: the flags "0" and "1", announce's flag of
	// each mode, with or without a writer's wait, and how a release runs.
	common = func() map[string]any {
		m := map[string]any{}
		for _, a := range []string{"0", "1", "2", "3", "0w", "1w", "2w", "3w", "r", "f", "k"} {
			m[a] = a
		}
		return m
	}()
)

// Arg returns a as an argument, without allocating for the flags "0" and
// "1", announce's flags ("0" to "3", each also followed by "w") and a
// release's how ("r", "f", "k").
func Arg(a string) any {
	if len(a) <= 2 {
		if v, ok := common[a]; ok {
			return v
		}
	}
	return a
}

// NumKeys returns EVALSHA's numkeys argument for n keys, without allocating
// for fewer than 16.
func NumKeys(n int) any {
	if n < len(numKeys) {
		return numKeys[n]
	}
	return strconv.Itoa(n)
}

// Hash returns s.Hash as EVALSHA's argument, without allocating after the
// first call for s.
func Hash(s *driver.Script) any {
	if h, ok := hashes.Load(s); ok {
		return h
	}
	h, _ := hashes.LoadOrStore(s, any(s.Hash))
	return h
}

// Command returns head and then EVALSHA's arguments for s, keys and args:
// the hash, the number of keys, the keys and the arguments, in one slice.
// Replacing the hash by s.Source makes it EVAL's.
func Command(head []any, s *driver.Script, keys, args []string) []any {
	cmd := make([]any, 0, len(head)+2+len(keys)+len(args))
	cmd = append(cmd, head...)
	cmd = append(cmd, Hash(s), NumKeys(len(keys)))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	for _, a := range args {
		cmd = append(cmd, Arg(a))
	}
	return cmd
}
