package dlmtest

import (
	"github.com/dlmgo/redlock/dlm/redistest"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// testPasswordWithoutServerPassword checks the rule of [driver.CheckOpen]:
// a URL with a password for the default user, of a server that has none,
// fails Open with the server's answer to AUTH, while the same URL opens the
// server that wants that password.
func (d driverSuite) testPasswordWithoutServerPassword(t *testing.T) {
	open := redistest.StartServer(t)
	locked := redistest.StartServer(t, redistest.WithArgs("--requirepass", "s3cret"))
	for _, user := range []string{"", "default"} {
		u := d.plain + user + ":s3cret@" + open.Addr()
		n, err := dlm.OpenNode(u)
		if err == nil {
			n.Close()
			t.Errorf("OpenNode(%q) of a server without a password = nil error; want the refused AUTH", driver.Redact(u))
			continue
		}
		if !strings.Contains(err.Error(), "AUTH") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("OpenNode(%q) of a server without a password = %v; want the refused AUTH, without the password", driver.Redact(u), err)
		}
		u = d.plain + user + ":s3cret@" + locked.Addr()
		if v, err := evalSource(d.open(t, u), echoScript, nil, []string{"hi"}); v != "hi" || err != nil {
			t.Errorf("Eval through %s = %v, %v; want hi, nil", driver.Redact(u), v, err)
		}
	}
}

// openErrorReplies are error replies a server may give a client that
// connects, and whether Open opens the node (the server is not ready yet)
// or fails (it refuses the node's settings): the cases of
// [driver.Transient].
var openErrorReplies = []struct {
	reply string
	opens bool
}{
	{"LOADING Redis is loading the dataset in memory", true},
	{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", true},
	{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true},
	{"TRYAGAIN Multiple keys request during rehashing of slot", true},
	{"CLUSTERDOWN The cluster is down", true},
	{"ERR max number of clients reached", true},
	{"NOAUTH Authentication required.", false},
	{"WRONGPASS invalid username-password pair or user is disabled.", false},
	{"NOPERM this user has no permissions to run the 'ping' command", false},
	{"ERR DB index is out of range", false},
}

// testOpenErrorReplies checks that every driver's Open makes of a server's
// error replies what [driver.Transient] says: a server that answers every
// command with one of them, the handshake included, either fails Open with
// that reply, or leaves a node whose calls fail with it.
func (d driverSuite) testOpenErrorReplies(t *testing.T) {
	for _, tc := range openErrorReplies {
		if driver.Transient(tc.reply) != tc.opens {
			t.Fatalf("driver.Transient(%q) = %v; want %v", tc.reply, !tc.opens, tc.opens)
		}
		t.Run(strings.ReplaceAll(tc.reply, " ", "_"), func(t *testing.T) {
			t.Parallel()
			s := startReplyServer(t, "-"+tc.reply+"\r\n")
			// The reply's message: rueidis drops the code ERR from its
			// errors.
			_, msg, _ := strings.Cut(tc.reply, " ")
			n, err := dlm.OpenNode(d.plain + s.Addr())
			switch {
			case !tc.opens && err == nil:
				n.Close()
				t.Errorf("OpenNode of a server answering %q = nil error; want that reply", tc.reply)
			case !tc.opens && !strings.Contains(err.Error(), msg):
				t.Errorf("OpenNode of a server answering %q = %v; want that reply", tc.reply, err)
			case tc.opens && err != nil:
				t.Errorf("OpenNode of a server answering %q = %v; want the node opened", tc.reply, err)
			case tc.opens:
				defer n.Close()
				if v, err := evalSource(n, echoScript, nil, []string{"x"}); err == nil || !strings.Contains(err.Error(), msg) {
					t.Errorf("Eval on a server answering %q = %v, %v; want that reply", tc.reply, v, err)
				}
			}
		})
	}
}
