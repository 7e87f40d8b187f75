package dlm

import (
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
	"github.com/dlmgo/redlock/dlm/internal/wake"
)

// The quorum round's names, as the tests of package dlm use them.
type request = round.Request

// quorum is the majority of n nodes.
func quorum(n int) int { return round.Majority(n) }

// workerIdle is how long a node request's worker waits for another.
const workerIdle = round.WorkerIdle

// UncheckedSemaphore returns a semaphore whose permits need q nodes, with
// none of the checks of [Manager.Semaphore]: the tests use it to show that a
// quorum below [SemaphoreQuorum] lets more than limit holders in.
func UncheckedSemaphore(m *Manager, name string, limit, q int) *Semaphore {
	s, err := m.Semaphore(name, limit)
	if err != nil {
		panic(err)
	}
	k := *s.kind
	k.need = q
	s.kind = &k
	return s
}

// Pauses of a node's subscription opened again after a failure (see pump).
const (
	MinReopen = wake.MinReopen
	MaxReopen = wake.MaxReopen
)

// WakeIgnored returns how many malformed wake messages m's waker ignored.
func WakeIgnored(m *Manager) uint64 {
	if m.waits.waker == nil {
		return 0
	}
	return m.waits.waker.Ignored()
}

// A forged call: one of the scripts that compare a lock key's value with
// ARGV[1], a holder's secret, with its keys and arguments for the key k.
type ForgedCall struct {
	Name   string
	Script *driver.Script
	Keys   []string
	Args   []string
}

// ForgedCalls returns the calls of every script that takes a holder's
// secret as ARGV[1] on lock key k, with secret in its place: the tests run
// them with the readers' marker to show that no script takes it for a
// holder's secret.
func ForgedCalls(k, secret string) []ForgedCall {
	const ttl = "60000"
	quiet := script.Flag{}.Arg()
	line := script.LineKeys(k)
	waiter := []string{"", ttl, "0", "100", "0"}
	return []ForgedCall{
		{Name: "acquire", Script: script.Acquire, Keys: append([]string{k}, line...), Args: append(append([]string{secret, ttl}, waiter...), quiet)},
		{Name: "fenced acquire", Script: script.FencedAcquire, Keys: append([]string{k, script.FenceKey(k)}, line...), Args: append(append([]string{secret, ttl, "0"}, waiter...), quiet)},
		{Name: "release", Script: script.Release, Keys: append([]string{k}, line...), Args: []string{secret, "", "0", ttl, ttl, script.ReleaseLock, quiet}},
		{Name: "extend", Script: script.Extend, Keys: []string{k}, Args: []string{secret, ttl}},
		{Name: "raise fence", Script: script.RaiseFence, Keys: []string{k, script.FenceKey(k)}, Args: []string{secret, "99"}},
		{Name: "read fence", Script: script.ReadFence, Keys: []string{k, script.FenceKey(k)}, Args: []string{secret}},
		{Name: "fair acquire", Script: script.Acquire, Keys: append([]string{k}, line...), Args: []string{secret, ttl, "", ttl, "0", "100", "1", quiet}},
		{Name: "failed attempt's release", Script: script.Release, Keys: append([]string{k}, line...), Args: []string{secret, "", "0", ttl, ttl, script.ReleaseAttempt, quiet}},
	}
}

// ReadersMark is the value of a lock key held by readers.
const ReadersMark = script.ReadersMark

// SetContendedFor sets how long a key refused by a node goes through the
// acquire script in m, instead of SET NX (contendedFor, 10 s), so that the
// tests can show what a writer whose retries are further apart meets.
func SetContendedFor(m *Manager, d time.Duration) {
	if m.plain != nil {
		m.plain.contendFor.Store(int64(d))
	}
}

// OpenNodes is Open over nodes the test opened itself: the manager owns
// them and compares their servers as Open does.
func OpenNodes(nodes []driver.Node, opts ...ManagerOption) (*Manager, error) {
	return openNodes(nodes, opts...)
}

// LeadersIgnored returns how many answers to reads of e its reads ignored
// as invalid.
func LeadersIgnored(e *Election) uint64 { return e.ignored.Load() }

// Queued returns how many callers of m wait in its own line for the lock
// key of redis key rkey, or -1 when no caller holds it.
func Queued(m *Manager, rkey string) int { return queued(m, rkey) }

// ObserveBurst is how many reads announcements may start at once on an
// election of n nodes.
func ObserveBurst(n int) int { return observeBurst(n) }
