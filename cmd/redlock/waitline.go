package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlmgo/redlock/dlm"
)

// Pace of the waiting line.
const (
	lineRedraw   = 250 * time.Millisecond // the elapsed time moves on
	statusPeriod = time.Second            // the nodes are asked about the holder
	maxLineKey   = 32                     // runes of the key shown
)

// startWaitLine shows a line on the console while redlock waits for the
// lock: how long it has waited, and what the nodes say of the holder. It
// returns a function that stops it, clears the line, and returns once the
// goroutine that draws it has ended. Nothing is drawn in the first
// lineRedraw, so a lock obtained at once shows no line at all.
func startWaitLine(con *console, m *dlm.Manager, key string, start time.Time) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer con.setLine("")
		tick := time.NewTicker(lineRedraw)
		defer tick.Stop()
		var (
			st      []dlm.NodeStatus
			asked   time.Time // when st was asked for
			nextAsk time.Time // zero: ask at the first tick
		)
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if !now.Before(nextAsk) {
					// Status is bounded by the node timeout; the line
					// stays as it is meanwhile.
					if s, err := m.Status(ctx, key); err == nil {
						st, asked = s, time.Now()
					}
					nextAsk = time.Now().Add(statusPeriod)
				}
				if ctx.Err() != nil {
					return
				}
				con.setLine(fit(waitText(key, time.Since(start), st, time.Since(asked)), terminalWidth(os.Stderr)))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitText is the waiting line: the key, the time waited, and, once known,
// what the nodes said age ago of the holder: on how many nodes the key is,
// and, as the TTL, how long until fewer than a quorum hold it unless the
// holder extends it. The holder's secret is never known, and so never shown.
func waitText(key string, waited time.Duration, st []dlm.NodeStatus, age time.Duration) string {
	if utf8.RuneCountInString(key) > maxLineKey {
		key = string([]rune(key)[:maxLineKey-1]) + "…"
	}
	s := fmt.Sprintf("redlock: waiting for %s %s", strconv.Quote(key), roundWait(waited))
	if st == nil {
		return s
	}
	var held, failed int
	var ttls []time.Duration
	for _, n := range st {
		switch {
		case n.Err != nil:
			failed++
		case n.Held:
			held++
			ttls = append(ttls, n.TTL)
		}
	}
	var parts []string
	switch {
	case held > 0:
		part := fmt.Sprintf("held on %d/%d nodes", held, len(st))
		if q := quorum(len(st)); held >= q {
			// The holder keeps the lock until its q-th longest TTL ends.
			slices.Sort(ttls)
			if ttl := ttls[len(ttls)-q]; ttl > 0 && ttl > age {
				part += ", TTL " + roundWait(ttl-age)
			}
		}
		parts = append(parts, part)
	case failed == 0:
		parts = append(parts, "not held, trying again")
	}
	if failed > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d nodes not answering", failed, len(st)))
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

// defaultWidth is the terminal width assumed when it is unknown.
const defaultWidth = 80

// fit cuts s to less than width columns (defaultWidth when width is 0): a
// line that wrapped could not be erased.
func fit(s string, width int) string {
	if width <= 0 {
		width = defaultWidth
	}
	if width < 2 || utf8.RuneCountInString(s) < width {
		return s
	}
	return string([]rune(s)[:width-2]) + "…"
}

// roundWait formats d for the waiting line: in seconds with one decimal
// under a minute, so that the line keeps its width as the tenths go by, and
// in whole seconds above.
func roundWait(d time.Duration) string {
	if d < time.Minute-50*time.Millisecond {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// quorum is the number of nodes that make a majority of n.
func quorum(n int) int { return n/2 + 1 }
