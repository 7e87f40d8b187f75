package driver

import (
	"errors"
	"strings"
	"testing"
)

func TestRecover(t *testing.T) {
	t.Parallel()
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = Recover("fake", r, "s3cret")
			}
		}()
		panic("dial redis://:s3cret@host:1 failed")
	}()
	var perr *PanicError
	if !errors.As(err, &perr) {
		t.Fatalf("Recover = %v (%T); want a *PanicError", err, err)
	}
	if perr.Client != "fake" || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "panicked") {
		t.Errorf("Recover = %q (client %q); want a redacted panic of client fake", err, perr.Client)
	}
	if len(perr.Stack) == 0 {
		t.Error("Recover left Stack empty")
	}
}
