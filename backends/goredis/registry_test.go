package goredis

import (
	"slices"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestPlainURL relies on this test binary linking no driver but this one.
func TestPlainURL(t *testing.T) {
	t.Parallel()
	if got := dlm.Drivers(); !slices.Equal(got, []string{Name}) {
		t.Fatalf("Drivers() = %v; want [%s]", got, Name)
	}
	s := redistest.StartServer(t)
	n := openNode(t, "redis://"+s.Addr())
	if _, ok := n.(*node); !ok {
		t.Errorf("OpenNode(redis://...) = %T; want a %s node", n, Name)
	}
	if n.Addr() != s.Addr() {
		t.Errorf("Addr() = %q; want %q", n.Addr(), s.Addr())
	}
	if v, err := eval(n, echo, nil, []string{"plain"}); v != "plain" || err != nil {
		t.Errorf("Eval = %v, %v; want plain, nil", v, err)
	}
}
