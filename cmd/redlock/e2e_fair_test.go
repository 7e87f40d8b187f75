//go:build unix

package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRunFairOrder checks that "redlock run --fair" serves waiting processes
// in the order they asked: a holder runs until told to stop, three waiters
// ask one after the other (each once the one before holds its place in the
// nodes' lines), and their commands run in that order.
func TestRunFairOrder(t *testing.T) {
	t.Parallel()
	servers, nodes := startServers(t, 3)
	dir := t.TempDir()
	release, ready, log := filepath.Join(dir, "release"), filepath.Join(dir, "ready"), filepath.Join(dir, "log")
	holder := startRedlock(t, nil, runArgs("fifo", sh(`touch "$2"; `+boundedWait, release, ready), "--nodes", nodes, "--fair")...)
	waitFor(t, "the holder's command to start", func() bool { return exists(ready) })
	const waiters = 3
	var ps []*proc
	for i := range waiters {
		ps = append(ps, startRedlock(t, nil, runArgs("fifo", sh(`echo "$2" >> "$1"`, log, strconv.Itoa(i)), "--nodes", nodes, "--fair")...))
		// In line on every node: one place per waiter (a grant takes
		// none).
		waitFor(t, "waiter "+strconv.Itoa(i)+" in line", func() bool {
			for _, s := range servers {
				if v, err := s.Do("ZCARD", "redlock:{fifo}:waiters"); err != nil || v != int64(i+1) {
					return false
				}
			}
			return true
		})
	}
	touch(t, release)
	holder.expectExit(0)
	for _, p := range ps {
		p.expectExit(0)
	}
	if got := strings.Fields(readFile(t, log)); strings.Join(got, " ") != "0 1 2" {
		t.Errorf("the waiters' commands ran in the order %v; want 0 1 2, the order they asked", got)
	}
}
