package goredis

import (
	"testing"

	"github.com/dlmgo/redlock/internal/adapterkit/hostile"
)

// TestReplyLimit checks that a node answering a script call or a SUBSCRIBE
// with a header that announces gigabytes ("*10000000000\r\n") fails the
// call, where goredis alone allocates what the header says and the process
// dies of it. Not parallel: it counts the bytes the process allocates.
func TestReplyLimit(t *testing.T) { hostile.TestReplyLimit(t, Name) }
