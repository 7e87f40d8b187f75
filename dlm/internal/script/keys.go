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
	// LineSuffix names a fair lock's line: the waiters by ticket.
	LineSuffix = ":line"
	// PlacesSuffix names a fair lock's places: the waiters by the end of
	// their place (node time, ms).
	PlacesSuffix = ":places"
	// TicketsSuffix names a fair lock's counter of the last ticket given.
	TicketsSuffix = ":tickets"
)

// ReadersMark is the value of a lock key held by readers. A writer's secret
// begins with 22 base64url characters, so it is never ReadersMark; and no
// script takes it for a holder's secret, even when ARGV[1] equals it.
const ReadersMark = "dlm:readers"

// FenceKey returns the fencing counter of lock key k.
func FenceKey(k string) string { return k + FenceSuffix }

// GuardKey returns the restart-guard key of lock key k.
func GuardKey(k string) string { return k + GuardSuffix }

// IntentKey returns the key of a waiting writer's intent on lock key k.
func IntentKey(k string) string { return k + IntentSuffix }

// WakeChannel returns the wake channel of lock key k.
func WakeChannel(k string) string { return k + WakeSuffix }

// LineKeys returns the keys of the line of the fair lock whose first lock
// key is k: the line, the places and the tickets, in the order the fair
// scripts take them.
func LineKeys(k string) []string {
	return []string{k + LineSuffix, k + PlacesSuffix, k + TicketsSuffix}
}
