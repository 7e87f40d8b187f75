// Package wake wakes package dlm's waiting callers when a lock they wait
// for is released, instead of leaving them to their retry timer.
//
// A release that frees a lock key hands it to the head of the key's line of
// waiters on each node (see package script's line): the key is reserved for
// that waiter, and the node names it on the channel of its manager
// ([script.ManagerChannel]). Each release thus wakes one waiter, in one
// process, whatever the number of processes waiting; the waiter attempts
// once a quorum of nodes named it, when the key is reserved for it on a
// quorum, or a grace after the first did ([Watcher.Wait]). Readers,
// permits' waiters and the observers of an election listen on a key's
// broadcast channel ([script.WakeChannel]) instead, where the releases that
// handed the key to nobody, and an election's grants, are announced to all.
//
// A [Waker] holds one subscription per node that implements
// [driver.Subscriber], shared by every waiter of a dlm Manager, each owned
// by a goroutine (a pump) that keeps it subscribed to the channels waiters
// need and opens it again when it fails. A waiting call registers its keys
// with [Waker.Watch] and waits for its next attempt with [Watcher.Wait].
//
// Whoever may publish on a wake channel may send anything there: every
// payload is read by a bounded parser, which accepts exactly the grammar of
// what the scripts announce on that kind of channel; anything else is
// ignored, counted ([Waker.Ignored]) and logged by its channel and length
// only. A forged message naming a waiter costs it one attempt; a flood of
// them, a bounded rate of attempts ([Watcher.Wait]). A node's confirmation
// of a subscription counts only as the answer to a SUBSCRIBE a pump sent
// it, once: a node that repeats them, or sends them unasked, wakes nobody.
//
// [Announcers] chooses which nodes announce an election's grants: every
// observer listens on every node, so two of them reach all of it.
package wake
