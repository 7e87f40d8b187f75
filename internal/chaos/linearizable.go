package chaos

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// The lock as a linearizable object, for porcupine: a mutex whose state is
// its holder and the largest fencing token granted so far.
//
// Each grant becomes two operations. The acquire is called when the acquire
// call began and returns when it returned, with the token as output; the
// release is an instant at the end of the window (the earlier of the
// client's letting go and the validity's end). A mutex history is
// linearizable exactly when no two windows overlap: an acquire must take
// effect before it returns, so the other holder's release must come before
// that — and so the verdict must match [Check]'s, which the tests
// cross-check. Windows that are empty are left out, as Check leaves them.
//
// Failed acquires are not operations: a lease lock may fail under faults
// whatever its state, so they constrain nothing.

type mutexState struct {
	holder int // grant id, or -1 when free
	token  uint64
}

type mutexInput struct {
	key     string
	grant   int
	acquire bool
}

var mutexModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		var keys []string
		byKey := make(map[string][]porcupine.Operation)
		for _, op := range history {
			k := op.Input.(mutexInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return mutexState{holder: -1} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		s, in := state.(mutexState), input.(mutexInput)
		if in.acquire {
			tok := output.(uint64)
			if s.holder != -1 || (tok != 0 && tok <= s.token) {
				return false, s
			}
			return true, mutexState{holder: in.grant, token: max(s.token, tok)}
		}
		if s.holder != in.grant {
			return false, s
		}
		return true, mutexState{holder: -1, token: s.token}
	},
	Hash: func(state interface{}) uint64 {
		s := state.(mutexState)
		return uint64(s.holder+1)*0x9e3779b97f4a7c15 ^ s.token
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(mutexInput)
		if in.acquire {
			return fmt.Sprintf("acquire(%s) #%d -> token %d", in.key, in.grant, output.(uint64))
		}
		return fmt.Sprintf("release(%s) #%d", in.key, in.grant)
	},
	DescribeState: func(state interface{}) string {
		s := state.(mutexState)
		if s.holder < 0 {
			return fmt.Sprintf("free (token %d)", s.token)
		}
		return fmt.Sprintf("held by #%d (token %d)", s.holder, s.token)
	},
}

// Operations turns grants into porcupine operations on the mutex model.
func Operations(grants []Grant) []porcupine.Operation {
	ops := make([]porcupine.Operation, 0, 2*len(grants))
	for _, g := range grants {
		end := g.End()
		if end <= g.Granted {
			continue
		}
		ops = append(ops,
			porcupine.Operation{
				Input: mutexInput{key: g.Key, grant: g.ID, acquire: true}, Output: g.Token,
				Call: int64(g.Start), Return: int64(g.Granted),
			},
			porcupine.Operation{
				Input: mutexInput{key: g.Key, grant: g.ID}, Output: uint64(0),
				Call: int64(end), Return: int64(end),
			})
	}
	return ops
}

// CheckLinearizable checks the grants with porcupine against the mutex
// model, giving up after timeout (0: never). It returns porcupine's verdict
// and the number of operations checked.
func CheckLinearizable(grants []Grant, timeout time.Duration) (porcupine.CheckResult, int) {
	ops := Operations(grants)
	return porcupine.CheckOperationsTimeout(mutexModel, ops, timeout), len(ops)
}
