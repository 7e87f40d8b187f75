package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// maxAnswer bounds the line read as the answer to unlock's question.
const maxAnswer = 64

// unlockMain is "redlock unlock --force [--yes] KEY": it shows the lock's
// status, asks on stderr for a "y" on stdin unless --yes, deletes the
// lock's keys on every node ([dlm.Manager.ForceUnlock]) and logs what it
// did. It returns the exit code: as status's for the nodes' answers, 1
// when the question was not answered yes.
func unlockMain(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := defaultConfig()
	pos, rest, err := parse("unlock", unlockOptions(c), args, 1, getenv)
	switch {
	case errors.Is(err, errHelp):
		writeHelp(stdout, "unlock")
		return exitOK
	case err != nil:
		return usageError(stderr, "unlock", err)
	case len(pos) == 0:
		return usageError(stderr, "unlock", errors.New("missing KEY"))
	case len(rest) > 0:
		return usageError(stderr, "unlock", fmt.Errorf("unexpected argument %q after KEY", rest[0]))
	case !c.force:
		return usageError(stderr, "unlock", errors.New("unlock breaks whoever holds the lock: give --force"))
	}
	key := pos[0]
	if err := checkKey(key); err != nil {
		return usageError(stderr, "unlock", err)
	}
	log := newLogger(c, &console{w: stderr})
	m, pw, code := openManager(c, log)
	if m == nil {
		return code
	}
	defer m.Close()

	// What it will break.
	st, err := m.Status(context.Background(), key)
	if err != nil {
		return nodesError(log, pw, err)
	}
	rep := newStatusReport(key, st, pw)
	if err := writeReport(stdout, c.json, rep); err != nil {
		log.Error("redlock: cannot write the status", slog.Any("error", err))
		return exitFailure
	}
	var fence uint64
	for _, n := range st {
		fence = max(fence, n.Counter)
	}
	if !c.yes {
		fmt.Fprintf(stderr, "Break lock %q, held on %d of %d nodes? Its holder is not stopped: until its next extension\n"+
			"fails it may still write, and only fencing keeps such a late write out. [y/N] ", printable(key), rep.HeldOn, len(st))
		if !confirmed(stdin) {
			log.Error("redlock: not confirmed: nothing deleted (give --yes to skip the question)", slog.String("key", key))
			return exitFailure
		}
	}
	res, err := m.ForceUnlock(context.Background(), key)
	if err != nil {
		log.Error("redlock: cannot break the lock", slog.Any("error", pw.scrub(err)))
		return exitFailure
	}
	errs := make([]error, len(res))
	var done, deleted []string
	var first error
	for i, r := range res {
		errs[i] = r.Err
		if r.Err != nil {
			if first == nil {
				first = r.Err
			}
			continue
		}
		done = append(done, r.Node)
		if r.Deleted > 0 {
			deleted = append(deleted, r.Node)
		}
	}
	log.Warn("redlock: lock force-unlocked", slog.String("key", key), slog.Int("held_on", rep.HeldOn),
		slog.Uint64("fence", fence), slog.String("deleted_on", strings.Join(deleted, ",")),
		slog.Int("answered", len(done)), slog.Int("nodes", len(res)))
	code = statusExitCode(errs)
	switch code {
	case exitConfig:
		log.Error("redlock: a node refused access or is misconfigured: check the node URLs, the password and the ACL rules", slog.Any("error", pw.scrub(first)))
	case exitUnavailable:
		log.Warn(fmt.Sprintf("redlock: %d of %d nodes did not answer: the lock's keys may remain there", len(res)-len(done), len(res)), slog.Any("error", pw.scrub(first)))
	}
	return code
}

// confirmed reads one line from r and reports whether it says yes ("y" or
// "yes", any case). End of input, or a line longer than maxAnswer, is no.
func confirmed(r io.Reader) bool {
	line, err := bufio.NewReaderSize(io.LimitReader(r, maxAnswer), maxAnswer).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
