package dlm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

// TestUntilMonotonicAfterClockStep checks that Handle.Until is the wall
// clock's now plus the validity left by the monotonic clock: after the wall
// clock stepped back an hour, it is not an hour too late.
func TestUntilMonotonicAfterClockStep(t *testing.T) {
	t.Parallel()
	fs := newFakes(3)
	m := newManager(t, fs, WithTTL(10*time.Second))
	l, err := m.TryLock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())
	m.wallNow = func() time.Time { return time.Now().Add(-time.Hour) } // the wall clock stepped back
	h := l.Handle()
	left := time.Until(l.Until())
	if got := h.Until.Sub(m.wallNow()); got > left+time.Second || got < left-time.Second {
		t.Errorf("Handle().Until = wall now + %v; want wall now + %v, the validity left", got, left)
	}
	// The receiver's wall clock stepped back too: Resume counts from it.
	r, err := m.Resume(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Until(r.Until()); got > left+time.Second {
		t.Errorf("Resume(h).Until() = now + %v; want at most now + %v", got, left)
	}
}

// TestEvenNodesWarnByDefault checks that New warns about an even number of
// nodes on slog.Default when no logger was given, and that WithLogger(nil)
// silences it.
func TestEvenNodesWarnByDefault(t *testing.T) {
	t.Parallel()
	var buf logBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	newManager(t, newFakes(2))
	if !strings.Contains(buf.String(), "even number of nodes") {
		t.Errorf("New(2 nodes) logged %q on slog.Default; want a warning about the even number of nodes", buf.String())
	}
	var silent bytes.Buffer
	slog.SetDefault(slog.New(slog.NewTextHandler(&silent, nil)))
	newManager(t, newFakes(2), WithLogger(nil))
	if silent.Len() != 0 {
		t.Errorf("New(2 nodes, WithLogger(nil)) logged %q; want nothing", silent.String())
	}
}

// TestOpenBareAddress checks that Open and OpenNode refuse a bare
// host:port as a bad URL, with an error that says which URL to write.
func TestOpenBareAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:6379", "localhost:6379", "[::1]:6379"} {
		_, err := Open([]string{addr})
		if !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), "write redis://"+addr) {
			t.Errorf("Open(%q) = %v; want driver.ErrBadURL naming redis://%s", addr, err, addr)
		}
		_, err = OpenNode(addr)
		if !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), "write redis://"+addr) {
			t.Errorf("OpenNode(%q) = %v; want driver.ErrBadURL naming redis://%s", addr, err, addr)
		}
	}
}
