package adapterkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestCtxError checks that a context.DeadlineExceeded of the client's own
// passes for the caller's only when the caller's deadline has passed.
func TestCtxError(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	running, cancelRunning := context.WithTimeout(context.Background(), time.Hour)
	defer cancelRunning()
	errConn := errors.New("dial tcp 127.0.0.1:6379: connection refused")
	errTimeout := fmt.Errorf("rueidis: %w", context.DeadlineExceeded)
	errIOTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	errClientTimeout := newErrs("fake").clientTimeout
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		want   error   // the result itself, when set
		wantIs []error // otherwise: what it matches
		notIs  []error // and what it does not
	}{
		{name: "running, connection error", ctx: running, err: errConn, want: errConn},
		{name: "running, client timeout", ctx: running, err: errTimeout, want: errClientTimeout},
		{name: "no deadline, client timeout", ctx: context.Background(), err: errTimeout, want: errClientTimeout},
		{name: "deadline exceeded, timeout", ctx: expired, err: errTimeout, want: errTimeout},
		{name: "deadline exceeded, connection error", ctx: expired, err: errConn,
			wantIs: []error{context.DeadlineExceeded, errConn}},
		{name: "cancelled, client timeout", ctx: cancelled, err: errTimeout,
			wantIs: []error{context.Canceled, errClientTimeout}, notIs: []error{context.DeadlineExceeded}},
		{name: "cancelled, connection error", ctx: cancelled, err: errConn,
			wantIs: []error{context.Canceled, errConn}},
		{name: "cancelled, Canceled", ctx: cancelled, err: context.Canceled, want: context.Canceled},
		// A socket deadline set from the caller's may fire a moment before
		// it: while the caller's runs, it is a client timeout.
		{name: "running, socket timeout", ctx: running, err: errIOTimeout, want: errClientTimeout},
		{name: "deadline exceeded, socket timeout", ctx: expired, err: errIOTimeout,
			wantIs: []error{context.DeadlineExceeded, os.ErrDeadlineExceeded}},
	} {
		got := ctxError(tc.ctx, tc.err, errClientTimeout)
		if tc.want != nil {
			if got != tc.want {
				t.Errorf("%s: ctxError(ctx, %v) = %v; want %v", tc.name, tc.err, got, tc.want)
			}
			continue
		}
		for _, target := range tc.wantIs {
			if !errors.Is(got, target) {
				t.Errorf("%s: errors.Is(ctxError(ctx, %v), %v) = false; want true", tc.name, tc.err, target)
			}
		}
		for _, target := range tc.notIs {
			if errors.Is(got, target) {
				t.Errorf("%s: errors.Is(ctxError(ctx, %v), %v) = true; want false", tc.name, tc.err, target)
			}
		}
	}
}
