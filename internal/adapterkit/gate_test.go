package adapterkit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestGate checks the gate's promises: Go returns the call's result, or
// ctx's error as soon as ctx ends while the call goes on, and Wait waits for
// that call; after Close no call enters or starts, and Close reports only
// the first time that it closed the gate.
func TestGate(t *testing.T) {
	t.Parallel()
	errClosed := errors.New("closed")
	var g Gate
	if v, err := g.Go(context.Background(), errClosed, func(context.Context) (any, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("Go(a call returning 7) = %v, %v; want 7, nil", v, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	release, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		if v, err := g.Go(ctx, errClosed, func(context.Context) (any, error) { <-release; return 1, nil }); v != nil || !errors.Is(err, context.Canceled) {
			t.Errorf("Go(a call outlasting its cancelled context) = %v, %v; want nil, context.Canceled", v, err)
		}
	}()
	cancel()
	<-ended // returned while the call is still blocked
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned while a call Go started was running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-waited

	if !g.Enter() {
		t.Fatal("Enter of an open gate = false")
	}
	closed := make(chan bool)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a call was inside")
	case <-time.After(50 * time.Millisecond):
	}
	g.Leave()
	if !<-closed || g.Close() {
		t.Error("Close, Close = not true, false; want the first only to report the gate open")
	}
	if g.Enter() || !g.Closed() {
		t.Error("Enter or Closed of a closed gate says it is open")
	}
	for _, ctx := range []context.Context{context.Background(), ctx} {
		if _, err := g.Go(ctx, errClosed, func(context.Context) (any, error) { t.Error("a call ran after Close"); return nil, nil }); err != errClosed {
			t.Errorf("Go after Close = %v; want %v", err, errClosed)
		}
	}
}
