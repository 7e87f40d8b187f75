package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// holderEnv, set in the environment of the test binary, makes it a holder
// process ([holderMain]) instead of running the tests; its value is the
// comma-separated node URLs.
const holderEnv = "REDLOCK_SAFETY_HOLDER"

// TestMain runs the holder process when the safety matrix re-executes the
// test binary as one, and the tests otherwise.
func TestMain(m *testing.M) {
	if urls := os.Getenv(holderEnv); urls != "" {
		os.Exit(holderMain(strings.Split(urls, ","), os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

// holderNodeTimeout is the node timeout of a holder process's manager.
const holderNodeTimeout = 100 * time.Millisecond

// holderMain is a lock holder in a process of its own, driven line by line
// on in, answering on out: the process the safety matrix freezes with
// SIGSTOP. Its writes to the protected resource go out on out too, with the
// token and grant of the lock they are made under. Commands:
//
//	lock KEY TTL_MS FENCED(0|1) AUTOEXTEND(0|1) -> granted TOKEN GRANT LEFT_MS | failed CLASS
//	check                                       -> checked VALID(0|1) LEFT_MS
//	write                                       -> write TOKEN GRANT
//	lost                                        -> lost CLOSED(0|1)
//	unlock                                      -> unlocked
//
// check is the holder's test before it acts: the validity has not ended,
// and, under auto-extension, Lost is open. write does not check again: a
// pause between the check and the write is the scenario.
func holderMain(urls []string, in io.Reader, out io.Writer) int {
	m, err := dlm.Open(urls, dlm.WithNodeTimeout(holderNodeTimeout))
	if err != nil {
		fmt.Fprintf(out, "failed open\n")
		return 1
	}
	defer m.Close()
	var l *dlm.Lock
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "lock":
			if len(f) != 5 {
				fmt.Fprintf(out, "failed usage\n")
				continue
			}
			ms, _ := strconv.Atoi(f[2])
			opts := []dlm.Option{dlm.WithTTL(time.Duration(ms) * time.Millisecond)}
			if f[3] == "1" {
				opts = append(opts, dlm.WithFencing())
			}
			if f[4] == "1" {
				opts = append(opts, dlm.WithAutoExtend(dlm.AutoExtend{}))
			}
			if l, err = m.TryLock(context.Background(), f[1], opts...); err != nil {
				fmt.Fprintf(out, "failed %s\n", errorClass(err))
				continue
			}
			fmt.Fprintf(out, "granted %d %d %d\n", l.Token(), l.GrantID(), time.Until(l.Until()).Milliseconds())
		case "check":
			valid := l != nil && time.Now().Before(l.Until())
			if l != nil {
				select {
				case <-l.Lost():
					valid = false
				default:
				}
			}
			left := int64(0)
			if l != nil {
				left = time.Until(l.Until()).Milliseconds()
			}
			fmt.Fprintf(out, "checked %d %d\n", b2i(valid), left)
		case "write":
			if l == nil {
				fmt.Fprintf(out, "write 0 0\n")
				continue
			}
			fmt.Fprintf(out, "write %d %d\n", l.Token(), l.GrantID())
		case "lost":
			closed := false
			if l != nil {
				select {
				case <-l.Lost():
					closed = true
				case <-time.After(2 * time.Second):
				}
			}
			fmt.Fprintf(out, "lost %d\n", b2i(closed))
		case "unlock":
			if l != nil {
				_ = l.Unlock(context.Background())
				l = nil
			}
			fmt.Fprintf(out, "unlocked\n")
		default:
			fmt.Fprintf(out, "failed usage\n")
		}
	}
	return 0
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// holderProc is the test's side of a holder process.
type holderProc struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// holderReplyTimeout bounds the wait for one line from a holder process
// that is not frozen: it covers a TryLock, whose node requests end within
// holderNodeTimeout, on a loaded machine.
const holderReplyTimeout = 10 * time.Second

// startHolder starts the test binary again as a holder process over urls.
// It is killed in t.Cleanup.
func startHolder(t testing.TB, urls []string) *holderProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+strings.Join(urls, ","))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a holder process: %v", err)
	}
	h := &holderProc{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = in.Close()
		_ = cmd.Wait()
	})
	return h
}

// send writes one command line.
func (h *holderProc) send(format string, args ...any) {
	h.t.Helper()
	if _, err := fmt.Fprintf(h.in, format+"\n", args...); err != nil {
		h.t.Fatalf("holder process: %v", err)
	}
}

// reply returns the next line, split into fields, whose first field is
// want; it fails the test after timeout.
func (h *holderProc) reply(want string, timeout time.Duration) []string {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("holder process ended; want %q", want)
		}
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != want && f[0] != "failed") {
			h.t.Fatalf("holder process said %q; want %q", line, want)
		}
		return f
	case <-time.After(timeout):
		h.t.Fatalf("holder process: no %q within %v", want, timeout)
	}
	return nil
}

// heldLock is what a holder process reported of its grant.
type heldLock struct {
	token, grant uint64
	left         time.Duration
}

// errHolderRefused is returned by lock when the holder was not granted.
var errHolderRefused = errors.New("holder process not granted")

// lock makes the holder take key and returns its grant.
func (h *holderProc) lock(key string, ttl time.Duration, fenced, autoExtend bool) (heldLock, error) {
	h.t.Helper()
	h.send("lock %s %d %d %d", key, ttl.Milliseconds(), b2i(fenced), b2i(autoExtend))
	f := h.reply("granted", holderReplyTimeout)
	if f[0] == "failed" || len(f) != 4 {
		return heldLock{}, fmt.Errorf("%w: %v", errHolderRefused, f)
	}
	tok, _ := strconv.ParseUint(f[1], 10, 64)
	grant, _ := strconv.ParseUint(f[2], 10, 64)
	left, _ := strconv.ParseInt(f[3], 10, 64)
	return heldLock{token: tok, grant: grant, left: time.Duration(left) * time.Millisecond}, nil
}

// check asks the holder whether it may act, and how much of its validity
// is left.
func (h *holderProc) check() (bool, time.Duration) {
	h.t.Helper()
	h.send("check")
	f := h.reply("checked", holderReplyTimeout)
	if len(f) != 3 {
		return false, 0
	}
	left, _ := strconv.ParseInt(f[2], 10, 64)
	return f[1] == "1", time.Duration(left) * time.Millisecond
}

// signal sends sig to the holder process.
func (h *holderProc) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("signal %v to the holder process: %v", sig, err)
	}
}
