package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// groupPoll is how often a lost lock's command is checked for processes
// left in its group during the grace period.
const groupPoll = 50 * time.Millisecond

// runner is one "redlock run": the lock's key, the command, and where to
// log.
type runner struct {
	cfg  *config
	key  string
	argv []string
	con  *console
	log  *slog.Logger
	pw   secrets // the nodes' passwords, scrubbed from errors
}

// runMain is "redlock run [OPTIONS] KEY [--] COMMAND [ARG...]". It returns
// the exit code.
func runMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := defaultConfig()
	pos, argv, err := parse("run", runOptions(c), args, 1, getenv)
	switch {
	case errors.Is(err, errHelp):
		writeHelp(stdout, "run")
		return exitOK
	case err != nil:
		return usageError(stderr, "run", err)
	case len(pos) == 0:
		return usageError(stderr, "run", errors.New("missing KEY and COMMAND"))
	case len(argv) == 0:
		return usageError(stderr, "run", errors.New("missing COMMAND after KEY"))
	}
	if err := checkKey(pos[0]); err != nil {
		return usageError(stderr, "run", err)
	}
	con := &console{w: stderr}
	r := &runner{cfg: c, key: pos[0], argv: argv, con: con, log: newLogger(c, con)}
	return r.run()
}

// run takes the lock, runs the command under it, releases it, and returns
// the exit code.
func (r *runner) run() int {
	// A command that cannot run is reported before the lock is taken.
	if _, err := exec.LookPath(r.argv[0]); err != nil {
		r.log.Error("redlock: cannot run the command", slog.String("command", r.argv[0]), slog.Any("error", err))
		return startExitCode(err)
	}
	m, pw, code := openManager(r.cfg, r.log, dlm.WithTTL(r.cfg.ttl))
	if m == nil {
		return code
	}
	defer m.Close()
	r.pw = pw

	// From here on the signals to forward are caught: while waiting, they
	// stop the wait and the lock is never taken.
	sigs := make(chan os.Signal, 16)
	notifySignals(sigs)
	defer signal.Stop(sigs)

	gate := newWaitGate(r.cfg.wait)
	defer gate.close()
	l, code := r.acquire(m, gate, sigs)
	if l == nil {
		return code
	}
	code, lost := r.runLocked(l, sigs)
	err := l.Unlock(context.Background())
	switch {
	case err == nil:
		r.log.Debug("redlock: lock released", slog.String("key", r.key))
	case lost && errors.Is(err, dlm.ErrLockLost):
		// Reported already.
	default:
		// The lock expires on its own by its TTL.
		r.log.Warn("redlock: cannot release the lock", slog.String("key", r.key), slog.Any("error", r.pw.scrub(err)))
	}
	return code
}

// notifySignals relays the signals to forward to c, except those redlock
// was started with ignored, as nohup ignores SIGHUP and a shell SIGINT for a
// background job: catching one would end its being ignored, and the command
// inherits only what is ignored.
func notifySignals(c chan<- os.Signal) {
	for _, sig := range forwardedSignals {
		if !signal.Ignored(sig) {
			signal.Notify(c, sig)
		}
	}
}

// runLocked runs the command while l is held, and returns its exit code,
// or --lost-exit-code and true when the lock was lost before the command
// ended.
func (r *runner) runLocked(l *dlm.Lock, sigs <-chan os.Signal) (code int, lost bool) {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = commandEnv(os.Environ(), r.key, l.Token(), l.GrantID(), r.cfg.passNodes)
	// In the foreground of a terminal the command shares redlock's
	// process group, so that it can read the terminal. Elsewhere it gets a
	// group of its own, so that signals reach the processes it starts.
	return r.startAndSupervise(cmd, l, sigs)
}

// startAndSupervise starts cmd and supervises it while h is held.
func (r *runner) startAndSupervise(cmd *exec.Cmd, h held, sigs <-chan os.Signal) (code int, lost bool) {
	ch, err := startChild(cmd, !inForeground(), r.killAfter(), r.log)
	if err != nil {
		r.log.Error("redlock: cannot start the command", slog.String("command", r.argv[0]), slog.Any("error", err))
		return startExitCode(err), false
	}
	r.log.Debug("redlock: command started", slog.String("command", r.argv[0]), slog.Int("pid", ch.pid), slog.Bool("own_group", ch.ownGroup))
	return r.supervise(ch, h, sigs)
}

// killAfter is how long the command's processes get between SIGTERM and
// SIGKILL if redlock dies while they run: --grace, but at most a quarter of
// the TTL, so that they are gone before the lock expires. An extension
// starts when a third of the TTL is left, so a lock outlives its holder by
// more than that unless its extension was already failing.
func (r *runner) killAfter() time.Duration {
	return min(r.cfg.grace, r.cfg.ttl/4)
}

// supervise waits for the command to exit, forwarding signals to it. If the
// lock is lost first, it sends the command SIGTERM, then SIGKILL after
// --grace, and reports the loss.
func (r *runner) supervise(ch *child, l held, sigs <-chan os.Signal) (code int, lost bool) {
	lostC := l.Lost()
	var (
		grace  *time.Timer
		graceC <-chan time.Time // fires when the grace period ends
		killed bool
	)
	defer func() {
		if grace != nil {
			grace.Stop()
		}
	}()
	kill := func() {
		killed = true
		if err := ch.signal(sigKill); err != nil {
			r.log.Error("redlock: cannot kill the command", slog.Any("error", err))
		}
	}
	// terminate sends SIGTERM and starts the grace period, or kills at
	// once with no grace.
	terminate := func() {
		if r.cfg.grace == 0 {
			kill()
			return
		}
		if err := ch.signal(sigTerminate); err != nil {
			r.log.Error("redlock: cannot terminate the command", slog.Any("error", err))
		}
		grace = time.NewTimer(r.cfg.grace)
		graceC = grace.C
	}
	for {
		select {
		case sig := <-sigs:
			if ch.ownGroup || !inForeground() || !fromKeyboard(sig) {
				r.log.Info("redlock: forwarding a signal to the command", slog.String("signal", signalName(sig)))
				if err := ch.signal(sig); err != nil {
					r.log.Warn("redlock: cannot forward a signal", slog.String("signal", signalName(sig)), slog.Any("error", err))
				}
			}
			// Otherwise the terminal sent it to the command too.
		case <-lostC:
			lostC, lost = nil, true
			r.log.Error("redlock: lock lost: terminating the command", slog.String("key", r.key), slog.Duration("grace", r.cfg.grace))
			terminate()
		case <-graceC:
			graceC = nil
			r.log.Error("redlock: command still running after the grace period: killing it", slog.Duration("grace", r.cfg.grace))
			kill()
		case <-ch.done:
			if !lost {
				select {
				case <-lostC:
					lost = true
				default:
					// The lock's validity may have ended unnoticed while
					// redlock was stopped; its timers fire late.
					lost = !time.Now().Before(l.Until())
				}
				if lost {
					r.log.Error("redlock: lock lost before the command ended", slog.String("key", r.key))
				}
			}
			if !lost {
				return ch.exitCode(), false
			}
			if ch.ownGroup && !killed {
				if grace == nil {
					// The loss was noticed only now: what the command
					// started may still run.
					terminate()
				}
				if !killed {
					r.reapGroup(ch, graceC)
				}
			}
			r.log.Error(fmt.Sprintf("redlock: the lock was lost: exiting with %d (--lost-exit-code)", r.cfg.lostCode), slog.Int("command_exit_code", ch.exitCode()))
			return r.cfg.lostCode, true
		}
	}
}

// reapGroup waits, after the command of a lost lock exited, for the other
// processes of its group to exit too, and kills those left when the grace
// period ends (graceC fires). Nothing of the command may run on without
// the lock.
func (r *runner) reapGroup(ch *child, graceC <-chan time.Time) {
	poll := time.NewTicker(groupPoll)
	defer poll.Stop()
	for groupAlive(ch.cmd.Process.Pid) {
		select {
		case <-poll.C:
		case <-graceC:
			r.log.Error("redlock: processes of the command still running after the grace period: killing them")
			if err := ch.signal(sigKill); err != nil {
				r.log.Error("redlock: cannot kill the command's processes", slog.Any("error", err))
			}
			return
		}
	}
}
