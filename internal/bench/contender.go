package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// contenderEnv, set to "1" in a process's environment, makes it a
// contender of a process case: the program (lockbench, or a test binary)
// checks [IsContender] first thing and runs [ContenderMain].
const contenderEnv = "LOCKBENCH_CONTENDER"

// IsContender reports whether this process was started as a contender
// process of a hot-key case with a process per contender.
func IsContender() bool { return os.Getenv(contenderEnv) == "1" }

// ContenderMain serves the harness that started this process as a
// contender, on standard input and output, until the harness closes its
// standard input; it returns the process's exit status.
func ContenderMain() int {
	if err := serveContender(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "lockbench contender: %v\n", err)
		return 1
	}
	return 0
}

// The protocol between the harness and a contender process: JSON lines.
// The harness sends an open, runs and a close, and again for the next
// library; the contender answers an open with ready, each run with one
// line per Lock call and a done line, a close with closed. Times are
// nanoseconds; a run's start is a reading of the shared clock (sharedNow),
// and a call's times are since that start, on the contender's mapping of
// the shared clock (sharedClock).

// toContender is a line from the harness to a contender.
type toContender struct {
	Open  *openJob `json:"open,omitempty"`
	Run   *runJob  `json:"run,omitempty"`
	Close bool     `json:"close,omitempty"` // close the library, to open another
}

// openJob tells a contender which library to open, and how.
type openJob struct {
	Lib   string        `json:"lib"` // Library.ID
	Addrs []string      `json:"addrs"`
	TTL   time.Duration `json:"ttl"`
	// NodeTimeout is Config.NodeTimeout: 0 keeps the library's default.
	NodeTimeout time.Duration `json:"node_timeout"`
	Tries       int           `json:"tries"`
	Client      int           `json:"client"` // the contender's number, for its own warm-up key
	Marker      string        `json:"marker"` // the holder marker's file; "" for none
	// Cold defers opening the library to the start instant of the run
	// that follows, with no warm-up: the contender answers ready with
	// no connection made, and at the start opens the library and at once
	// calls Lock, as a process just started would (the cold-burst case).
	Cold bool `json:"cold,omitempty"`
}

// runJob is one hot-key run.
type runJob struct {
	Key    string        `json:"key"`
	Work   time.Duration `json:"work"`
	Start  time.Duration `json:"start"` // on the shared clock
	Window time.Duration `json:"window"`
}

// fromContender is a line from a contender to the harness.
type fromContender struct {
	Ready *readyMsg `json:"ready,omitempty"`
	// Call is one Lock call: asked, granted (-1: never), Unlock called,
	// Unlock returned.
	Call   []int64  `json:"k,omitempty"`
	Done   *doneMsg `json:"done,omitempty"`
	Closed bool     `json:"closed,omitempty"` // the library is closed
	Fail   string   `json:"fail,omitempty"`   // the contender could not open or run; it exits
}

// readyMsg says the contender has opened its library and warmed it up.
type readyMsg struct {
	ClockErr time.Duration `json:"clock_err"` // sharedClock.err
}

// doneMsg ends a run's lines.
type doneMsg struct {
	Calls    int           `json:"calls"` // call lines sent before it
	Errors   int           `json:"errors"`
	FirstErr string        `json:"first_err,omitempty"`
	Checked  int           `json:"checked"`  // grants checked on the marker
	Overlaps int           `json:"overlaps"` // of which found another holder
	Late     time.Duration `json:"late"`     // how long after the start instant the contender began
}

// neverGranted encodes a call's never granted time on the wire.
const neverGranted = -1

// maxErrorText bounds the error texts a contender sends.
const maxErrorText = 300

// contenderLibraries returns the libraries a contender can open, by ID:
// those of a run, and any the package's tests add.
func contenderLibrary(id string) (Library, bool) {
	for _, lib := range append(Libraries(), testLibraries...) {
		if lib.ID == id {
			return lib, true
		}
	}
	return Library{}, false
}

// testLibraries are libraries that the package's tests add for their
// contender processes; none otherwise.
var testLibraries []Library

// serveContender is a contender process's loop: it reads the harness's
// lines from in and answers on out.
func serveContender(in io.Reader, out io.Writer) (err error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	// Call lines wait in the buffer for their run's done line, so that a
	// run's records cost a few writes.
	send := func(m fromContender) error {
		if err := enc.Encode(m); err != nil || m.Call != nil {
			return err
		}
		return w.Flush()
	}
	var (
		lk     Locker
		marker *holderMarker
		clock  sharedClock
		cold   *openJob // opened cold: the library is opened at the run's start
	)
	closeLib := func() {
		if lk != nil {
			lk.Close()
		}
		marker.close()
		lk, marker, cold = nil, nil, nil
	}
	opened := func() bool { return lk != nil || cold != nil }
	defer func() {
		closeLib()
		if err != nil {
			send(fromContender{Fail: truncate(err.Error(), maxErrorText)})
		}
	}()
	for sc.Scan() {
		var msg toContender
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return fmt.Errorf("line from the harness: %w", err)
		}
		switch {
		case msg.Open != nil && !opened():
			j := msg.Open
			if lk, marker, clock, err = openContender(j); err != nil {
				return err
			}
			if j.Cold {
				cold = j
			}
			if err := send(fromContender{Ready: &readyMsg{ClockErr: clock.err}}); err != nil {
				return err
			}
		case msg.Run != nil && opened():
			if lk, err = runContender(lk, cold, clock, marker, *msg.Run, send); err != nil {
				return err
			}
		case msg.Close && opened():
			closeLib()
			if err := send(fromContender{Closed: true}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected line from the harness: %.100q", sc.Text())
		}
	}
	return sc.Err()
}

// openContender opens the library of j, warms it up on a key of the
// contender's own and maps the shared clock and the holder marker. When j
// is cold it only checks that the library exists, and maps the clock and
// the marker: the Locker is nil.
func openContender(j *openJob) (Locker, *holderMarker, sharedClock, error) {
	lib, ok := contenderLibrary(j.Lib)
	if !ok {
		return nil, nil, sharedClock{}, fmt.Errorf("no library %q", j.Lib)
	}
	if j.Cold {
		clock, err := newSharedClock()
		if err != nil {
			return nil, nil, sharedClock{}, fmt.Errorf("shared clock: %w", err)
		}
		marker, err := openMarker(j.Marker)
		if err != nil {
			return nil, nil, sharedClock{}, fmt.Errorf("holder marker: %w", err)
		}
		return nil, marker, clock, nil
	}
	lk, err := lib.Open(j.Addrs, j.TTL, j.NodeTimeout, j.Tries)
	if err != nil {
		return nil, nil, sharedClock{}, fmt.Errorf("open %s: %w", lib.Name, err)
	}
	fail := func(err error) (Locker, *holderMarker, sharedClock, error) {
		lk.Close()
		return nil, nil, sharedClock{}, err
	}
	// A few cycles on a key of its own put the client's connections in
	// place. Their errors are not the run's: a node timeout while hundreds
	// of processes start is no fault of the library, and the runs count
	// whatever fails later.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := lk.Mutex(fmt.Sprintf("warmup/%s/proc%d", lib.ID, j.Client))
	for range ownWarmupCycles {
		if m.Lock(ctx) == nil {
			m.Unlock(ctx)
		}
	}
	clock, err := newSharedClock()
	if err != nil {
		return fail(fmt.Errorf("shared clock: %w", err))
	}
	marker, err := openMarker(j.Marker)
	if err != nil {
		return fail(fmt.Errorf("holder marker: %w", err))
	}
	return lk, marker, clock, nil
}

// runContender runs j as one contender and sends its calls and its done
// line. It waits for the start instant, so that every contender of the
// run starts together. With lk nil it opens the library of cold at the
// start instant (a failure to open is the run's one error, and the
// contender makes no call); it returns the Locker it ran with.
func runContender(lk Locker, cold *openJob, clock sharedClock, marker *holderMarker, j runJob, send func(fromContender) error) (Locker, error) {
	if j.Window <= 0 || j.Work < 0 {
		return lk, errors.New("run with no window or a negative work time")
	}
	start := clock.local(j.Start)
	if d := time.Until(start); d > 0 {
		time.Sleep(d)
	}
	late := max(time.Since(start), 0)
	if lk == nil {
		lib, _ := contenderLibrary(cold.Lib)
		var err error
		if lk, err = lib.Open(cold.Addrs, cold.TTL, cold.NodeTimeout, cold.Tries); err != nil {
			text := truncate(fmt.Sprintf("open %s: %v", lib.Name, err), maxErrorText)
			return nil, send(fromContender{Done: &doneMsg{Errors: 1, FirstErr: text, Late: late}})
		}
	}
	m := lk.Mutex(j.Key)
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(j.Window))
	c := contend(ctx, m, 0, j.Work, start, marker)
	cancel()
	for _, k := range c.calls {
		g := int64(k.granted)
		if k.granted == never {
			g = neverGranted
		}
		if err := send(fromContender{Call: []int64{int64(k.asked), g, int64(k.unlock), int64(k.release)}}); err != nil {
			return lk, err
		}
	}
	return lk, send(fromContender{Done: &doneMsg{Calls: len(c.calls), Errors: c.errors, FirstErr: truncate(c.firstErr, maxErrorText),
		Checked: c.checked, Overlaps: c.overlaps, Late: late}})
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
