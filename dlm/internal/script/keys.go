package script

// Suffixes of the keys a node keeps beside a lock key: the lock key plus
// the suffix, so that each carries the lock key's hash tag and lives in its
// hash slot.
const (
	// FenceSuffix names a lock key's fencing counter.
	FenceSuffix = ":fence"
	// GuardSuffix names a lock key's restart-guard key.
	GuardSuffix = ":guard"
	// ReadersSuffix names a read-write lock's sorted set of readers'
	// secrets, scored by the end of their lease (ms, by the node's clock).
	ReadersSuffix = ":readers"
	// IntentSuffix names the intent of a writer that waits for the readers
	// to leave: while it exists no new reader is let in.
	IntentSuffix = ":wait"
	// PermitsSuffix names a semaphore's sorted set of permits' secrets,
	// scored by the end of their lease (ms, by the node's clock).
	PermitsSuffix = ":permits"
	// WakeSuffix names a lock key's wake channel, on which grants
	// ([WakeGrant]) and releases ([WakeRelease]) are announced.
	WakeSuffix = ":wake"
	// WaitersSuffix names a lock key's line: its waiters by ticket.
	WaitersSuffix = ":waiters"
	// PlacesSuffix names the end of each place in a lock key's line (node
	// time, ms), by waiter.
	PlacesSuffix = ":waiters:end"
	// ListenSuffix names the mark that someone may listen on a lock key's
	// broadcast channel ([WakeChannel]): a refused reader, or a waiter
	// whose refusal found listeners there (see [Release]).
	ListenSuffix = ":listen"
	// PreviousLineSuffix names the line of the previous release's fair
	// waiters, which listen on the broadcast channel.
	PreviousLineSuffix = ":line"
)

// ReadersMark is the value of a lock key held by readers. A writer's secret
// begins with 22 base64url characters, so it is never ReadersMark; and no
// script takes it for a holder's secret, even when ARGV[1] equals it.
const ReadersMark = "dlm:readers"

// ReservedPrefix begins every value of a lock key that is no holder's
// secret: [ReadersMark], and [ReservedFor]'s mark of a key handed to a
// waiter. No script takes such a value for a secret.
const ReservedPrefix = "dlm:"

// nextPrefix begins the value of a lock key handed to the waiter named
// after it.
const nextPrefix = ReservedPrefix + "next:"

// ReservedFor returns the value of a lock key that a release handed to the
// waiter id: the key is nobody's, and only that waiter may take it, until
// the value expires.
func ReservedFor(id string) string { return nextPrefix + id }

// FenceKey returns the fencing counter of lock key k.
func FenceKey(k string) string { return k + FenceSuffix }

// GuardKey returns the restart-guard key of lock key k.
func GuardKey(k string) string { return k + GuardSuffix }

// IntentKey returns the key of a waiting writer's intent on lock key k.
func IntentKey(k string) string { return k + IntentSuffix }

// ListenKey returns the mark of listeners on lock key k's broadcast
// channel.
func ListenKey(k string) string { return k + ListenSuffix }

// WakeChannel returns the broadcast wake channel of lock key k.
func WakeChannel(k string) string { return k + WakeSuffix }

// LineKeys returns the keys of the line of lock key k: its waiters and the
// ends of their places, in the order the scripts take them.
func LineKeys(k string) []string {
	return []string{k + WaitersSuffix, k + PlacesSuffix}
}

// LinesOf returns the keys of the lines of the lock keys rkeys, one line
// after the other.
func LinesOf(rkeys []string) []string {
	out := make([]string, 0, 2*len(rkeys))
	for _, k := range rkeys {
		out = append(out, LineKeys(k)...)
	}
	return out
}

// ManagerChannel returns the channel of lock key k on which the releases
// name the waiters of the manager whose id is manager ([ManagerIDLen]
// characters): the waiter ids that begin with it.
func ManagerChannel(k, manager string) string { return k + WakeSuffix + ":" + manager }
