package chaos

import (
	"sync"
	"time"
)

// Grant is one successful acquisition of a lock, as the client saw it. Times
// are offsets from the history's epoch on the monotonic clock.
//
// The client believed it held the lock from Granted (the acquire returned)
// to [Grant.End]: the earlier of the moment it let go (Released) and the end
// of its validity (Until). That is its window; two windows of one key must
// never overlap.
type Grant struct {
	ID     int
	Key    string
	Client string
	// Start is when the acquire call began; Granted when it returned.
	Start, Granted time.Duration
	// Until is the end of the validity, Lock.Until(): at the grant, and
	// after any extension, as it stood when the client let go.
	Until time.Duration
	// Released is when the client stopped acting on the lock and called
	// Unlock, or -1 if it never did (it crashed, or the test ended first).
	Released time.Duration
	// Token is the fencing token, 0 when the locker has none.
	Token uint64
	// Mode is how the grant holds the key: the mutex by default.
	Mode Mode
}

// End is the end of the window in which the client believed it held the
// lock.
func (g *Grant) End() time.Duration {
	if g.Released >= 0 && g.Released < g.Until {
		return g.Released
	}
	return g.Until
}

// History records the grants and releases of many clients at once. Its
// methods are safe for concurrent use.
type History struct {
	epoch  time.Time
	mu     sync.Mutex
	grants []Grant
}

// NewHistory returns an empty history whose epoch is now.
func NewHistory() *History { return &History{epoch: time.Now()} }

// At converts a time from the monotonic clock to an offset in the history.
func (h *History) At(t time.Time) time.Duration { return t.Sub(h.epoch) }

// Time converts an offset in the history back to a time.
func (h *History) Time(d time.Duration) time.Time { return h.epoch.Add(d) }

// Grant records that client obtained key: the acquire call began at start,
// returned at granted, and the lock is valid until until, with a fencing
// token (0 for none). It returns the grant's id, for [History.Release].
func (h *History) Grant(key, client string, start, granted, until time.Time, token uint64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := len(h.grants)
	h.grants = append(h.grants, Grant{
		ID: id, Key: key, Client: client,
		Start: h.At(start), Granted: h.At(granted), Until: h.At(until),
		Released: -1, Token: token,
	})
	return id
}

// Release records that the holder of grant id stopped acting on the lock at
// at, its validity then ending at until (moved by extensions). Record it
// before calling Unlock: from then on the client no longer believes it holds
// the lock.
func (h *History) Release(id int, at, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := &h.grants[id]
	g.Released, g.Until = h.At(at), h.At(until)
}

// SetMode records how grant id holds its key.
func (h *History) SetMode(id int, m Mode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grants[id].Mode = m
}

// Extended records that grant id was extended: its validity now ends at
// until.
func (h *History) Extended(id int, until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grants[id].Until = h.At(until)
}

// Grants returns a copy of the grants recorded so far.
func (h *History) Grants() []Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Grant(nil), h.grants...)
}

// Len returns the number of grants recorded so far.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.grants)
}
