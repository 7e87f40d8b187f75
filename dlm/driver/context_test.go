package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/driver"
)

type ctxKey struct{}

func TestWithNodeDeadline(t *testing.T) {
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
