package redigo

import (
	"context"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// echo is a script that returns its first argument.
const echo = "return ARGV[1]"

// slack is how much later than its context a call may return.
const slack = 500 * time.Millisecond

// openNode opens url through the registry and closes the node when the test
// ends.
func openNode(t *testing.T, url string) driver.Node {
	t.Helper()
	n, err := dlm.OpenNode(url)
	if err != nil {
		t.Fatalf("OpenNode(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return n
}

// eval runs src on n with a 5-second deadline.
func eval(n driver.Node, src string, keys, args []string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return n.Eval(ctx, driver.NewScript(src), keys, args)
}
