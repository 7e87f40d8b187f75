package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// held is what supervise watches while the command runs: a lock or a
// leadership.
type held interface {
	Lost() <-chan struct{}
	Until() time.Time
}

var (
	_ held = (*dlm.Lock)(nil)
	_ held = (*dlm.Leadership)(nil)
)

// electFlags are the options only elect has.
type electFlags struct {
	observe bool
	json    bool
}

// electOptions are the options of elect: its own, those of run that apply,
// then those of every command.
func electOptions(c *config, f *electFlags) []option {
	own := []option{
		{"observe", "REDLOCK_OBSERVE", "", "print the leader of NAME, and each change, until interrupted; take no part", "",
			&boolValue{p: &f.observe}},
		{"json", "REDLOCK_JSON", "", "with --observe, print a JSON object a line", "",
			&boolValue{p: &f.json}},
	}
	for _, o := range runOptions(c) {
		if o.name != "fencing" && o.name != "owner" { // a leader always has its term, and its VALUE for a label
			own = append(own, o)
		}
	}
	return own
}

// observation is what elect --observe prints: with --json, as this JSON
// object, one a line.
type observation struct {
	// Leader reports whether the election has a leader.
	Leader bool `json:"leader"`
	// Value is the leader's VALUE, or "".
	Value string `json:"value"`
}

// electMain is "redlock elect [OPTIONS] NAME VALUE [--] COMMAND [ARG...]"
// and "redlock elect --observe [OPTIONS] NAME". It returns the exit code.
func electMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, f := defaultConfig(), &electFlags{}
	pos, argv, err := parse("elect", electOptions(c, f), args, 2, getenv)
	switch {
	case errors.Is(err, errHelp):
		writeHelp(stdout, "elect")
		return exitOK
	case err != nil:
		return usageError(stderr, "elect", err)
	case len(pos) == 0:
		return usageError(stderr, "elect", errors.New("missing NAME"))
	case f.observe && len(pos) > 1:
		return usageError(stderr, "elect", fmt.Errorf("unexpected argument %q after NAME: --observe takes no VALUE or COMMAND", pos[1]))
	case f.observe && len(argv) > 0:
		return usageError(stderr, "elect", fmt.Errorf("unexpected argument %q after NAME: --observe takes no VALUE or COMMAND", argv[0]))
	case !f.observe && len(pos) == 1:
		return usageError(stderr, "elect", errors.New("missing VALUE and COMMAND after NAME"))
	case !f.observe && len(argv) == 0:
		return usageError(stderr, "elect", errors.New("missing COMMAND after VALUE"))
	}
	if err := checkKey(pos[0]); err != nil {
		return usageError(stderr, "elect", fmt.Errorf("NAME: %v", err))
	}
	con := &console{w: stderr}
	r := &runner{cfg: c, key: pos[0], argv: argv, con: con, log: newLogger(c, con)}
	if f.observe {
		return r.observe(stdout, f.json)
	}
	if len(pos[1]) > dlm.MaxLeaderValueLen {
		return usageError(stderr, "elect", fmt.Errorf("VALUE is %d bytes long: at most %d allowed", len(pos[1]), dlm.MaxLeaderValueLen))
	}
	return r.elect(pos[1])
}

// elect campaigns with value, runs the command while leading, resigns, and
// returns the exit code.
func (r *runner) elect(value string) int {
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
	sigs := make(chan os.Signal, 16)
	notifySignals(sigs)
	defer signal.Stop(sigs)

	gate := newWaitGate(r.cfg.wait)
	defer gate.close()
	ld, code := r.campaign(m, gate, sigs, value)
	if ld == nil {
		return code
	}
	code, lost := r.runLeading(ld, sigs)
	err := ld.Resign(context.Background())
	switch {
	case err == nil:
		r.log.Debug("redlock: resigned", slog.String("election", r.key))
	case lost && errors.Is(err, dlm.ErrLockLost):
		// Reported already.
	default:
		r.log.Warn("redlock: cannot resign", slog.String("election", r.key), slog.Any("error", r.pw.scrub(err)))
	}
	return code
}

// campaign waits to lead, as --wait says; signals stop the wait. On failure
// it logs why and returns nil and the exit code.
func (r *runner) campaign(m *dlm.Manager, gate *waitGate, sigs <-chan os.Signal, value string) (*dlm.Leadership, int) {
	att := &attempts{}
	opts := []dlm.Option{dlm.WithHook(att)}
	if r.cfg.wait == 0 {
		opts = append(opts, dlm.WithRetry(1, nil))
	}
	if r.cfg.fair {
		opts = append(opts, dlm.WithFairness(dlm.Fairness{}))
	}
	type result struct {
		ld  *dlm.Leadership
		err error
	}
	res := make(chan result, 1)
	start := time.Now()
	go func() {
		var ld *dlm.Leadership
		election, err := m.Election(r.key, opts...)
		if err == nil {
			ld, err = election.Campaign(gate.ctx, value)
		}
		res <- result{ld, err}
	}()
	for {
		select {
		case sig := <-sigs:
			gate.stop(signalCause{sig})
		case res := <-res:
			waited := slog.Duration("waited", time.Since(start).Round(time.Millisecond))
			if res.err == nil {
				if gate.obtained() {
					r.log.Info("redlock: elected", slog.String("election", r.key), slog.Uint64("term", res.ld.Term()), waited)
					return res.ld, exitOK
				}
				// Stopped just as it won: give the leadership up.
				if err := res.ld.Resign(context.Background()); err != nil {
					r.log.Warn("redlock: cannot resign", slog.String("election", r.key), slog.Any("error", r.pw.scrub(err)))
				}
				res.err = gate.cause()
			}
			cause, last := gate.cause(), att.lastErr()
			r.logNotObtained(res.err, cause, last, waited)
			return nil, acquireExitCode(res.err, cause, last, r.cfg.conflictCode)
		}
	}
}

// runLeading runs the command while ld leads, with REDLOCK_KEY set to the
// election's name, REDLOCK_FENCE to the leader's term and REDLOCK_FENCE_GRANT
// to its grant.
func (r *runner) runLeading(ld *dlm.Leadership, sigs <-chan os.Signal) (code int, lost bool) {
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = commandEnv(os.Environ(), r.key, ld.Term(), ld.GrantID(), r.cfg.passNodes)
	return r.startAndSupervise(cmd, ld, sigs)
}

// observe prints the election's leader and each change until INT or TERM.
func (r *runner) observe(stdout io.Writer, asJSON bool) int {
	m, pw, code := openManager(r.cfg, r.log)
	if m == nil {
		return code
	}
	defer m.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var obs <-chan dlm.Observation
	election, err := m.Election(r.key)
	if err == nil {
		obs, err = election.Observe(ctx)
	}
	if err != nil {
		r.log.Error("redlock: cannot observe the election", slog.String("election", r.key), slog.Any("error", pw.scrub(err)))
		return exitFailure
	}
	enc := json.NewEncoder(jsonWriter{stdout})
	for o := range obs {
		switch {
		case asJSON:
			err = enc.Encode(observation{Leader: o.Leader, Value: o.Value})
		case o.Leader:
			_, err = fmt.Fprintf(stdout, "leader %q\n", o.Value)
		default:
			_, err = fmt.Fprintln(stdout, "no leader")
		}
		if err != nil {
			r.log.Error("redlock: cannot write the leader", slog.Any("error", err))
			return exitFailure
		}
	}
	return exitOK
}
