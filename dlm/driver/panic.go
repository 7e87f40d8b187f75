package driver

import (
	"fmt"
	"runtime/debug"
)

// PanicError is the error an adapter returns when the client library it
// wraps panicked during a call: a bug or an unsupported use of that library
// (rueidis, for one, panics on a command whose keys fall in different hash
// slots of a cluster) must fail the call on that node, never take the
// program down. Package dlm counts it as the node's failure and wraps it in
// a NodeError; find it with errors.As.
type PanicError struct {
	// Client is the adapter's name: "goredis", "redigo", "rueidis", "valkey".
	Client string
	// Value is what the library panicked with, as text.
	Value string
	// Stack is the stack of the goroutine that panicked, for bug reports.
	// Error leaves it out.
	Stack []byte
}

func (e *PanicError) Error() string {
	return e.Client + ": client library panicked: " + e.Value
}

// Recover turns the value of recover(), when it is not nil, into a
// *PanicError from client, redacting password (when not empty) from its
// text. Adapters call it in a deferred function around every call into their
// client library:
//
//	defer func() {
//		if r := recover(); r != nil {
//			err = driver.Recover(Name, r, password)
//		}
//	}()
func Recover(client string, r any, password string) error {
	v := redactString(fmt.Sprint(r), password)
	return &PanicError{Client: client, Value: v, Stack: debug.Stack()}
}
