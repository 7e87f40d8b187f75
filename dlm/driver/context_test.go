package driver_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

type ctxKey struct{}

func TestWithNodeDeadline(t *testing.T) {
	t.Parallel()
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancelParent()
	d := time.Now().Add(time.Hour)
	ctx, cancel := driver.WithNodeDeadline(parent, d)
	defer cancel()

	if !driver.DeadlineOnly(ctx) {
		t.Error("DeadlineOnly(WithNodeDeadline(...)) = false; want true")
	}
	if got, ok := ctx.Deadline(); !ok || !got.Equal(d) {
		t.Errorf("Deadline() = %v, %v; want %v, true", got, ok, d)
	}
	if got := ctx.Value(ctxKey{}); got != "v" {
		t.Errorf("Value(key) = %v; want the parent's value %q", got, "v")
	}
	cancelParent()
	if err := ctx.Err(); err != nil {
		t.Errorf("after the parent's cancellation, Err() = %v; want nil: only the deadline or cancel ends it", err)
	}
	cancel()
	if err := ctx.Err(); err != context.Canceled {
		t.Errorf("after cancel, Err() = %v; want %v", err, context.Canceled)
	}

	expired, cancelExpired := driver.WithNodeDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	if err := expired.Err(); err != context.DeadlineExceeded {
		t.Errorf("past deadline: Err() = %v; want %v", err, context.DeadlineExceeded)
	}
}

func TestDeadlineOnlyOtherContexts(t *testing.T) {
	t.Parallel()
	nd, cancel := driver.WithNodeDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	derived, cancelDerived := context.WithCancel(nd)
	defer cancelDerived()
	timeout, cancelTimeout := context.WithTimeout(context.Background(), time.Hour)
	defer cancelTimeout()
	for _, tc := range []struct {
		name string
		ctx  context.Context
	}{
		{"Background", context.Background()},
		{"WithTimeout", timeout},
		{"WithCancel of a node deadline context", derived},
	} {
		if driver.DeadlineOnly(tc.ctx) {
			t.Errorf("DeadlineOnly(%s) = true; want false", tc.name)
		}
	}
}

// pastDeadline is a context whose deadline has passed while its Err is not
// set yet, as a socket timeout can see it.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestContextError(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	running, cancelRunning := context.WithTimeout(context.Background(), time.Hour)
	defer cancelRunning()
	errIO := errors.New("read tcp 127.0.0.1:6379: i/o timeout")
	wrappedDeadline := fmt.Errorf("client: %w", context.DeadlineExceeded)
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		same     bool    // err comes back as it is
		wantIs   []error // when not same
		wantText string  // when not same
	}{
		{name: "no deadline", ctx: context.Background(), err: errIO, same: true},
		{name: "deadline ahead", ctx: running, err: errIO, same: true},
		{name: "cancelled", ctx: cancelled, err: errIO,
			wantIs: []error{context.Canceled, errIO}, wantText: "context canceled: " + errIO.Error()},
		{name: "deadline exceeded", ctx: expired, err: errIO,
			wantIs: []error{context.DeadlineExceeded, errIO}, wantText: "context deadline exceeded: " + errIO.Error()},
		{name: "deadline passed, Err not set yet", ctx: pastDeadline{context.Background()}, err: errIO,
			wantIs: []error{context.DeadlineExceeded, errIO}, wantText: "context deadline exceeded: " + errIO.Error()},
		{name: "cancelled, err is Canceled", ctx: cancelled, err: context.Canceled, same: true},
		{name: "deadline exceeded, err wraps DeadlineExceeded", ctx: expired, err: wrappedDeadline, same: true},
		{name: "cancelled, err wraps DeadlineExceeded", ctx: cancelled, err: wrappedDeadline,
			wantIs:   []error{context.Canceled, context.DeadlineExceeded, wrappedDeadline},
			wantText: "context canceled: " + wrappedDeadline.Error()},
	} {
		got := driver.ContextError(tc.ctx, tc.err)
		if tc.same {
			if got != tc.err {
				t.Errorf("%s: ContextError(ctx, %v) = %v; want the error itself", tc.name, tc.err, got)
			}
			continue
		}
		for _, target := range tc.wantIs {
			if !errors.Is(got, target) {
				t.Errorf("%s: errors.Is(ContextError(ctx, %v), %v) = false; want true", tc.name, tc.err, target)
			}
		}
		if got == nil || got.Error() != tc.wantText {
			t.Errorf("%s: ContextError(ctx, %v) = %v; want %q", tc.name, tc.err, got, tc.wantText)
		}
	}
}
