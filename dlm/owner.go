package dlm

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
	"github.com/dlmgo/redlock/dlm/internal/script"
)

// MaxOwnerName is the longest name [WithOwner] accepts, in bytes.
const MaxOwnerName = 64

// maxOwnerHost bounds the host name a label carries, in bytes.
const maxOwnerHost = 255

// Owner is a holder's label ([WithOwner]) as the nodes report it: the host
// and process that took the lock, and the name the caller gave. It is the
// nodes' text: a tool that shows it to people escapes what does not print.
type Owner struct {
	Host string
	PID  int
	Name string
}

// String returns the label as "NAME (HOST, pid PID)"; "" for none.
func (o Owner) String() string {
	if o == (Owner{}) {
		return ""
	}
	return fmt.Sprintf("%s (%s, pid %d)", o.Name, o.Host, o.PID)
}

// WithOwner labels the locks taken with it: beside the lock, each node
// keeps the host name, the process id and name, with the lock's TTL, and
// the node's time of the grant. [Manager.Status] and [Manager.List]
// report them (redlock status and ls show them), so that an operator can
// tell who holds a lock, from where and since when. The label is never the
// secret, and anyone who can read the keys can read it.
//
// name is 1 to [MaxOwnerName] bytes of printable UTF-8 (no control or
// format characters); another is [ErrInvalid]. The label applies to locks
// over one key taken by [Manager.Lock], [Manager.TryLock] and [Manager.Do]
// (another call with it is ErrInvalid). Without it (the default) nothing is
// stored and no request is added. With it, an attempt waits for every
// node's answer (within the node timeout) rather than stopping at a
// quorum, each grant costs one more request to the granting nodes, best
// effort (a node that misses it shows no owner; the lock is unaffected),
// and each [Lock.Extend] one more; auto-extension carries the label in its
// batches.
// A labelled lock is not handed over within the manager to a waiting call
// ([Manager.Lock]), whose label may differ.
func WithOwner(name string) Option {
	label, err := ownerLabel(name)
	o := &ownerOption{label: label, err: err}
	return optionFunc(func(c *config) { c.owner = o })
}

// ownerOption is what [WithOwner] sets: the label, or the name's fault.
// A pointer keeps the config of the calls without it one word larger only.
type ownerOption struct {
	label string
	err   error
}

// ownerLabel returns the label of name: the host, the process id and
// name, separated by spaces.
func ownerLabel(name string) (string, error) {
	switch {
	case name == "" || len(name) > MaxOwnerName:
		return "", fmt.Errorf("%w: owner name of %d bytes: want 1 to %d", ErrInvalid, len(name), MaxOwnerName)
	case !printableText(name):
		return "", fmt.Errorf("%w: owner name %q: want printable text, without control characters", ErrInvalid, name)
	}
	return hostLabel() + " " + strconv.Itoa(os.Getpid()) + " " + name, nil
}

// hostLabel is this machine's host name as labels carry it, read once:
// bounded, with anything but printable characters other than a space
// replaced by '?'; "?" when unknown.
var hostLabel = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "?"
	}
	if len(h) > maxOwnerHost {
		h = h[:maxOwnerHost]
	}
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, h)
})

// printableText reports whether s is valid UTF-8 of printable characters,
// spaces included.
func printableText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// parseOwner reads a label as a node stored it ([ownerLabel]); the zero
// Owner when it is not one. The text is untrusted: bounded by the script,
// and split, never evaluated.
func parseOwner(label string) Owner {
	host, rest, ok1 := strings.Cut(label, " ")
	pid, name, ok2 := strings.Cut(rest, " ")
	n, err := strconv.Atoi(pid)
	if !ok1 || !ok2 || err != nil || n < 0 || host == "" || name == "" {
		return Owner{}
	}
	return Owner{Host: host, PID: n, Name: name}
}

// nodeTime returns the time of ms milliseconds of a node's clock since the
// Unix epoch; the zero Time for none.
func nodeTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// storeOwner stores the label beside the lock key rkey on the nodes that
// granted the attempt whose secret it is, each within the node timeout
// ([script.SetOwner]). It is best effort: the attempt does not count it.
func (q *quorumRounds) storeOwner(ctx context.Context, cfg *config, rkey, secret string, granted uint64) {
	q.ownerRound(ctx, cfg, script.SetOwner, rkey, []string{secret, cfg.owner.label}, granted)
}

// touchOwner gives the owner key of l the lock key's TTL on the nodes,
// after an Extend ([script.TouchOwner]); best effort.
func (l *Lock) touchOwner(ctx context.Context) {
	l.m.rounds.ownerRound(ctx, &l.cfg, script.TouchOwner, l.rkeys[0], []string{l.secret}, ^uint64(0))
}

// ownerRound runs s on the nodes in mask, the lock key rkey and its owner
// key its KEYS.
func (q *quorumRounds) ownerRound(ctx context.Context, cfg *config, s *driver.Script, rkey string, args []string, mask uint64) {
	only := make([]bool, len(q.nodes))
	for i := range only {
		only[i] = i >= 64 || mask&(1<<i) != 0
	}
	req := &round.Request{Op: opOwner, Script: s, Keys: []string{rkey, script.OwnerKey(rkey)}, Args: args,
		Want: 1, Timeout: cfg.timeout(), Cap: cfg.timeoutCap(), Only: only}
	q.Poll(ctx, req)
}

// opOwner names the requests that store or extend a holder's label.
const opOwner = "owner"
