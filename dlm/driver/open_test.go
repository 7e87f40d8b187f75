package driver

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestTransient checks the one classification of error replies the
// adapters' Open makes: a server not ready yet, or refusing the settings.
func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply string
		want  bool
	}{
		{"LOADING Redis is loading the dataset in memory", true},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", true},
		{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true},
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"CLUSTERDOWN The cluster is down", true},
		{"CLUSTERDOWN", true},
		{"ERR max number of clients reached", true},
		{"WRONGPASS invalid username-password pair or user is disabled.", false},
		{"NOAUTH Authentication required.", false},
		{"NOPERM this user has no permissions to run the 'ping' command", false},
		{"ERR DB index is out of range", false},
		{"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", false},
		{"ERR unknown command 'PING'", false},
		{"LOADINGX not a code of ours", false},
		{"loading lower case is not the code", false},
		{"BUSYKEY Target key name already exists.", false},
		{"", false},
	} {
		if got := Transient(tc.reply); got != tc.want {
			t.Errorf("Transient(%q) = %v; want %v", tc.reply, got, tc.want)
		}
	}
}

// replyError is an error reply as a fake client reports it.
type replyError string

func (e replyError) Error() string { return string(e) }

func fakeErrorReply(err error) (string, bool) {
	var r replyError
	if errors.As(err, &r) {
		return string(r), true
	}
	return "", false
}

// TestCheckOpen checks what Open's check sends, and which answers fail it.
func TestCheckOpen(t *testing.T) {
	t.Parallel()
	refusal := replyError("ERR AUTH <password> called without any password configured for the default user")
	for _, tc := range []struct {
		name    string
		cfg     Config
		answers map[string]error // by command name; nil answers OK
		sent    [][]string
		wantErr string
	}{
		{name: "no password", sent: [][]string{{"PING"}}},
		{name: "password", cfg: Config{Password: "pw"}, sent: [][]string{{"PING"}, {"AUTH", "pw"}}},
		{name: "default user", cfg: Config{Username: "default", Password: "pw"}, sent: [][]string{{"PING"}, {"AUTH", "pw"}}},
		{name: "ACL user", cfg: Config{Username: "alice", Password: "pw"}, sent: [][]string{{"PING"}}},
		{name: "user without password", cfg: Config{Username: "default"}, sent: [][]string{{"PING"}}},
		{name: "password not wanted", cfg: Config{Password: "pw"}, answers: map[string]error{"AUTH": refusal},
			sent: [][]string{{"PING"}, {"AUTH", "pw"}}, wantErr: string(refusal)},
		{name: "wrong password", cfg: Config{Password: "pw"}, answers: map[string]error{"PING": replyError("WRONGPASS invalid pw")},
			sent: [][]string{{"PING"}}, wantErr: "WRONGPASS invalid " + Redacted},
		{name: "loading", cfg: Config{Password: "pw"}, answers: map[string]error{"PING": replyError("LOADING Redis is loading")},
			sent: [][]string{{"PING"}}},
		{name: "unreachable", cfg: Config{Password: "pw"}, answers: map[string]error{"PING": errors.New("connection refused")},
			sent: [][]string{{"PING"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var sent [][]string
			do := func(_ context.Context, args ...string) error {
				sent = append(sent, args)
				return tc.answers[args[0]]
			}
			err := CheckOpen(context.Background(), &tc.cfg, do, fakeErrorReply)
			if !reflect.DeepEqual(sent, tc.sent) {
				t.Errorf("CheckOpen sent %q; want %q", sent, tc.sent)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckOpen = %v; want nil", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("CheckOpen = %v; want %q", err, tc.wantErr)
			case err != nil && !errors.As(err, new(replyError)):
				t.Errorf("CheckOpen = %v; want the reply in its chain", err)
			case err != nil && strings.Contains(err.Error(), "pw"):
				t.Errorf("CheckOpen = %v: the password shows", err)
			}
		})
	}
}
