package goredis

import (
	"errors"
	"testing"
)

// replyErr is an error reply as go-redis reports it.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestErrorReply checks that Open's check tells go-redis' error replies from
// its other errors.
func TestErrorReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
		ok   bool
	}{
		{replyErr("WRONGPASS invalid username-password pair"), "WRONGPASS invalid username-password pair", true},
		{replyErr("LOADING Redis is loading the dataset in memory"), "LOADING Redis is loading the dataset in memory", true},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), "", false},
	} {
		if got, ok := errorReply(tc.err); got != tc.want || ok != tc.ok {
			t.Errorf("errorReply(%q) = %q, %v; want %q, %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}
