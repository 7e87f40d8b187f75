package goredis

import (
	"errors"
	"testing"
)

// replyErr is an error reply as go-redis reports it.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestRefused checks which answers to Open's PING fail Open: error replies
// that will not go away, not those of a server (or cluster) not ready yet,
// nor connection errors.
func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{replyErr("WRONGPASS invalid username-password pair"), true},
		{replyErr("NOPERM this user has no permissions"), true},
		{replyErr("ERR DB index is out of range"), true},
		{replyErr("LOADING Redis is loading the dataset in memory"), false},
		{replyErr("MASTERDOWN Link with MASTER is down"), false},
		{replyErr("CLUSTERDOWN The cluster is down"), false},
		{replyErr("TRYAGAIN Multiple keys request during rehashing of slot"), false},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false},
	} {
		if got := refused(tc.err); got != tc.want {
			t.Errorf("refused(%q) = %v; want %v", tc.err, got, tc.want)
		}
	}
}
