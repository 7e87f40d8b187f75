package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// statusReport is what status prints: with --json, as this JSON object.
type statusReport struct {
	// Key is the lock's key as given.
	Key string `json:"key"`
	// Held reports whether a quorum of nodes holds the key: someone holds
	// the lock.
	Held bool `json:"held"`
	// HeldOn counts the nodes that hold the key.
	HeldOn int `json:"held_on"`
	// Failed counts the nodes that did not answer.
	Failed int `json:"failed"`
	// Quorum is the number of nodes that make a majority.
	Quorum int `json:"quorum"`
	// Nodes has an entry for each node, in the order of --nodes.
	Nodes []nodeReport `json:"nodes"`
}

// nodeReport is one node's part of a [statusReport].
type nodeReport struct {
	// Node is the node's address, host:port.
	Node string `json:"node"`
	// Held reports whether the node holds the key.
	Held bool `json:"held"`
	// Reserved reports that no one holds the key on the node, but a release
	// handed it to a waiting caller, whose next attempt takes it (for at
	// most two node timeouts).
	Reserved bool `json:"reserved,omitempty"`
	// TTLMillis is the key's remaining time to live in milliseconds, or 0.
	TTLMillis int64 `json:"ttl_ms"`
	// Fence is the key's fencing counter on the node, or 0.
	Fence uint64 `json:"fence"`
	// Owner is the holder's label (dlm.WithOwner), when it has one.
	Owner *ownerReport `json:"owner,omitempty"`
	// Error is why the node did not answer, or "". In the JSON, the
	// characters of a node's reply that do not print are \u escapes.
	Error string `json:"error,omitempty"`
}

// ownerReport is a holder's label, and when the node granted it the lock.
type ownerReport struct {
	Host string `json:"host"`
	PID  int    `json:"pid"`
	Name string `json:"name"`
	// Since is the grant's time by the node's clock, RFC 3339 with ms.
	Since string `json:"since"`
}

// newOwnerReport returns the report of o, granted at since; nil for no
// label.
func newOwnerReport(o dlm.Owner, since time.Time) *ownerReport {
	if o == (dlm.Owner{}) {
		return nil
	}
	return &ownerReport{Host: o.Host, PID: o.PID, Name: o.Name, Since: since.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
}

// String returns the owner as the tables show it; "-" for none. The text is
// the nodes': it goes through printable.
func (o *ownerReport) String() string {
	if o == nil {
		return "-"
	}
	return printable(fmt.Sprintf("%s (%s, pid %d)", o.Name, o.Host, o.PID))
}

// since returns the grant time as the tables show it: the time and how long
// ago; "-" for none.
func (o *ownerReport) since(now time.Time) string {
	if o == nil {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, o.Since)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.Local().Format("15:04:05"), now.Sub(t).Round(time.Second))
}

// statusMain is "redlock status [OPTIONS] KEY". It returns the exit code.
func statusMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := defaultConfig()
	pos, rest, err := parse("status", statusOptions(c), args, 1, getenv)
	switch {
	case errors.Is(err, errHelp):
		writeHelp(stdout, "status")
		return exitOK
	case err != nil:
		return usageError(stderr, "status", err)
	case len(pos) == 0:
		return usageError(stderr, "status", errors.New("missing KEY"))
	case len(rest) > 0:
		return usageError(stderr, "status", fmt.Errorf("unexpected argument %q after KEY", rest[0]))
	}
	key := pos[0]
	if err := checkKey(key); err != nil {
		return usageError(stderr, "status", err)
	}
	log := newLogger(c, &console{w: stderr})
	m, pw, code := openManager(c, log)
	if m == nil {
		return code
	}
	defer m.Close()

	// Each node's request is bounded by the node timeout.
	st, err := m.Status(context.Background(), key)
	if err != nil {
		return nodesError(log, pw, err)
	}
	rep := newStatusReport(key, st, pw)
	if err := writeReport(stdout, c.json, rep); err != nil {
		log.Error("redlock: cannot write the status", slog.Any("error", err))
		return exitFailure
	}
	errs := make([]error, len(st))
	var first error // the first node failure, for the log
	for i, n := range st {
		errs[i] = n.Err
		if first == nil {
			first = n.Err
		}
	}
	code = statusExitCode(errs)
	switch code {
	case exitConfig:
		log.Error("redlock: a node refused access or is misconfigured: check the node URLs, the password and the ACL rules", slog.String("key", key))
	case exitUnavailable:
		log.Warn(fmt.Sprintf("redlock: %d of %d nodes did not answer", rep.Failed, len(st)), slog.String("key", key), slog.Any("error", pw.scrub(first)))
	}
	return code
}

// newStatusReport summarizes what the nodes said of key.
func newStatusReport(key string, st []dlm.NodeStatus, pw secrets) *statusReport {
	rep := &statusReport{Key: key, Quorum: quorum(len(st)), Nodes: make([]nodeReport, len(st))}
	for i, n := range st {
		nr := nodeReport{Node: n.Node, Held: n.Held, Reserved: n.Reserved, TTLMillis: n.TTL.Milliseconds(), Fence: n.Counter, Owner: newOwnerReport(n.Owner, n.Since)}
		if n.Err != nil {
			nr.Error = pw.scrub(n.Err).Error()
			rep.Failed++
		}
		if n.Held {
			rep.HeldOn++
		}
		rep.Nodes[i] = nr
	}
	rep.Held = rep.HeldOn >= rep.Quorum
	return rep
}

// writeTable writes the report for people. A node's error is its reply,
// untrusted text: its characters that do not print are escaped, so that
// it can neither act on the terminal nor break the table's lines and
// columns.
func (rep *statusReport) writeTable(w io.Writer) error {
	held := "no"
	if rep.Held {
		held = "yes"
	}
	fmt.Fprintf(w, "key %q held: %s (on %d of %d nodes, quorum %d", rep.Key, held, rep.HeldOn, len(rep.Nodes), rep.Quorum)
	if rep.Failed > 0 {
		fmt.Fprintf(w, ", %d not answering", rep.Failed)
	}
	fmt.Fprintln(w, ")")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHELD\tTTL\tFENCE\tOWNER\tSINCE\tERROR")
	now := time.Now()
	for _, n := range rep.Nodes {
		held, ttl, fence := "no", "-", "-"
		switch {
		case n.Error != "":
			held = "?"
		case n.Reserved:
			held = "reserved"
		case n.Held:
			held = "yes"
			if n.TTLMillis > 0 {
				ttl = (time.Duration(n.TTLMillis) * time.Millisecond).String()
			}
		}
		if n.Fence > 0 {
			fence = fmt.Sprint(n.Fence)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(n.Node), held, ttl, fence, n.Owner, n.Owner.since(now), printable(n.Error))
	}
	return tw.Flush()
}

// nodesError logs err, a failure to ask the nodes, with the passwords
// scrubbed, and returns the exit code: a usage error for a key or pattern
// the library refused, a failure otherwise.
func nodesError(log *slog.Logger, pw secrets, err error) int {
	log.Error("redlock: cannot ask the nodes", slog.Any("error", pw.scrub(err)))
	if errors.Is(err, dlm.ErrInvalid) {
		return exitUsage
	}
	return exitFailure
}

// writeReport writes rep to w as indented JSON, or as its table.
func writeReport(w io.Writer, asJSON bool, rep interface{ writeTable(io.Writer) error }) error {
	if asJSON {
		enc := json.NewEncoder(jsonWriter{w})
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.writeTable(w)
}
