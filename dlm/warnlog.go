package dlm

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/dlmgo/redlock/dlm/internal/round"
)

// warnLog keeps the Warn lines of auto-extension in proportion to what
// happens, not to the locks held: a round's batch that fails on a node
// fails the extension of every lock it carried, and a node down fails
// every renewal sent to it. Each lock's events still go to the hook, as
// [Lock.Extend]'s do; the logger gets, for each node, at most one line a
// second counting the extensions that failed on it since the last one,
// and, for the Manager, at most one a second counting the auto-extensions
// that failed and the auto-extended locks lost. The first failure after a
// quiet second is logged at once; those that follow within the second are
// counted into a line at its end. A failure because the Manager closed is
// none: it is logged at Debug, and not counted.
type warnLog struct {
	mu    sync.Mutex
	nodes []warnCount // by node
	locks warnCount   // the Manager's: extensions failed, locks lost
}

// warnCount is what a Warn line will count.
type warnCount struct {
	failed, lost int
	err          error     // the first failure since the last line
	last         time.Time // when the last line was logged
	pending      bool      // a line is due a second after last
}

// warnPeriod is the least time between two Warn lines of one node, or of
// the Manager's locks.
const warnPeriod = time.Second

// counter returns node's count, or the Manager's for node -1. w.mu is
// held.
func (w *warnLog) counter(node, nodes int) *warnCount {
	if node < 0 {
		return &w.locks
	}
	if w.nodes == nil {
		w.nodes = make([]warnCount, nodes)
	}
	return &w.nodes[node]
}

// countWarn counts failed extensions and lost locks of node (-1: the
// Manager's locks), first failing with err, and logs them now or a
// warnPeriod after the last line.
func (x *extender) countWarn(node, failed, lost int, err error) {
	w := &x.warn
	now := time.Now()
	w.mu.Lock()
	c := w.counter(node, len(x.m.nodes))
	c.failed += failed
	c.lost += lost
	if c.err == nil {
		c.err = err
	}
	if c.pending {
		w.mu.Unlock()
		return
	}
	if wait := c.last.Add(warnPeriod).Sub(now); !c.last.IsZero() && wait > 0 {
		c.pending = true
		w.mu.Unlock()
		time.AfterFunc(wait, func() { x.flushWarn(node) })
		return
	}
	line := c.take(now)
	w.mu.Unlock()
	x.logWarn(node, line)
}

// flushWarn logs what node's count holds, a warnPeriod after its last
// line.
func (x *extender) flushWarn(node int) {
	w := &x.warn
	w.mu.Lock()
	c := w.counter(node, len(x.m.nodes))
	c.pending = false
	line := c.take(time.Now())
	w.mu.Unlock()
	x.logWarn(node, line)
}

// take returns the count for a line logged at now, and starts the next.
func (c *warnCount) take(now time.Time) warnCount {
	line := *c
	c.failed, c.lost, c.err, c.last = 0, 0, nil, now
	return line
}

// logWarn logs line, of node (-1: the Manager's locks), on the Manager's
// logger.
func (x *extender) logWarn(node int, line warnCount) {
	if line.failed+line.lost == 0 {
		return
	}
	ctx := context.Background()
	logger := x.m.cfg.logger
	since := slog.Duration("period", warnPeriod)
	if node >= 0 {
		logger.LogAttrs(ctx, slog.LevelWarn, "dlm: extend node_error: extensions failed on a node in the last period",
			slog.String("event", EventNodeError.String()), slog.String("node", x.m.nodes[node].addr),
			slog.Int("failed", line.failed), since, slog.Any("error", line.err))
		return
	}
	logger.LogAttrs(ctx, slog.LevelWarn, "dlm: extend extend_failed: auto-extensions failed, or locks lost, in the last period",
		slog.String("event", EventExtendFailed.String()), slog.Int("failed", line.failed), slog.Int("lost", line.lost),
		since, slog.Any("error", line.err))
}

// aggregated reports whether l's events are logged by the extender's
// warnLog: l is auto-extended and logs to its Manager's logger (a call's
// own [WithLogger] gets its events one by one).
func (l *Lock) aggregated() bool {
	return l.cfg.autoExtend != nil && l.cfg.logger == l.m.cfg.logger
}

// roundEvent sends the events of l's extension by a round of the
// extender, as extensionEvent does, but for the logger's Warn lines,
// which the extender counts ([warnLog]).
func (l *Lock) roundEvent(ctx context.Context, v *round.Vote, ev Event) {
	cfg := &l.cfg
	x := l.m.extender
	warn := cfg.logger.Enabled(ctx, slog.LevelWarn)
	for i, err := range v.Errs {
		if err == nil {
			continue
		}
		if cfg.hook != nil {
			cfg.observe(ctx, &Event{Kind: EventNodeError, Op: ev.Op, Key: ev.Key, Node: l.m.nodes[i].addr, Start: ev.Start, Duration: ev.Duration, Err: err})
		}
		if warn && !errors.Is(err, ErrClosed) {
			x.countWarn(i, 1, 0, err)
		}
	}
	if level := eventLevel(ev.Kind, ev.Err); cfg.hook != nil || (level < slog.LevelWarn && cfg.logger.Enabled(ctx, level)) {
		e := ev
		e.For, e.Against, e.Failed = v.Yes, v.No, v.Failed
		e.NodeErrors = voteErrors(v, l.m.nodes)
		ctx = cfg.observe(ctx, &e)
		if level < slog.LevelWarn {
			cfg.log(ctx, &e)
		}
	}
	if warn && ev.Err != nil && !errors.Is(ev.Err, ErrClosed) {
		x.countWarn(-1, 1, 0, ev.Err)
	}
}

// reportAggregated sends the loss err of l, recorded at at, to the hook,
// and counts it for the extender's Warn line (see [warnLog]).
func (l *Lock) reportAggregated(at time.Time, err error) {
	e := &Event{Kind: EventLost, Op: opExtend, Key: l.Key(), Start: at, Token: l.token, Err: err, Held: l.heldFor(at)}
	ctx := l.cfg.observe(context.Background(), e)
	if level := eventLevel(EventLost, err); level < slog.LevelWarn {
		l.cfg.log(ctx, e)
		return
	}
	if l.cfg.logger.Enabled(ctx, slog.LevelWarn) {
		l.m.extender.countWarn(-1, 0, 1, err)
	}
}
