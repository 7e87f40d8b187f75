package rueidis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

var returnOne = driver.NewScript("return 1")

// evalOne runs "return 1" and fails t unless it answers 1.
func evalOne(t *testing.T, n driver.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := n.Eval(ctx, returnOne, nil, nil); err != nil || v != int64(1) {
		t.Fatalf("%s: Eval(return 1) = %#v, %v; want 1, nil", n.Addr(), v, err)
	}
}

// TestACLUser checks a user restricted to a key pattern and a few commands,
// unlike the users of TestDriver, which may run every command.
func TestACLUser(t *testing.T) {
	t.Parallel()
	checkNoLeak(t)
	const password = "locker-pw"
	s := redistest.StartServer(t)
	if _, err := s.Do("ACL", "SETUSER", "locker", "on", ">"+password, "resetkeys", "~lock:*",
		"-@all", "+@connection", "+eval", "+evalsha", "+get", "+set", "+del", "+pexpire"); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}

	n := openURL(t, "redis+rueidis://locker:"+password+"@"+s.Addr())
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	set := driver.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	if v, err := n.Eval(ctx, set, []string{"lock:a"}, []string{"tok"}); err != nil || v != "OK" {
		t.Fatalf("Eval(SET lock:a) as locker = %#v, %v; want \"OK\", nil", v, err)
	}
	// Outside the user's key pattern: refused by ACL, an error reply.
	_, err := n.Eval(ctx, set, []string{"other:a"}, []string{"tok"})
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("Eval(SET other:a) as locker error = %v; want one starting with NOPERM", err)
	}

	url := "redis+rueidis://locker:wrong@" + s.Addr()
	if n, err := dlm.OpenNode(url); err == nil {
		n.Close()
		t.Errorf("dlm.OpenNode(%q) = nil error; want WRONGPASS", driver.Redact(url))
	} else if strings.Contains(err.Error(), "wrong") || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("dlm.OpenNode(%q) error = %q; want WRONGPASS without the password", driver.Redact(url), err)
	}
}

func TestBadURLErrorHidesPassword(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis+rueidis://:s3cret@127.0.0.1:99999",
		"redis+rueidis://u:s3cret@127.0.0.1:6379?nope=1",
		"redis+rueidis://u:s3cret@127.0.0.1:6379/x",
	} {
		n, err := dlm.OpenNode(url)
		if err == nil {
			n.Close()
			t.Errorf("dlm.OpenNode(%q) = nil error; want one", driver.Redact(url))
			continue
		}
		if !errors.Is(err, driver.ErrBadURL) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("dlm.OpenNode(%q) error = %q; want ErrBadURL without the password", driver.Redact(url), err)
		}
	}
}
