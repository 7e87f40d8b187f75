package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// lsReport is what ls prints: with --json, as this JSON object.
type lsReport struct {
	// Prefix is the key prefix listed under.
	Prefix string `json:"prefix"`
	// Pattern is the pattern of the keys listed.
	Pattern string `json:"pattern"`
	// Quorum is the number of nodes that make a majority.
	Quorum int `json:"quorum"`
	// Truncated reports that more locks matched than --max.
	Truncated bool `json:"truncated"`
	// Locks are the locks found, sorted by key.
	Locks []lockReport `json:"locks"`
	// Nodes has an entry for each node, in the order of --nodes.
	Nodes []lsNode `json:"nodes"`
}

// lockReport is one lock of an [lsReport].
type lockReport struct {
	Key string `json:"key"`
	// Held reports whether a quorum of nodes holds the key.
	Held bool `json:"held"`
	// HeldOn counts the nodes that hold the key.
	HeldOn int `json:"held_on"`
	// TTLMillis is how long the key lives on a quorum unless extended, in
	// milliseconds; 0 when not held.
	TTLMillis int64 `json:"ttl_ms"`
	// Fence is the largest fencing counter of the key, or 0.
	Fence uint64 `json:"fence"`
	// Waiters is the most live places in the key's line on a node.
	Waiters int `json:"waiters"`
	// Readers is the most readers on a node, for a read lock.
	Readers int `json:"readers,omitempty"`
	// Owner is the holder's label (dlm.WithOwner), when it has one.
	Owner *ownerReport `json:"owner,omitempty"`
	// Nodes has the key's state on each node, in the order of --nodes.
	Nodes []nodeReport `json:"nodes"`
}

// lsNode is one node's part of an [lsReport].
type lsNode struct {
	Node string `json:"node"`
	// Error is why the node's keys were not all seen, or "".
	Error string `json:"error,omitempty"`
}

// lsMain is "redlock ls [OPTIONS] [PATTERN]". It returns the exit code.
func lsMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := defaultConfig()
	pos, rest, err := parse("ls", lsOptions(c), args, 1, getenv)
	switch {
	case errors.Is(err, errHelp):
		writeHelp(stdout, "ls")
		return exitOK
	case err != nil:
		return usageError(stderr, "ls", err)
	case len(rest) > 0:
		return usageError(stderr, "ls", fmt.Errorf("unexpected argument %q after PATTERN", rest[0]))
	}
	pattern := "*"
	if len(pos) > 0 {
		pattern = pos[0]
		if pattern == "" || len(pattern) > dlm.MaxKeyLen {
			return usageError(stderr, "ls", fmt.Errorf("PATTERN of %d bytes: want 1 to %d", len(pattern), dlm.MaxKeyLen))
		}
	}
	log := newLogger(c, &console{w: stderr})
	m, pw, code := openManager(c, log)
	if m == nil {
		return code
	}
	defer m.Close()

	// Each request is bounded by the node timeout; a minute bounds the
	// walk of a node with very many keys.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ls, err := m.List(ctx, pattern, c.max)
	if err != nil {
		return nodesError(log, pw, err)
	}
	rep := newLsReport(c.keyPrefix, pattern, ls, pw)
	if err := writeReport(stdout, c.json, rep); err != nil {
		log.Error("redlock: cannot write the list", slog.Any("error", err))
		return exitFailure
	}
	if rep.Truncated {
		limit := c.max
		if limit == 0 {
			limit = dlm.DefaultListLimit
		}
		log.Warn(fmt.Sprintf("redlock: more locks than --max %d on a node: the list is cut short", limit))
	}
	errs := make([]error, len(ls.Nodes))
	var first error
	failed := 0
	for i, n := range ls.Nodes {
		errs[i] = n.Err
		if n.Err != nil {
			failed++
			if first == nil {
				first = n.Err
			}
		}
	}
	code = statusExitCode(errs)
	switch code {
	case exitConfig:
		log.Error("redlock: a node refused access or is misconfigured: check the node URLs, the password and the ACL rules", slog.Any("error", pw.scrub(first)))
	case exitUnavailable:
		log.Warn(fmt.Sprintf("redlock: %d of %d nodes did not answer in full: their locks may be missing", failed, len(ls.Nodes)), slog.Any("error", pw.scrub(first)))
	}
	return code
}

// newLsReport summarizes a listing.
func newLsReport(prefix, pattern string, ls *dlm.Listing, pw secrets) *lsReport {
	rep := &lsReport{Prefix: prefix, Pattern: pattern, Quorum: quorum(len(ls.Nodes)), Truncated: ls.Truncated,
		Locks: make([]lockReport, len(ls.Locks)), Nodes: make([]lsNode, len(ls.Nodes))}
	for i, n := range ls.Nodes {
		rep.Nodes[i] = lsNode{Node: n.Node}
		if n.Err != nil {
			rep.Nodes[i].Error = pw.scrub(n.Err).Error()
		}
	}
	for i, l := range ls.Locks {
		lr := lockReport{Key: l.Key, Held: l.Held, HeldOn: l.HeldOn, TTLMillis: l.TTL.Milliseconds(), Fence: l.Counter,
			Waiters: l.Waiters, Readers: l.Readers, Owner: newOwnerReport(l.Owner, l.Since), Nodes: make([]nodeReport, len(l.Nodes))}
		for j, n := range l.Nodes {
			lr.Nodes[j] = nodeReport{Node: n.Node, Held: n.Held, Reserved: n.Reserved, TTLMillis: n.TTL.Milliseconds(), Fence: n.Counter, Owner: newOwnerReport(n.Owner, n.Since)}
		}
		rep.Locks[i] = lr
	}
	return rep
}

// writeTable writes the report for people. Keys and errors come from the
// nodes, untrusted text: their characters that do not print are escaped,
// so that they can neither act on the terminal nor break the table.
func (rep *lsReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tHELD\tTTL\tFENCE\tWAITERS\tREADERS\tOWNER\tSINCE")
	now := time.Now()
	for _, l := range rep.Locks {
		held := fmt.Sprintf("%d/%d", l.HeldOn, len(rep.Nodes))
		if !l.Held {
			held += " (no quorum)"
		}
		ttl, fence, readers := "-", "-", "-"
		if l.TTLMillis > 0 {
			ttl = (time.Duration(l.TTLMillis) * time.Millisecond).String()
		}
		if l.Fence > 0 {
			fence = fmt.Sprint(l.Fence)
		}
		if l.Readers > 0 {
			readers = fmt.Sprint(l.Readers)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", printable(l.Key), held, ttl, fence, l.Waiters, readers, l.Owner, l.Owner.since(now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range rep.Nodes {
		if n.Error != "" {
			fmt.Fprintf(w, "node %s: %s\n", printable(n.Node), printable(n.Error))
		}
	}
	return nil
}
