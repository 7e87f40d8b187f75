package dlm

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Handle is what another process needs to take over a held lock: its keys,
// its secret, the end of its validity, its TTL and its fencing token. Whoever has the Handle can
// release or extend the lock, so pass it only over trusted channels. It
// encodes as JSON, secret included; printed or logged, it never shows its
// secret (see [Handle.String] and [Handle.LogValue]).
type Handle struct {
	Keys   []string `json:"keys"`
	Secret string   `json:"secret"`
	// Until is the end of the validity, as [Lock.Until], but by the wall
	// clock: the monotonic clock of one process means nothing in another
	// (see [Lock.Handle] and [Manager.Resume]).
	Until time.Time `json:"until"`
	// TTL is the lock's TTL ([WithTTL]), which [Manager.Resume] must be
	// called with; in JSON, in nanoseconds. Handles of v0.1.0 have none,
	// and resume with the TTL of the call.
	TTL time.Duration `json:"ttl,omitempty"`
	// Token is the lock's fencing token ([Lock.Token]), 0 without fencing.
	// Its JSON name stays "fence", which Handles of v0.1.0 carry.
	// [Manager.Resume] believes it only once the nodes confirm it.
	Token uint64 `json:"fence,omitempty"`
	// Lease is "read" for a read lock, "permit" for a semaphore's permit,
	// and empty for the mutex; a permit also carries its semaphore's Limit
	// and Quorum.
	Lease  string `json:"lease,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Quorum int    `json:"quorum,omitempty"`
}

// redacted stands for a Handle's secret wherever the Handle is printed or
// logged.
const redacted = "[redacted]"

var (
	_ fmt.Stringer   = Handle{}
	_ fmt.GoStringer = Handle{}
	_ fmt.Formatter  = Handle{}
	_ slog.LogValuer = Handle{}
)

// shownSecret is what a printed Handle shows for its secret: [redacted],
// or nothing when it has none.
func (h Handle) shownSecret() string {
	if h.Secret == "" {
		return ""
	}
	return redacted
}

// String describes h with its keys, Until and the other fields that are
// set, and "[redacted]" in place of its secret.
func (h Handle) String() string {
	var b strings.Builder
	b.WriteString("Handle{Keys: [")
	for i, k := range h.Keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(k))
	}
	fmt.Fprintf(&b, "], Secret: %s, Until: %s", h.shownSecret(), h.Until.Round(0).Format(time.RFC3339Nano))
	if h.TTL != 0 {
		fmt.Fprintf(&b, ", TTL: %v", h.TTL)
	}
	if h.Token != 0 {
		fmt.Fprintf(&b, ", Token: %d", h.Token)
	}
	if h.Lease != "" {
		fmt.Fprintf(&b, ", Lease: %q", h.Lease)
	}
	if h.Limit != 0 || h.Quorum != 0 {
		fmt.Fprintf(&b, ", Limit: %d, Quorum: %d", h.Limit, h.Quorum)
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is the Go syntax of h, as %#v prints it, with "[redacted]" in
// place of its secret.
func (h Handle) GoString() string {
	return fmt.Sprintf("dlm.Handle{Keys:%#v, Secret:%q, Until:%#v, TTL:%#v, Token:%#v, Lease:%#v, Limit:%#v, Quorum:%#v}",
		h.Keys, h.shownSecret(), h.Until.Round(0), h.TTL, h.Token, h.Lease, h.Limit, h.Quorum)
}

// Format prints h for every verb of package fmt as [Handle.String] (with
// [Handle.GoString] for %#v), so that no verb reaches the secret field.
func (h Handle) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, h.GoString())
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), h.String())
}

// LogValue logs h as a group of its keys, its Until and "[redacted]" in
// place of its secret (with its TTL, its token, as "fence", and its lease
// when set), for [log/slog].
func (h Handle) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Any("keys", h.Keys),
		slog.String("secret", h.shownSecret()),
		slog.Time("until", h.Until.Round(0)),
	}
	if h.TTL != 0 {
		attrs = append(attrs, slog.Duration("ttl", h.TTL))
	}
	if h.Token != 0 {
		attrs = append(attrs, slog.Uint64("fence", h.Token))
	}
	if h.Lease != "" {
		attrs = append(attrs, slog.String("lease", h.Lease))
	}
	if h.Limit != 0 || h.Quorum != 0 {
		attrs = append(attrs, slog.Int("limit", h.Limit), slog.Int("quorum", h.Quorum))
	}
	return slog.GroupValue(attrs...)
}
