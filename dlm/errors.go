package dlm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/dlmgo/redlock/dlm/internal/invalid"
	"github.com/dlmgo/redlock/dlm/internal/round"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrNotObtained means the lock is held by someone else: at least one
	// node holds the key under another holder's secret, so no quorum was reached.
	ErrNotObtained = errors.New("dlm: lock not obtained")
	// ErrLockLost means an Extend or Unlock found that the lock had expired
	// or no longer holds a quorum under this holder's secret.
	ErrLockLost = errors.New("dlm: lock lost")
	// ErrNotHeld means the Lock was already released by this holder: a
	// second [Lock.Unlock], or an [Lock.Extend] after Unlock. It is a
	// mistake in the caller's code, not a loss, and does not match
	// [ErrLockLost], so that a deferred Unlock after an explicit one
	// raises no false alarm.
	ErrNotHeld = errors.New("dlm: lock not held (already unlocked)")
	// ErrUnavailable means too many nodes failed (errors or timeouts) for a
	// quorum to be possible, whoever holds the lock.
	ErrUnavailable = errors.New("dlm: quorum of nodes unavailable")
	// ErrInvalid is wrapped by every error for bad input: options, keys,
	// node lists. The operation made no round trip — with three exceptions:
	// a [NodeError] matches it when the node refused keys of several hash
	// slots (CROSSSLOT), which a Redis Cluster that the manager could not
	// tell was one ([driver.Sharded]) does; when the node redirected a key
	// to another server (MOVED, ASK), which a member of a Redis Cluster
	// opened as a single server does (open it with ?cluster=true); and when
	// the node turned out, at its first contact, to be the same server as
	// another node of the manager ([New]). Like [ErrPermission], such
	// refusals stop [Manager.Lock] from retrying once they leave no quorum
	// possible.
	//
	// A bad node URL is bad input too: every error wrapping
	// [driver.ErrBadURL], from [Open], [OpenNode], a driver's Open or
	// [driver.ParseURL], matches ErrInvalid; so does the URL of a database
	// the server lacks (/99 of a server with 16), which Open finds when
	// it connects.
	ErrInvalid = invalid.Err
	// ErrUnknownDriver means a node URL named a driver that is not
	// registered, or named none while several are.
	ErrUnknownDriver = errors.New("dlm: unknown driver")
	// ErrClosed means the Manager was closed.
	ErrClosed = errors.New("dlm: manager closed")
	// ErrPermission means a node refused a request for authentication or
	// authorization: a wrong password (WRONGPASS), none given (NOAUTH), or
	// an ACL user lacking a command, key or channel the library needs
	// (NOPERM). It is a configuration error, not contention: it is never
	// reported as [ErrNotObtained] alone, and [Manager.Lock] stops retrying
	// once such failures leave no quorum possible.
	ErrPermission = errors.New("dlm: node refused access (check the password and ACL rules)")
	// ErrRenewalBehind is the Err of an [EventRenewal] whose round of
	// auto-extensions started late — at least one extension started after
	// more than half the margin its schedule left it before its lock's
	// loss guard — or whose extensions a node did not keep up with: a
	// batch waited for it more than half the time its first lock had to be
	// sent, or went unanswered until its deadline. The locks still hold,
	// but the process, or the nodes, do not keep up with the extensions it
	// owes: if it goes on, locks will be lost, the nearest to the end of
	// their validity last extended first. Give the process, or the nodes,
	// more CPU, hold fewer locks per Manager, or lengthen the TTL.
	ErrRenewalBehind = errors.New("dlm: auto-extension falling behind")
	// ErrOverloaded means the Manager cannot keep one more auto-extended
	// lock extended: [Manager.Lock], [Manager.TryLock], their multi-key
	// forms and [Manager.Do] with [WithAutoExtend] refuse the lock with it,
	// before they send anything to the nodes, when the renewals the
	// Manager owes would exceed a safe share of what it measured it can
	// renew (see [WithAutoExtend]). Nothing was taken; try again later,
	// elsewhere, or with a longer TTL. A held lock that the Manager had to
	// let go of because it could no longer renew everything it holds (the
	// nodes slowed down after it was admitted) is lost with an error
	// wrapping both ErrOverloaded and [ErrLockLost]: the newest such locks
	// go first.
	ErrOverloaded = errors.New("dlm: manager overloaded: no capacity to keep another auto-extended lock")
)

// permissionCodes are the Redis error codes that mean a configuration
// error rather than a failure worth retrying.
var permissionCodes = []string{"NOPERM ", "WRONGPASS ", "NOAUTH "}

// scriptRefusals start the errors Redis gives when a script calls a command,
// key or channel its caller's ACL does not allow (7.0, then 7.2 and later):
// not NOPERM, but refusals all the same.
var scriptRefusals = []string{"ERR The user executing the script can't ", "ERR ACL failure in script: "}

// isPermission reports whether err is, or wraps, a Redis error reply that
// refuses access. Adapters return replies as errors whose message starts
// with the code; wrappers may put text before it.
func isPermission(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, list := range [][]string{permissionCodes, scriptRefusals} {
		for _, p := range list {
			if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p) {
				return true
			}
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return isPermission(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if isPermission(e) {
				return true
			}
		}
	}
	return false
}

// crossSlotErrors are found in the errors of a node that refused a script
// whose keys fall in different hash slots of a Redis Cluster: the CROSSSLOT
// reply, the error of a script that reached a key another master owns, and
// the panic of rueidis' command builder (recovered by the adapter).
var crossSlotErrors = []string{
	"CROSSSLOT ",
	"attempted to access a non local key in a cluster node",
	"multi key command with different key slots",
}

// isCrossSlot reports whether err is, or wraps, a refusal of keys in
// different hash slots: retrying cannot help.
func isCrossSlot(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, p := range crossSlotErrors {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, " "+p) {
			return true
		}
	}
	return false
}

// NodeError is one node's failure: an error reply, a timeout, a refused
// connection. Node is the node's address, never its password. Find it in any
// error the package returns with errors.As.
//
// Err never shows the request's arguments — a lock's secret, a waiter's id,
// a leader's value — though a node may quote them (Redis does, for a
// command renamed away): they are removed from the node's text, and from
// every error it wraps, before the NodeError is made, and an error that
// quoted one is not kept, so neither Unwrap nor errors.As reaches it.
// errors.Is and errors.As still find what the failure wrapped that quoted
// none: a context's error, a *net.OpError, a [driver.PanicError].
type NodeError struct {
	Node string
	Err  error
}

func (e *NodeError) Error() string { return "node " + e.Node + ": " + e.Err.Error() }

// Unwrap returns the node's own error, so errors.Is(err,
// context.DeadlineExceeded) sees a node timeout.
func (e *NodeError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrPermission] and the node refused access,
// or [ErrInvalid] and the node refused keys of several hash slots, is the
// same server as another node of the manager, or is a member of a Redis
// Cluster opened as a single server (it answered MOVED or ASK).
func (e *NodeError) Is(target error) bool {
	switch target {
	case ErrPermission:
		return isPermission(e.Err)
	case ErrInvalid:
		var dup *sameServerError
		var moved *redirectError
		return isCrossSlot(e.Err) || errors.As(e.Err, &dup) || errors.As(e.Err, &moved)
	}
	return false
}

// QuorumError reports a lock operation that did not reach a quorum, with the
// vote: how many nodes said yes, how many said no (another holder has the
// key, or this holder's key is gone), and how many failed. The vote stops
// counting once the outcome is certain, so the three may add up to fewer
// than Nodes. Its node failures are a *multierror.Error of [*NodeError] in
// the order the nodes were given.
//
// A node that timed out makes errors.Is(err, context.DeadlineExceeded) true
// even though the caller's context is live: tell them apart with
// [ErrUnavailable] or the caller's ctx.Err().
//
// errors.Is(err, ErrUnavailable) holds when failures alone made a quorum
// impossible; otherwise errors.Is(err, ErrNotObtained) holds for an acquire
// and errors.Is(err, ErrLockLost) for an extend, a release or a resume.
type QuorumError struct {
	Op      string // "lock", "extend", "unlock", or "resume" for a fenced Handle's read
	Key     string // the lock's key as the caller gave it
	Nodes   int
	Quorum  int
	For     int
	Against int
	Failed  int
	// Expired is set when a quorum said yes but too late: the round trip
	// used up the validity.
	Expired bool
	// Err holds the node failures, or is nil when no node failed.
	Err error
	// what names the kind of lock in the message: "read lock" or
	// "permit", "" for the mutex, whose operation names it.
	what string
}

func (e *QuorumError) Error() string {
	s := fmt.Sprintf("dlm: %s: %s: %d for, %d against, %d failed of %d nodes (quorum %d)",
		e.subject(), e.outcome(), e.For, e.Against, e.Failed, e.Nodes, e.Quorum)
	if e.Expired {
		s += "; validity used up before the quorum answered"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// subject is what the message is about: the operation and the key, with
// the kind of lock for a read lock or a permit ("permit \"encoders\"",
// "extend permit \"encoders\"").
func (e *QuorumError) subject() string {
	switch {
	case e.what == "":
		return fmt.Sprintf("%s %q", e.Op, e.Key)
	case e.Op == opLock:
		return fmt.Sprintf("%s %q", e.what, e.Key)
	default:
		return fmt.Sprintf("%s %s %q", e.Op, e.what, e.Key)
	}
}

func (e *QuorumError) outcome() string {
	switch {
	case e.unavailable():
		return "nodes unavailable"
	case e.Op == opLock:
		return "not obtained"
	case e.what != "":
		return e.what + " lost"
	default:
		return "lock lost"
	}
}

func (e *QuorumError) unavailable() bool { return e.Failed > e.Nodes-e.Quorum }

// misconfigured reports whether nodes refusing access, or failing as
// ErrInvalid (keys of several hash slots, a redirection to another cluster
// member, a duplicate server), alone make a quorum impossible, so that
// retrying cannot help.
func (e *QuorumError) misconfigured() bool {
	merr, ok := e.Err.(*multierror.Error)
	if !ok {
		return false
	}
	refused := 0
	for _, err := range merr.Errors {
		if errors.Is(err, ErrPermission) || errors.Is(err, ErrInvalid) {
			refused++
		}
	}
	return refused > e.Nodes-e.Quorum
}

// Is reports whether target is the sentinel this outcome stands for.
func (e *QuorumError) Is(target error) bool {
	switch target {
	case ErrUnavailable:
		return e.unavailable()
	case ErrNotObtained:
		return e.Op == opLock && !e.unavailable()
	case ErrLockLost:
		return e.Op != opLock && !e.unavailable()
	}
	return false
}

// Unwrap returns the node failures, so errors.As finds each [*NodeError].
func (e *QuorumError) Unwrap() error { return e.Err }

// waitError is the error of a blocking acquire ([Manager.Lock],
// [Manager.RLock], [Semaphore.Acquire] ...) that stopped waiting because its
// context ended or the Manager closed. It wraps why, ctx.Err() or
// [ErrClosed], and the [*QuorumError] of the last attempt that completed,
// so that the error keeps that attempt's class: [ErrNotObtained] when
// another holder had the lock, [ErrUnavailable] when too many nodes failed.
// An attempt that the context cut short, before its outcome was known,
// does not count; when none completed, the error wraps why alone.
//
// A Lock call queued behind the Manager's earlier callers (queued) made no
// attempt of its own: its error has the class of what kept it waiting, the
// last attempt completed by the caller that competed on the nodes for it,
// or, while a caller of the Manager held the lock (held), [ErrNotObtained]
// without a vote.
type waitError struct {
	what     string // "lock", "read lock" or "permit"
	key      string
	attempts int
	why      error
	last     *QuorumError // nil when no attempt completed
	queued   bool
	held     bool
}

func (e *waitError) Error() string {
	if e.queued {
		s := fmt.Sprintf("dlm: %s %q: stopped waiting behind this manager's earlier callers: %v", e.what, e.key, e.why)
		switch {
		case e.held:
			return s + "; a caller of this manager holds the lock"
		case e.last != nil:
			return s + "; last complete attempt of the caller competing for it: " + e.last.Error()
		}
		return s + "; no attempt completed"
	}
	plural := "s"
	if e.attempts == 1 {
		plural = ""
	}
	s := fmt.Sprintf("dlm: %s %q: stopped waiting after %d attempt%s: %v", e.what, e.key, e.attempts, plural, e.why)
	if e.last == nil {
		return s + "; no attempt completed"
	}
	return s + "; last complete attempt: " + e.last.Error()
}

// Unwrap returns why and, if an attempt completed, the last one's error,
// or [ErrNotObtained] when a caller of this manager held the lock.
func (e *waitError) Unwrap() []error {
	switch {
	case e.last != nil:
		return []error{e.why, e.last}
	case e.held:
		return []error{e.why, ErrNotObtained}
	}
	return []error{e.why}
}

// attemptStopped is the error of an attempt at the lock what of key whose
// vote v fell short, with qerr, while ctx ended. It wraps ctx.Err() and,
// when the vote completed before ctx ended, qerr: that outcome stands. A
// vote that ctx cut short is only quoted, so that the nodes it cut off do
// not pass for failed ones.
func attemptStopped(ctx context.Context, what, key string, v *round.Vote, qerr *QuorumError) error {
	if v.Cut {
		return fmt.Errorf("dlm: %s %q: %w (%v)", what, key, ctx.Err(), qerr)
	}
	return fmt.Errorf("dlm: %s %q: %w: %w", what, key, ctx.Err(), qerr)
}
