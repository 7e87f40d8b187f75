// Package wake wakes package dlm's waiting callers when a lock they wait
// for is released, instead of leaving them to their retry timer.
//
// The scripts of package script announce grants and releases on a lock
// key's wake channel ([script.WakeChannel]), and so does the in-memory node
// of package memlock. A [Waker] holds one subscription per node that
// implements [driver.Subscriber], shared by every waiter of a dlm Manager,
// each owned by a goroutine (a pump) that keeps it subscribed to the
// channels waiters need and opens it again when it fails. A waiting call
// registers its keys with [Waker.Watch] and waits for its next attempt
// with [Watcher.Wait]: when its retry timer fires, or when a release is
// announced — after a wait spread over the clients that heard it too.
//
// Whoever may publish on a wake channel may send anything there: every
// payload is read by a bounded parser, which accepts exactly the grammar
// of what the scripts announce; anything else is ignored, counted
// ([Waker.Ignored]) and logged by its channel and length only.
//
// [Announcers] chooses which nodes announce: every waiter listens on every
// node, so two of them reach all of it.
package wake
