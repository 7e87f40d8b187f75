package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// The hot-key cases with a process per contender ("hotkey/procs/...") run
// each contender as a process of its own: the harness starts copies of its
// own program (Config.ContenderCmd) with contenderEnv set, each opens the
// library with a client of its own, and for every run the harness sends
// them the run's start instant on the shared clock; each sends back its
// Lock calls, timed since that instant, and the harness merges them into
// one run's records (mergeRuns) for analyzeHot. A holder marker in shared
// memory checks mutual exclusion apart from the timestamps.

// Timing of the contender processes.
const (
	poolReadyTimeout = 2 * time.Minute  // from opening a library to every contender ready
	poolStopTimeout  = 10 * time.Second // from closing a library, or the input, to every contender done
	runGrace         = time.Minute      // after a run's window, for the contenders' last calls and their records
	// From sending a run to its start instant: a base and a share per
	// contender, so that every process has read its run before it starts
	// even on a busy machine (StartLag tells when not).
	startLeadBase = 50 * time.Millisecond
	startLeadEach = 2 * time.Millisecond
)

// contenderGOMAXPROCS keeps each contender process light: a contender is
// one goroutine waiting on the network most of the time, and hundreds of
// them share the machine with the servers.
const contenderGOMAXPROCS = "1"

// contenderProc is one contender process of a pool.
type contenderProc struct {
	client int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	out    *bufio.Scanner // on stdout
	stderr *tailBuffer
	exited chan struct{} // closed once the process has been waited for
	exit   error         // how it exited, once exited is closed
	killed bool          // by the harness
}

// procPool is the contender processes of the process cases. It grows to
// the largest case, and its processes serve every library in turn: the
// first n of them open a library for a turn of a case of n contenders
// (openLib), run it (run) and close it (closeLib), so that a process is
// started once for all the cases rather than once per library and run.
type procPool struct {
	argv       []string
	procs      []*contenderProc
	markerPath string
	marker     *holderMarker // the harness's mapping, to reset it before each run
	open       []*contenderProc
	lib        Library       // of the open processes
	clockErr   time.Duration // the largest of the open processes' sharedClock.err
}

// newProcPool returns an empty pool whose processes run argv.
func newProcPool(argv []string) (*procPool, error) {
	if len(argv) == 0 {
		return nil, errors.New("no contender command")
	}
	p := &procPool{argv: argv}
	var err error
	if p.markerPath, err = createMarker(""); err != nil {
		return nil, fmt.Errorf("holder marker: %w", err)
	}
	if p.marker, err = openMarker(p.markerPath); err != nil {
		os.Remove(p.markerPath)
		return nil, fmt.Errorf("holder marker: %w", err)
	}
	return p, nil
}

// openLib opens lib in the first n processes, starting processes until
// there are n, and returns once every one of them is ready. On error the
// pool is stopped.
func (p *procPool) openLib(ctx context.Context, lib Library, n int, job openJob) error {
	if p.open != nil {
		return fmt.Errorf("opening %s: %s is still open", lib.ID, p.lib.ID)
	}
	for i := len(p.procs); i < n; i++ {
		c, err := startContender(p.argv, i)
		if err != nil {
			p.stop()
			return fmt.Errorf("contender %d: %w", i, err)
		}
		p.procs = append(p.procs, c)
	}
	job.Lib, job.Marker = lib.ID, p.markerPath
	// At most startConcurrency processes open their clients at once:
	// hundreds of them connecting and warming up together would starve
	// the servers past the node timeout.
	procs := p.procs[:n]
	clockErrs := make([]time.Duration, n)
	slots := make(chan struct{}, startConcurrency)
	errs := p.each(ctx, procs, poolReadyTimeout, func(c *contenderProc) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		o := job
		o.Client = c.client
		if err := c.send(toContender{Open: &o}); err != nil {
			return fmt.Errorf("contender %d: %w", c.client, err)
		}
		m, err := c.read()
		switch {
		case err != nil:
			return err
		case m.Ready == nil:
			return fmt.Errorf("contender %d: a line other than ready", c.client)
		}
		clockErrs[c.client] = m.Ready.ClockErr
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		p.stop()
		return fmt.Errorf("opening %s in %d contenders: %w", lib.ID, n, err)
	}
	p.open, p.lib, p.clockErr = procs, lib, slices.Max(clockErrs)
	return nil
}

// closeLib makes the open processes close their library and waits until
// they have. On error the pool is stopped.
func (p *procPool) closeLib(ctx context.Context) error {
	errs := p.each(ctx, p.open, poolStopTimeout, func(c *contenderProc) error {
		if err := c.send(toContender{Close: true}); err != nil {
			return fmt.Errorf("contender %d: %w", c.client, err)
		}
		m, err := c.read()
		if err == nil && !m.Closed {
			err = fmt.Errorf("contender %d: a line other than closed", c.client)
		}
		return err
	})
	lib := p.lib.ID
	p.open = nil
	if err := errors.Join(errs...); err != nil {
		p.stop()
		return fmt.Errorf("closing %s: %w", lib, err)
	}
	return nil
}

// startConcurrency is the number of contenders that open their clients at
// once.
const startConcurrency = 16

// startContender starts one contender process.
func startContender(argv []string, client int) (*contenderProc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), contenderEnv+"=1", "GOMAXPROCS="+contenderGOMAXPROCS)
	c := &contenderProc{client: client, cmd: cmd, stderr: &tailBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	setProcAttr(cmd)
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// A pipe of its own rather than StdoutPipe, which Wait closes as soon
	// as the process exits, before its last lines are read.
	stdout, w, err := os.Pipe()
	if err != nil {
		c.stdin.Close()
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		c.stdin.Close()
		return nil, err
	}
	c.stdout = stdout
	c.out = bufio.NewScanner(stdout)
	c.out.Buffer(make([]byte, 0, 4096), maxContenderLine)
	go func() {
		c.exit = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// maxContenderLine bounds a line from a contender.
const maxContenderLine = 64 << 10

// send writes one line to the contender.
func (c *contenderProc) send(m toContender) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// read reads one line from the contender. A fail line, or the end of its
// output, is an error that quotes what it wrote on its standard error.
func (c *contenderProc) read() (fromContender, error) {
	var m fromContender
	if !c.out.Scan() {
		err := c.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return m, fmt.Errorf("contender %d: output ended (%w); its standard error ends: %s", c.client, err, c.stderr.String())
	}
	if err := json.Unmarshal(c.out.Bytes(), &m); err != nil {
		return m, fmt.Errorf("%w: contender %d: %.100q", errMalformed, c.client, c.out.Text())
	}
	if m.Fail != "" {
		return m, fmt.Errorf("contender %d: %s", c.client, m.Fail)
	}
	return m, nil
}

// errMalformed is wrapped by a line from a contender that is not the
// protocol's.
var errMalformed = errors.New("malformed line")

// each runs fn for each of procs at once, each in a goroutine of its own,
// and returns their errors, stopping the pool if they take longer than
// timeout or ctx ends first.
func (p *procPool) each(ctx context.Context, procs []*contenderProc, timeout time.Duration, fn func(c *contenderProc) error) []error {
	var mu sync.Mutex
	errs := make([]error, len(procs))
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fn(c)
			mu.Lock()
			errs[i] = err
			mu.Unlock()
		}()
	}
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return errs
	case <-ctx.Done():
		p.kill() // ends their output, so that every fn returns
		<-done
		return append(errs, ctx.Err())
	case <-t.C:
		p.kill()
		<-done
		return append(errs, fmt.Errorf("contenders took longer than %v", timeout))
	}
}

// run runs one hot-key run of window on key with the open processes, each
// holding the lock for work per grant, from an instant a little ahead, and
// merges their records. On error the pool is stopped.
func (p *procPool) run(ctx context.Context, key string, work, window time.Duration) (hotRound, error) {
	if p.open == nil {
		return hotRound{}, errors.New("run with no library open")
	}
	p.marker.reset()
	now, err := sharedNow()
	if err != nil {
		return hotRound{}, err
	}
	lead := startLeadBase + time.Duration(len(p.open))*startLeadEach
	job := runJob{Key: key, Work: work, Window: window, Start: now + lead}
	for _, c := range p.open {
		if err := c.send(toContender{Run: &job}); err != nil {
			p.stop()
			return hotRound{}, fmt.Errorf("contender %d: %w", c.client, err)
		}
	}
	runs := make([]contenderRun, len(p.open))
	errs := p.each(ctx, p.open, lead+window+runGrace, func(c *contenderProc) error {
		r, err := c.readRun(window)
		runs[c.client] = r
		return err
	})
	if err := errors.Join(errs...); err != nil {
		return hotRound{}, err
	}
	round := mergeRuns(runs, window)
	round.clockErr = p.clockErr
	return round, nil
}

// kill kills every process and stops the pool.
func (p *procPool) kill() {
	for _, c := range p.procs {
		c.killed = true
		c.cmd.Process.Kill()
	}
	p.stop()
}

// stop stops every process: it closes their input, which makes each close
// its client and exit, kills those still running after poolStopTimeout,
// and removes the marker. It returns the failures of the processes that
// exited on their own with an error, quoting their standard error. It is
// safe to call more than once.
func (p *procPool) stop() error {
	for _, c := range p.procs {
		c.stdin.Close()
	}
	deadline := time.After(poolStopTimeout)
	for _, c := range p.procs {
		select {
		case <-c.exited:
		case <-deadline:
			c.killed = true
			c.cmd.Process.Kill()
			<-c.exited
		}
	}
	var errs []error
	for _, c := range p.procs {
		c.stdout.Close()
		if c.exit != nil && !c.killed {
			errs = append(errs, fmt.Errorf("contender %d: %w; its standard error ends: %s", c.client, c.exit, c.stderr.String()))
		}
	}
	p.procs, p.open = nil, nil
	if p.marker != nil {
		p.marker.close()
		p.marker = nil
	}
	if p.markerPath != "" {
		os.Remove(p.markerPath)
		p.markerPath = ""
	}
	return errors.Join(errs...)
}

// tailBuffer keeps the end of what is written to it: a contender's
// standard error, for the error that reports its end.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailSize {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailSize:]...)
	}
	return len(b), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
