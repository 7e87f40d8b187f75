package redigo

import (
	"strconv"
	"sync"

	"github.com/dlmgo/redlock/dlm/driver"
)

// Turning a string into an interface allocates on every call; EVALSHA's
// first two arguments are nearly always the same few values, made once.
var (
	numKeysArgs = func() (a [16]any) {
		for i := range a {
			a[i] = strconv.Itoa(i)
		}
		return a
	}()
	hashArgs sync.Map // *driver.Script -> any(its Hash)
)

// flagArgs are the one-character arguments the scripts take as flags.
var flagArgs = [2]any{"0", "1"}

// arg returns a as an argument, without allocating for a flag.
func arg(a string) any {
	switch a {
	case "0":
		return flagArgs[0]
	case "1":
		return flagArgs[1]
	}
	return a
}

// numKeysArg returns EVALSHA's numkeys argument for n keys.
func numKeysArg(n int) any {
	if n < len(numKeysArgs) {
		return numKeysArgs[n]
	}
	return strconv.Itoa(n)
}

// hashArg returns s.Hash as EVALSHA's argument.
func hashArg(s *driver.Script) any {
	if h, ok := hashArgs.Load(s); ok {
		return h
	}
	h, _ := hashArgs.LoadOrStore(s, any(s.Hash))
	return h
}
