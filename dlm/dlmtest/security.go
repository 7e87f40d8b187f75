package dlmtest

import (
	"bytes"
	"context"
	"fmt"
	"github.com/dlmgo/redlock/dlm/redistest"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/internal/leakcheck"
)

// Timing of the security suite on a quiet machine. A new connection's TLS
// handshake counts against the node timeout, hence its margin. The suite
// stretches the node timeout to the pace it measures on its servers
// ([redistest.Pace.Stretch]), and the other bounds follow it (see
// [secure.ttl], [secure.refusedWait] and [secure.refusedBound]).
const (
	secureTTL         = 3 * time.Second
	secureNodeTimeout = time.Second
	// refusedWait is the context of a Lock that every node refuses, and
	// refusedBound how long it may take: one attempt, not retries until
	// the context ends.
	refusedWait  = 8 * time.Second
	refusedBound = 3 * time.Second
)

// Users of the suite's ACL file, besides those of the refusals table.
const (
	lockerUser   = "locker"    // LeastPrivilegeRules
	rotatedUser  = "rotated"   // the same; its password changes under a running manager
	selectorUser = "selector"  // the same, and +select
	quietUser    = "no-pubsub" // the same, less the pub/sub rules
)

// secretOf returns user's password. It holds characters that URLs escape,
// so that a password shown in any of its forms is caught.
func secretOf(user string) string { return user + "-S3cret/#@%" }

// TestSecurity runs the security suite through the driver registered as
// driverName, on three redis-server processes that accept TLS only and load
// their users from an ACL file, with nodes opened by [dlm.Open] from
// rediss://USER:PASSWORD@HOST:PORT?tls_ca_file=... URLs. It checks that:
//
//   - a user with [LeastPrivilegeRules] can Lock, Extend, Unlock, take locks
//     WithFencing and WithRestartGuard, call Status and Do (with its
//     auto-extension), and wake a waiter of another manager, and that the
//     servers refused that user nothing (ACL LOG);
//   - a user without the pub/sub rules can do all that too, its waiters
//     waking at their next retry instead;
//   - whatever such a user publishes on a wake channel, a waiter neither
//     panics nor gives up, is not woken by malformed messages but logs each
//     at debug level, and is still woken by the release;
//   - a user lacking any other of those rules gets errors that match
//     [dlm.ErrPermission], never [dlm.ErrNotObtained] alone, and Lock gives
//     up after one attempt rather than retrying until its context ends; so
//     does a user whose password changed while the manager ran;
//   - a minority of refusing nodes does not stop a lock, a majority does;
//   - a node that says another node's run_id denies no service, and
//     counts as the server it is (testHostileRunID);
//   - a wrong or missing password, a missing +select, an unreachable host,
//     an untrusted certificate and malformed URLs fail with errors that name
//     the cause and never show a password;
//   - no password and no lock token appears in any error, event or log
//     record of the suite's managers;
//   - a node that refuses scripting (EVALSHA and EVAL renamed away, see
//     [redistest.WithoutScripting]) quotes none of a request's arguments —
//     secrets, waiter ids, leader values — in any error, event, status or
//     log record at any level, while its error still says what it refused.
//
// It checks that no goroutine outlives the managers' Close.
func TestSecurity(t *testing.T, driverName string) {
	s := startSecure(t, driverName)
	snap := leakcheck.Scoped()
	t.Run("LeastPrivilege", s.testLeastPrivilege)
	t.Run("MissingPermission", s.testMissingPermission)
	t.Run("WithoutPubSub", s.testWithoutPubSub)
	t.Run("HostilePublish", s.testHostilePublish)
	t.Run("MinorityRefuses", s.testMinorityRefuses)
	t.Run("MajorityRefuses", s.testMajorityRefuses)
	t.Run("HostileRunID", s.testHostileRunID)
	t.Run("RevokedPassword", s.testRevokedPassword)
	t.Run("OpenErrors", s.testOpenErrors)
	t.Run("NodeErrorHidesScriptArgs", s.testNodeErrorHidesScriptArgs)
	t.Run("NothingShown", s.testNothingShown)
	snap.Check(t, 5*time.Second)
}

// secure is the security suite's servers and what it saw.
type secure struct {
	driver  string
	servers []*redistest.Server
	log     *logSink
	logger  *slog.Logger
	// pace is the machine's pace through the servers once they had
	// started; nodeTimeout is the managers' node timeout, secureNodeTimeout
	// stretched to it.
	pace        redistest.Pace
	nodeTimeout time.Duration

	mu      sync.Mutex
	secrets []string // passwords, in every URL and server
	tokens  []string // lock tokens, from Handles
	events  []string // every event, printed
	errs    []string // every error an operation returned
}

func startSecure(t *testing.T, driverName string) *secure {
	t.Helper()
	s := &secure{driver: driverName, log: &logSink{}}
	s.logger = slog.New(slog.NewTextHandler(s.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	user := func(name string, rules []string) string {
		s.secrets = append(s.secrets, secretOf(name))
		return "user " + name + " on >" + secretOf(name) + " " + strings.Join(rules, " ")
	}
	rules := LeastPrivilegeRules(dlm.DefaultKeyPrefix)
	lines := []string{
		user(lockerUser, rules),
		user(rotatedUser, rules),
		user(selectorUser, append(rules, "+select")),
		user(quietUser, slices.DeleteFunc(slices.Clone(rules), func(r string) bool {
			return r == "+publish" || r == "+pubsub|numsub" || r == "+subscribe" || r == "+unsubscribe"
		})),
	}
	for _, r := range refusals {
		lines = append(lines, user(r.user, r.rules()))
	}
	s.secrets = append(s.secrets, wrongSecret, rotatedSecret)
	s.servers = redistest.StartServers(t, 3, redistest.WithTLS(), redistest.WithACLFile(t, lines...))
	for _, srv := range s.servers {
		s.pace = s.pace.Max(redistest.MeasurePace(t, srv))
	}
	s.nodeTimeout = s.pace.Stretch(secureNodeTimeout)
	t.Logf("pace %v: node timeout %v, TTL %v", s.pace, s.nodeTimeout.Round(time.Millisecond), s.ttl().Round(time.Millisecond))
	return s
}

// ttl is the TTL of the suite's locks: secureTTL, or three node timeouts
// where that is more.
func (s *secure) ttl() time.Duration { return max(secureTTL, 3*s.nodeTimeout) }

// refusedBound is how long a Lock that the nodes refuse may take: one
// attempt and its release, a few node timeouts, never retries until its
// context ([secure.refusedWait]) ends.
func (s *secure) refusedBound() time.Duration { return max(refusedBound, 3*s.nodeTimeout) }

// refusedWait is the context of a Lock that the nodes refuse: longer than
// [secure.refusedBound] by five node timeouts at least, so that a Lock
// that retries until its context ends is told from one that gave up.
func (s *secure) refusedWait() time.Duration {
	return max(refusedWait, s.refusedBound()+5*s.nodeTimeout)
}

// Passwords no server knows, or that it learns during the suite.
const (
	wrongSecret   = "Wr0ng-S3cret/#@%"
	rotatedSecret = "N3w-S3cret/#@%"
)

// nodeURL returns the URL of server i as user (none when ""), with
// password, over TLS that trusts the server's CA, and extra parameters.
func (s *secure) nodeURL(i int, user, password string, params ...string) string {
	u := &url.URL{Scheme: "rediss+" + s.driver, Host: s.servers[i].Addr()}
	if user != "" {
		u.User = url.UserPassword(user, password)
	}
	q := url.Values{"tls_ca_file": {s.servers[i].CAFile()}}
	for j := 0; j+1 < len(params); j += 2 {
		q.Set(params[j], params[j+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// urls returns the URLs of every server as user, with user's password.
func (s *secure) urls(user string) []string {
	out := make([]string, len(s.servers))
	for i := range out {
		out[i] = s.nodeURL(i, user, secretOf(user))
	}
	return out
}

// open opens a manager over urls with the suite's logger and a hook of its
// own. The caller closes the manager.
func (s *secure) open(t *testing.T, urls []string, opts ...dlm.ManagerOption) (*dlm.Manager, *watch) {
	t.Helper()
	w := &watch{s: s}
	m, err := dlm.Open(urls, append([]dlm.ManagerOption{
		dlm.WithTTL(s.ttl()), dlm.WithNodeTimeout(s.nodeTimeout), dlm.WithLogger(s.logger), dlm.WithHook(w),
	}, opts...)...)
	if err != nil {
		s.sawErr(err)
		t.Fatalf("dlm.Open(%s) = %v", driver.Redact(urls[0]), err)
	}
	return m, w
}

// sawErr records an error an operation returned, for testNothingShown.
func (s *secure) sawErr(err error) {
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err.Error())
		s.mu.Unlock()
	}
}

// sawLock records the secret of a lock, for testNothingShown.
func (s *secure) sawLock(l *dlm.Lock) {
	s.mu.Lock()
	s.tokens = append(s.tokens, l.Handle().Secret)
	s.mu.Unlock()
}

// watch is a manager's hook: it counts attempts, notes when the latest
// failed one began, and records every event.
type watch struct {
	s          *secure
	attempts   atomic.Int32
	lastFailed atomic.Int64 // UnixNano of the start of the latest failed attempt
}

func (w *watch) OnEvent(_ context.Context, e *dlm.Event) {
	if e.Kind == dlm.EventAttempt {
		w.attempts.Add(1)
		if e.Err != nil {
			w.lastFailed.Store(max(w.lastFailed.Load(), e.Start.UnixNano()))
		}
	}
	text := fmt.Sprintf("%+v", *e)
	w.s.mu.Lock()
	w.s.events = append(w.s.events, text)
	w.s.mu.Unlock()
}

// logSink is a concurrency-safe buffer for a slog handler's output.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logSink) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logSink) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// shown returns the first form of a secret that text shows — as written,
// or escaped as a URL's user information, path or query would have it — or
// "".
func shown(text string, secrets ...string) string {
	for _, s := range secrets {
		forms := []string{s, url.QueryEscape(s), url.PathEscape(s), strings.TrimPrefix(url.UserPassword("", s).String(), ":")}
		for _, f := range forms {
			if strings.Contains(text, f) || strings.Contains(text, strings.ToLower(f)) {
				return f
			}
		}
	}
	return ""
}

// testNothingShown checks what the other tests saw: no password and no
// lock token in any error, event or log record.
func (s *secure) testNothingShown(t *testing.T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tokens) == 0 || len(s.events) == 0 || len(s.errs) == 0 {
		t.Fatalf("%d tokens, %d events, %d errors recorded; the check would check nothing", len(s.tokens), len(s.events), len(s.errs))
	}
	secrets := append(append([]string(nil), s.secrets...), s.tokens...)
	for what, texts := range map[string][]string{"error": s.errs, "event": s.events, "log record": strings.Split(s.log.String(), "\n")} {
		for _, text := range texts {
			if f := shown(text, secrets...); f != "" {
				t.Errorf("%s shows the secret %q: %s", what, f, text)
			}
		}
	}
}

// testLeastPrivilege runs every operation as a user with exactly
// LeastPrivilegeRules, and checks that the servers refused it nothing.
func (s *secure) testLeastPrivilege(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, _ := s.open(t, s.urls(lockerUser))
	defer m.Close()

	l, err := m.Lock(ctx, "fenced", dlm.WithFencing())
	if err != nil {
		s.sawErr(err)
		t.Fatalf("Lock(fenced) WithFencing as %s = %v", lockerUser, err)
	}
	s.sawLock(l)
	if l.Token() == 0 {
		t.Errorf("Lock(fenced) WithFencing: Token() = 0; want a fencing token")
	}
	if err := l.Extend(ctx, s.ttl()); err != nil {
		s.sawErr(err)
		t.Errorf("Extend as %s = %v", lockerUser, err)
	}
	sts, err := m.Status(ctx, "fenced")
	if err != nil {
		t.Fatalf("Status(fenced) = %v", err)
	}
	held := 0
	for _, st := range sts {
		if st.Err != nil {
			s.sawErr(st.Err)
			t.Errorf("Status(fenced) on %s: %v", st.Node, st.Err)
		}
		if st.Held && st.Counter == l.Token() && st.TTL > 0 {
			held++
		}
	}
	if held < len(s.servers)/2+1 {
		t.Errorf("Status(fenced) = %+v; want a quorum holding it with fence %d", sts, l.Token())
	}
	if err := l.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock as %s = %v", lockerUser, err)
	}

	// The servers are younger than the guard window: Lock waits it out.
	g, err := m.Lock(ctx, "guarded", dlm.WithRestartGuard(s.ttl()))
	if err != nil {
		s.sawErr(err)
		t.Fatalf("Lock(guarded) WithRestartGuard as %s = %v", lockerUser, err)
	}
	s.sawLock(g)
	if err := g.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock(guarded) = %v", err)
	}

	// Fairness: a grant with the line empty, a waiter taking its place,
	// the release announcing it, and its grant from the head of the line.
	fair := dlm.WithFairness(dlm.Fairness{})
	first, err := m.Lock(ctx, "fair", fair)
	if err != nil {
		s.sawErr(err)
		t.Fatalf("Lock(fair) WithFairness as %s = %v", lockerUser, err)
	}
	s.sawLock(first)
	next := make(chan error, 1)
	go func() {
		l, err := m.Lock(ctx, "fair", fair)
		if err == nil {
			s.sawLock(l)
			err = l.Unlock(ctx)
		}
		next <- err
	}()
	time.Sleep(100 * time.Millisecond) // the second takes its place in line
	if err := first.Unlock(ctx); err != nil {
		s.sawErr(err)
		t.Errorf("Unlock(fair) = %v", err)
	}
	if err := <-next; err != nil {
		s.sawErr(err)
		t.Errorf("the waiter's Lock(fair) and Unlock = %v", err)
	}

	err = m.Do(ctx, "job", func(ctx context.Context) error {
		l := dlm.LockFromContext(ctx)
		s.sawLock(l)
		first := l.Until()
		for deadline := time.Now().Add(2 * s.ttl()); !l.Until().After(first); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("no auto-extension within %v (%v)", 2*s.ttl(), ctx.Err())
			}
		}
		return nil
	})
	if err != nil {
		s.sawErr(err)
		t.Errorf("Do(job) as %s = %v", lockerUser, err)
	}

	s.checkWake(ctx, t, m)

	for _, srv := range s.servers {
		if d := aclDenials(t, srv, lockerUser); len(d) > 0 {
			t.Errorf("%s refused %s: %q; LeastPrivilegeRules lacks a rule", srv.Addr(), lockerUser, d)
		}
	}
}

// patience bounds the suite's waits for what must happen soon (a late
// node's reply, a log record, a subscription): how long a broken build
// takes to fail, not a claim about when. It grows with the node timeout.
func (s *secure) patience() time.Duration { return max(10*time.Second, 20*s.nodeTimeout) }

// awaitDenial waits up to [secure.patience] for srv's ACL LOG to record denied
// ("REASON OBJECT") for user, and fails t if it does not: calls return once
// a quorum has answered, and the last node's refusal may come later.
func (s *secure) awaitDenial(t *testing.T, srv *redistest.Server, user, denied string) {
	t.Helper()
	d := aclDenials(t, srv, user)
	for deadline := time.Now().Add(s.patience()); !slices.Contains(d, denied) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		d = aclDenials(t, srv, user)
	}
	if !slices.Contains(d, denied) {
		t.Errorf("ACL LOG of %s for %s = %q; want %q", srv.Addr(), user, d, denied)
	}
}
