package dlmtest

import (
	"github.com/dlmgo/redlock/dlm/redistest"

	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
)

// What a refusal stops.
const (
	refusedLock    = "Lock"
	refusedGuarded = "Lock WithRestartGuard"
	refusedExtend  = "Extend"
	refusedUnlock  = "Unlock"
	refusedStatus  = "Status"
)

// refusal is a user with LeastPrivilegeRules less one rule (or with it
// replaced), the operation that needs the rule, and what the servers' ACL
// LOG records when they refuse it.
type refusal struct {
	user   string
	drop   string
	add    string
	op     string
	denied string
}

// refusals has a user for every rule of LeastPrivilegeRules that a lock
// operation needs. The pub/sub rules are for waking waiters: without them
// waiters wait for their next retry.
var refusals = []refusal{
	{user: "no-evalsha", drop: "+evalsha", op: refusedLock, denied: "command evalsha"},
	{user: "no-eval", drop: "+eval", op: refusedLock, denied: "command eval"},
	{user: "no-get", drop: "+get", op: refusedLock, denied: "command get"},
	{user: "no-set", drop: "+set", op: refusedLock, denied: "command set"},
	{user: "no-time", drop: "+time", op: refusedGuarded, denied: "command time"},
	{user: "no-info", drop: "+info", op: refusedGuarded, denied: "command info"},
	{user: "no-pexpire", drop: "+pexpire", op: refusedExtend, denied: "command pexpire"},
	{user: "no-del", drop: "+del", op: refusedUnlock, denied: "command del"},
	{user: "no-pttl", drop: "+pttl", op: refusedStatus, denied: "command pttl"},
	{user: "other-prefix", drop: "~" + dlm.DefaultKeyPrefix + "*", add: "~app:*", op: refusedLock, denied: "key " + dlm.DefaultKeyPrefix + "{other-prefix}"},
}

// rules returns the user's ACL rules.
func (r refusal) rules() []string {
	rules := slices.DeleteFunc(LeastPrivilegeRules(dlm.DefaultKeyPrefix), func(s string) bool { return s == r.drop })
	if r.add != "" {
		rules = append(rules, r.add)
	}
	return rules
}

// flushScripts empties the servers' script caches, so that the next script
// runs by EVAL.
func (s *secure) flushScripts(t *testing.T) {
	t.Helper()
	for _, srv := range s.servers {
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatalf("SCRIPT FLUSH on %s: %v", srv.Addr(), err)
		}
	}
}

// testMissingPermission checks that each rule of LeastPrivilegeRules is
// needed, and that its absence is reported as [dlm.ErrPermission].
func (s *secure) testMissingPermission(t *testing.T) {
	for _, r := range refusals {
		t.Run(r.user, func(t *testing.T) {
			s.flushScripts(t)
			m, w := s.open(t, s.urls(r.user))
			defer m.Close()
			ctx, cancel := context.WithTimeout(context.Background(), s.refusedWait())
			defer cancel()
			key := r.user
			switch r.op {
			case refusedLock, refusedGuarded:
				var opts []dlm.Option
				if r.op == refusedGuarded {
					opts = append(opts, dlm.WithRestartGuard(s.ttl()))
				}
				start := time.Now()
				_, err := m.Lock(ctx, key, opts...)
				s.checkRefusedLock(t, r.op+" as "+r.user, err, time.Since(start), int(w.attempts.Load()))
			case refusedExtend, refusedUnlock:
				l, err := m.TryLock(ctx, key)
				if err != nil {
					s.sawErr(err)
					t.Fatalf("TryLock as %s = %v; want a lock", r.user, err)
				}
				s.sawLock(l)
				// TryLock returns on a quorum; let the last node take the
				// key too, or its script would not reach the refused call.
				s.awaitKey(t, dlm.DefaultKeyPrefix+"{"+key+"}", true)
				if r.op == refusedExtend {
					err = l.Extend(ctx, s.ttl())
				} else {
					err = l.Unlock(ctx)
				}
				s.sawErr(err)
				if !errors.Is(err, dlm.ErrPermission) || errors.Is(err, dlm.ErrLockLost) {
					t.Errorf("%s as %s = %v; want ErrPermission, not ErrLockLost", r.op, r.user, err)
				}
				if r.op == refusedExtend {
					// Extend returns once a quorum refused it; the release
					// must not overtake the refused call on the last node,
					// where the script would then find no key to extend.
					for _, srv := range s.servers {
						s.awaitDenial(t, srv, r.user, r.denied)
					}
				}
				l.Unlock(ctx)
			case refusedStatus:
				sts, err := m.Status(ctx, key)
				if err != nil {
					t.Fatalf("Status as %s = %v", r.user, err)
				}
				for _, st := range sts {
					s.sawErr(st.Err)
					if !errors.Is(st.Err, dlm.ErrPermission) {
						t.Errorf("Status as %s on %s: Err = %v; want ErrPermission", r.user, st.Node, st.Err)
					}
				}
			}
			for _, srv := range s.servers {
				s.awaitDenial(t, srv, r.user, r.denied)
			}
		})
	}
}

// checkRefusedLock checks the outcome of a Lock that the nodes refused for
// lack of rights: ErrPermission, not contention, after one attempt.
func (s *secure) checkRefusedLock(t *testing.T, what string, err error, took time.Duration, attempts int) {
	t.Helper()
	s.sawErr(err)
	switch {
	case !errors.Is(err, dlm.ErrPermission):
		t.Errorf("%s = %v; want ErrPermission", what, err)
	case errors.Is(err, dlm.ErrNotObtained):
		t.Errorf("%s = %v; want ErrPermission alone, not ErrNotObtained", what, err)
	}
	if bound := s.refusedBound(); attempts != 1 || took > bound {
		t.Errorf("%s took %d attempts and %v; want it to give up after one, within %v", what, attempts, took, bound)
	}
}

// testMinorityRefuses checks that a node that refuses the user does not
// stop a lock while a quorum accepts it.
func (s *secure) testMinorityRefuses(t *testing.T) {
	urls := s.urls(lockerUser)
	urls[2] = s.nodeURL(2, "no-evalsha", secretOf("no-evalsha"))
	m, _ := s.open(t, urls)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), max(30*time.Second, 3*s.patience()))
	defer cancel()
	l, err := m.TryLock(ctx, "minority")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock with one node of three refusing = %v; want a lock", err)
	}
	s.sawLock(l)
	sts, err := m.Status(ctx, "minority")
	if err != nil {
		t.Fatalf("Status = %v", err)
	}
	for i, st := range sts {
		s.sawErr(st.Err)
		if refusing := i == 2; refusing != errors.Is(st.Err, dlm.ErrPermission) || !refusing && !st.Held {
			t.Errorf("Status on node %d = %+v; want ErrPermission on node 2 only, the lock held on the others", i, st)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock with one node of three refusing = %v", err)
	}
}

// testMajorityRefuses checks that nodes refusing the user so that no quorum
// is possible make Lock fail at once, and that the node that granted the
// attempt is released.
func (s *secure) testMajorityRefuses(t *testing.T) {
	urls := s.urls("no-evalsha")
	urls[0] = s.nodeURL(0, lockerUser, secretOf(lockerUser))
	m, w := s.open(t, urls)
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.refusedWait())
	defer cancel()
	start := time.Now()
	_, err := m.Lock(ctx, "majority")
	s.checkRefusedLock(t, "Lock with two nodes of three refusing", err, time.Since(start), int(w.attempts.Load()))
	if !errors.Is(err, dlm.ErrUnavailable) {
		t.Errorf("Lock with two nodes of three refusing = %v; want ErrUnavailable too", err)
	}
	s.awaitKey(t, dlm.DefaultKeyPrefix+"{majority}", false)
}

// awaitKey waits up to [secure.patience] until every server has key, or none has,
// and fails t if they do not.
func (s *secure) awaitKey(t *testing.T, key string, exists bool) {
	t.Helper()
	want := int64(0)
	if exists {
		want = 1
	}
	for deadline := time.Now().Add(s.patience()); ; time.Sleep(5 * time.Millisecond) {
		done := true
		for _, srv := range s.servers {
			v, err := srv.Do("EXISTS", key)
			if err != nil {
				t.Fatalf("EXISTS %s on %s: %v", key, srv.Addr(), err)
			}
			done = done && v == want
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v on, not every server has EXISTS %s = %d", s.patience(), key, want)
		}
	}
}

// testRevokedPassword changes a user's password while a manager is open and
// its connections are dropped. While the old password is one of two, the
// manager's locks work; once it is removed, the next Lock, which logs in
// again with it, fails with ErrPermission at once.
func (s *secure) testRevokedPassword(t *testing.T) {
	m, _ := s.open(t, s.urls(rotatedUser))
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.refusedWait())
	defer cancel()
	l, err := m.TryLock(ctx, "rotated")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock before the password changed = %v", err)
	}
	s.sawLock(l)
	if err := l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Fatalf("Unlock before the password changed = %v", err)
	}
	// A second password first: the manager, logging in again with the
	// old one, keeps working.
	s.aclChange(t, ">"+rotatedSecret)
	l, err = m.TryLock(ctx, "rotated")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock after a second password was added = %v", err)
	}
	s.sawLock(l)
	if err := l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Fatalf("Unlock after a second password was added = %v", err)
	}
	// Then the old one goes.
	s.aclChange(t, "<"+secretOf(rotatedUser))
	start := time.Now()
	_, err = m.Lock(ctx, "rotated")
	took := time.Since(start)
	s.sawErr(err)
	if bound := s.refusedBound(); !errors.Is(err, dlm.ErrPermission) || !strings.Contains(fmt.Sprint(err), "WRONGPASS") || took > bound {
		t.Errorf("Lock after the password changed = %v after %v; want ErrPermission (WRONGPASS) within %v", err, took, bound)
	}
}

// aclChange applies rules to rotatedUser on every server and drops the
// user's connections, so that the manager logs in again.
func (s *secure) aclChange(t *testing.T, rules ...string) {
	t.Helper()
	for _, srv := range s.servers {
		for _, cmd := range [][]string{
			append([]string{"ACL", "SETUSER", rotatedUser}, rules...),
			{"CLIENT", "KILL", "USER", rotatedUser},
		} {
			if _, err := srv.Do(cmd...); err != nil {
				t.Fatalf("%s on %s: %v", strings.Join(cmd[:2], " "), srv.Addr(), err)
			}
		}
	}
}

// testOpenErrors opens managers from URLs that cannot work and checks that
// the error, from Open or, for drivers that connect on use, from the first
// TryLock, names the cause and shows no password.
func (s *secure) testOpenErrors(t *testing.T) {
	port := redistest.UnusedPort(t)
	pw := secretOf(lockerUser)
	addr := s.servers[0].Addr()
	drv := "rediss+" + s.driver + "://"
	user := lockerUser + ":" + urlUserinfo(pw)
	for _, tc := range []struct {
		name string
		url  string
		want string // in the error
		// permission: a refusal of the server, which matches
		// ErrPermission, from Open or from a lock operation.
		permission bool
	}{
		{name: "wrong password", url: s.nodeURL(0, lockerUser, wrongSecret), want: "WRONGPASS", permission: true},
		{name: "no password", url: s.nodeURL(0, "", ""), want: "NOAUTH", permission: true},
		{name: "database 3 without +select", url: s.nodeURL(0, lockerUser, pw, "db", "3"), want: "NOPERM", permission: true},
		{name: "unreachable host", url: drv + user + "@127.0.0.1:" + strconv.Itoa(port) + "?dial_timeout=1s", want: "127.0.0.1:" + strconv.Itoa(port)},
		{name: "untrusted certificate", url: drv + user + "@" + addr, want: "certificate"},
		{name: "plain connection to a TLS port", url: "redis+" + s.driver + "://" + user + "@" + addr, want: addr},
		{name: "port out of range", url: drv + user + "@127.0.0.1:99999", want: "port: want a number"},
		{name: "password in an unknown parameter", url: s.nodeURL(0, lockerUser, pw, "secret", pw), want: `unknown parameter "secret"`},
		{name: "password as the database", url: drv + user + "@" + addr + "/" + urlUserinfo(pw), want: "database"},
		{name: "password in a missing CA file's name", url: drv + user + "@" + addr + "?tls_ca_file=/nonexistent/" + urlUserinfo(pw), want: "tls_ca_file"},
		{name: "user information without //", url: "rediss+" + s.driver + ":" + user + "@" + addr, want: "user information"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first contact (a connection, its handshake, the
			// question of the server's run_id) must end within the node
			// timeout for its error to be the one returned. One that ran
			// out of time without the cause says nothing of the cause:
			// inconclusive, tried again with the node timeout doubled.
			const tries = 3
			var err error
			for try, timeout := 1, s.nodeTimeout; ; try, timeout = try+1, 2*timeout {
				err = s.openAndLock(tc.url, timeout)
				if try == tries || err == nil || strings.Contains(err.Error(), tc.want) || !errors.Is(err, context.DeadlineExceeded) {
					break
				}
				t.Logf("inconclusive: dlm.Open(%s), then TryLock with a %v node timeout = %v; again with %v", driver.Redact(tc.url), timeout, err, 2*timeout)
			}
			if tc.permission && !errors.Is(err, dlm.ErrPermission) {
				t.Errorf("dlm.Open(%s), then TryLock = %v; want ErrPermission", driver.Redact(tc.url), err)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("dlm.Open(%s), then TryLock = %v; want an error with %q", driver.Redact(tc.url), err, tc.want)
			}
			if f := shown(fmt.Sprint(err), s.secrets...); f != "" {
				t.Errorf("dlm.Open(%s), then TryLock = %v; it shows the password as %q", driver.Redact(tc.url), err, f)
			}
		})
	}
	sel, _ := s.open(t, []string{s.nodeURL(0, selectorUser, secretOf(selectorUser), "db", "3")})
	defer sel.Close()
	l, err := sel.TryLock(context.Background(), "select")
	if err != nil {
		s.sawErr(err)
		t.Fatalf("TryLock on database 3 as %s, with +select = %v", selectorUser, err)
	}
	s.sawLock(l)
	if err := l.Unlock(context.Background()); err != nil {
		t.Errorf("Unlock on database 3 = %v", err)
	}
}

// openAndLock opens a manager over url alone with the node timeout given,
// takes a lock and releases it, and returns the error of Open or TryLock.
func (s *secure) openAndLock(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.refusedWait())
	defer cancel()
	w := &watch{s: s}
	m, err := dlm.Open([]string{url}, dlm.WithNodeTimeout(timeout), dlm.WithLogger(s.logger), dlm.WithHook(w))
	if err == nil {
		var l *dlm.Lock
		l, err = m.TryLock(ctx, "open-errors")
		if err == nil {
			s.sawLock(l)
			l.Unlock(ctx)
		}
		m.Close()
	}
	s.sawErr(err)
	return err
}

// urlUserinfo returns password escaped as a URL's user information has it.
func urlUserinfo(password string) string {
	return strings.TrimPrefix(url.UserPassword("", password).String(), ":")
}
