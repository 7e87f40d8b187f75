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
	flags  = [2]any{"0", "1"}
)

// Arg returns a as an argument, without allocating for the flags "0" and
// "1".
func Arg(a string) any {
	switch a {
	case "0":
		return flags[0]
	case "1":
		return flags[1]
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
