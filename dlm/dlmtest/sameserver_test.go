package dlmtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// samePassword is the password of the servers of these tests, which no
// error may show.
const samePassword = "Same5erverPassw0rd"

// sameURL is the URL of the resp node reaching a server of these tests as
// host:port.
func sameURL(host string, port int) string {
	return fmt.Sprintf("redis+resp://:%s@%s:%d?dial_timeout=1s", samePassword, host, port)
}

// TestOneServerNamedTwiceRefused checks that Open refuses URLs that reach
// one redis-server under several names (127.0.0.1:P, localhost:P,
// 127.0.0.2:P) with ErrInvalid naming two of them and no password, since
// the server would count twice or three times in every quorum; and that
// three servers reached under those names, one restarted (a new run_id)
// after Open, are three nodes.
func TestOneServerNamedTwiceRefused(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 3, redistest.WithArgs("--bind", "127.0.0.1 127.0.0.2", "--requirepass", samePassword))
	p, q := srvs[0].Port(), srvs[1].Port()
	for _, tc := range []struct {
		name  string
		urls  []string
		names []string // the addresses the error may name; two must be
	}{
		{"three names of one server",
			[]string{sameURL("127.0.0.1", p), sameURL("localhost", p), sameURL("127.0.0.2", p)},
			[]string{fmt.Sprint("127.0.0.1:", p), fmt.Sprint("localhost:", p), fmt.Sprint("127.0.0.2:", p)}},
		{"two names of one server and another server",
			[]string{sameURL("127.0.0.2", p), sameURL("127.0.0.1", q), sameURL("localhost", p)},
			[]string{fmt.Sprint("127.0.0.2:", p), fmt.Sprint("localhost:", p)}},
	} {
		m, err := dlm.Open(tc.urls, dlm.WithNodeTimeout(2*time.Second))
		if m != nil {
			m.Close()
		}
		named := 0
		for _, a := range tc.names {
			if err != nil && strings.Contains(err.Error(), a) {
				named++
			}
		}
		if !errors.Is(err, dlm.ErrInvalid) || named != 2 || !strings.Contains(err.Error(), "one server") {
			t.Errorf("%s: Open = %v; want ErrInvalid naming two of %q as one server", tc.name, err, tc.names)
		}
		if err != nil && strings.Contains(err.Error(), samePassword) {
			t.Errorf("%s: Open's error shows the password: %v", tc.name, err)
		}
	}

	ctx := context.Background()
	const nodeTimeout = 2 * time.Second
	m, err := dlm.Open([]string{sameURL("127.0.0.1", srvs[0].Port()), sameURL("localhost", srvs[1].Port()), sameURL("127.0.0.2", srvs[2].Port())},
		dlm.WithNodeTimeout(nodeTimeout))
	if err != nil {
		t.Fatalf("Open of three servers under three names = %v", err)
	}
	defer m.Close()
	srvs[0].Restart()
	for _, key := range []string{"before", "after"} {
		l, err := m.TryLock(ctx, key)
		if err != nil {
			t.Fatalf("TryLock(%s) = %v", key, err)
		}
		// TryLock returns at a quorum of two; the restarted server's SET,
		// on a new connection, may land later, within the node timeout.
		deadline := time.Now().Add(2*nodeTimeout + time.Second)
		for {
			sts, err := m.Status(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			var wrong []string
			for _, st := range sts {
				if !st.Held || st.Err != nil {
					wrong = append(wrong, fmt.Sprintf("%s: held %v, %v", st.Node, st.Held, st.Err))
				}
			}
			if len(wrong) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("after a restart of %s, Status(%s) = %v; want held by every server", srvs[0].Addr(), key, wrong)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		l.Unlock(ctx)
	}
}

// TestOneServerFoundLaterNotCounted checks that a node that did not answer
// Open and turns out, at its first contact, to be the same server as
// another node never counts: with the third server down, the two names of
// one server do not make a quorum of three; the duplicate fails with an
// error matching ErrInvalid that names both nodes, logged once.
func TestOneServerFoundLaterNotCounted(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartServers(t, 2, redistest.WithArgs("--requirepass", samePassword))
	p := srvs[0].Port()
	var logged syncBuffer
	m, err := dlm.Open([]string{sameURL("127.0.0.1", p), sameURL("127.0.0.2", p), sameURL("127.0.0.1", srvs[1].Port())},
		dlm.WithNodeTimeout(2*time.Second), dlm.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
	if err != nil {
		t.Fatalf("Open with 127.0.0.2:%d unreachable = %v; want a manager", p, err)
	}
	defer m.Close()
	// The server now answers on 127.0.0.2 too, under the same run_id.
	if _, err := srvs[0].Do("CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	srvs[1].Kill()
	ctx := context.Background()
	dupAddr := fmt.Sprint("127.0.0.2:", p)
	for _, key := range []string{"a", "b"} {
		l, err := m.TryLock(ctx, key)
		if err == nil {
			l.Unlock(ctx)
			t.Fatalf("TryLock(%s) on one server named twice, the third down = a lock; want no quorum", key)
		}
		want := fmt.Sprintf("node %s: node 1 (%s) is the same server as node 0 (127.0.0.1:%d)", dupAddr, dupAddr, p)
		if !errors.Is(err, dlm.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("TryLock(%s) = %v; want ErrInvalid and %q", key, err, want)
		}
		if strings.Contains(err.Error(), samePassword) {
			t.Errorf("TryLock(%s)'s error shows the password: %v", key, err)
		}
	}
	if n := strings.Count(logged.String(), "two nodes are one server"); n != 1 {
		t.Errorf("the duplicate was logged %d times; want once:\n%s", n, logged.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
