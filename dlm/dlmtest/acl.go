package dlmtest

import (
	"fmt"
	"github.com/dlmgo/redlock/dlm/redistest"
	"strings"
	"testing"
)

// LeastPrivilegeRules returns the rules of a Redis ACL user that may do what
// package dlm does with keys under prefix and nothing else, one rule per
// element: the arguments of ACL SETUSER after the user's name, or, joined by
// spaces, the rest of an ACL file's line after "user NAME on >PASSWORD".
// For the default prefix:
//
//	resetkeys ~redlock:*       lock keys, their fencing counters (":fence")
//	                           and restart-guard keys (":guard")
//	resetchannels &redlock:*   the channels (":wake") on which releases are
//	                           announced, for waking waiters
//	-@all                      nothing but what follows
//	+evalsha +eval             every operation is one script, run by EVALSHA,
//	                           or by EVAL when the node has not cached it
//	+get +set +del +pexpire    what the scripts call: acquire GET and SET,
//	+pttl                      release GET and DEL, extend GET and PEXPIRE,
//	                           Status PTTL and GET; SET is also sent alone
//	                           (SET NX GET) to take a free key; Open's
//	                           probe of two nodes that said one run_id
//	                           GETs and SETs a key under the prefix
//	+exists                    a release looks up, with one EXISTS, whether
//	                           anything beside the key (a line, an intent,
//	                           listeners) needs more than a compare-and-
//	                           delete; without it every release takes the
//	                           full way
//	+strlen                    an election's readers (Election.Observe, Leader)
//	                           measure the leader's value before they read
//	                           it, and never read one that is too long
//	+time +info                the scripts read the node's clock (the places
//	                           in the lines of waiters), and those of
//	                           WithRestartGuard its uptime; Open reads the
//	                           node's run_id, to recognise a server named
//	                           twice
//	+zadd +zrem +zrange        each lock key's line of waiters, two sorted
//	+zrangebyscore +zscore     sets (":waiters", ":waiters:end")
//	+zcard
//	+publish +pubsub|numsub    a release names the waiter it hands a key to
//	                           on its manager's channel, and announces on
//	                           the key's broadcast channel, with the number
//	                           of listeners, a release that handed the key
//	                           to nobody and an election's grants
//	+subscribe +unsubscribe    waiting clients listen on wake channels, on a
//	                           connection of their own, for waking waiters
//	+ping                      sent by Open in the goredis and redigo
//	                           drivers, by rueidis on idle connections, and
//	                           by driver.Pinger
//
// Scripts run with the caller's rights, so the commands they call need rules
// of their own, and the key pattern also applies to the keys a script is
// given. AUTH and HELLO, which clients send to log in, need no rule. A node
// URL that names a database other than 0 needs +select as well. prefix's
// glob characters (* ? [ ] \) are escaped; a prefix with spaces cannot be
// written in an ACL file.
func LeastPrivilegeRules(prefix string) []string {
	p := escapeGlob(prefix)
	return []string{
		"resetkeys", "~" + p + "*",
		"resetchannels", "&" + p + "*",
		"-@all",
		"+evalsha", "+eval",
		"+get", "+set", "+del", "+pexpire", "+pttl", "+exists", "+strlen",
		"+time", "+info",
		"+zadd", "+zrem", "+zrange", "+zrangebyscore", "+zscore", "+zcard",
		"+publish", "+pubsub|numsub", "+subscribe", "+unsubscribe",
		"+ping",
	}
}

// escapeGlob escapes the characters that Redis glob patterns give a meaning.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// aclDenials returns what s's ACL LOG recorded as refused to user, oldest
// first, each as "REASON OBJECT": "command pexpire", "key app:{k}",
// "channel redlock:{k}:wake", "auth AUTH".
func aclDenials(t *testing.T, s *redistest.Server, user string) []string {
	t.Helper()
	v, err := s.Do("ACL", "LOG")
	if err != nil {
		t.Fatalf("ACL LOG on %s: %v", s.Addr(), err)
	}
	entries, ok := v.([]any)
	if !ok {
		t.Fatalf("ACL LOG on %s = %#v; want an array", s.Addr(), v)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		fields, _ := entries[i].([]any)
		e := map[string]string{}
		for j := 0; j+1 < len(fields); j += 2 {
			e[fmt.Sprint(fields[j])] = fmt.Sprint(fields[j+1])
		}
		if e["username"] == user {
			out = append(out, e["reason"]+" "+e["object"])
		}
	}
	return out
}
