package script

import "github.com/dlmgo/redlock/dlm/driver"

// Shape is how a script's reply is read: the one place where a reply's
// form is told from the script that sends it, so that a request need not
// say it.
type Shape struct {
	// Counter: a positive integer is a yes that carries the node's
	// fencing counter; otherwise an integer equal to the request's wanted
	// reply is a yes.
	Counter bool
	// Ticketed: the reply is a pair, {the reply as above, the waiter's
	// ticket}, which a refusal follows with the PTTL of the key that
	// refused; a plain integer (the SET NX path's) carries neither.
	Ticketed bool
	// Entries: the reply is an array of one integer per entry of the
	// request, each read as a plain integer reply ([ExtendBatch]).
	Entries bool
}

// ShapeOf returns the shape of s's reply: a ticketed pair for the mutex's
// acquires, with a counter for the fenced ones, an integer per entry for
// the batched extension, a plain integer for every other script.
func ShapeOf(s *driver.Script) Shape {
	switch s {
	case FencedAcquire, GuardedFencedAcquire:
		return Shape{Counter: true, Ticketed: true}
	case Acquire, GuardedAcquire:
		return Shape{Ticketed: true}
	case ExtendBatch:
		return Shape{Entries: true}
	}
	return Shape{}
}
