package dlmtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// testList checks [dlm.Manager.List] on real servers: a writer's lock held
// with fencing, a read lock held by two readers, a lock whose key names
// hold control characters, all listed with the nodes holding them, a TTL
// and the fencing counter; a waiter of a held lock counted in its line;
// the pattern selecting the keys; the limit truncating the listing; names
// under the prefix that are no lock keys left out; and bad input refused
// with ErrInvalid before any request.
func testList(t *testing.T, c *cluster) {
	ctx := context.Background()
	n := len(c.servers)
	q := n/2 + 1
	hostile := "job\x1b[2J\n\u202e"
	w, err := c.m.TryLock(ctx, "job-a", dlm.WithFencing(), dlm.WithAutoExtend(dlm.AutoExtend{}))
	if err != nil {
		t.Fatalf("TryLock(job-a): %v", err)
	}
	defer w.Unlock(ctx)
	h, err := c.m.TryLock(ctx, hostile, dlm.WithAutoExtend(dlm.AutoExtend{}))
	if err != nil {
		t.Fatalf("TryLock(%q): %v", hostile, err)
	}
	defer h.Unlock(ctx)
	for range 2 {
		r, err := c.client(t).TryRLock(ctx, "shared", dlm.WithAutoExtend(dlm.AutoExtend{}))
		if err != nil {
			t.Fatalf("TryRLock(shared): %v", err)
		}
		defer r.Unlock(ctx)
	}
	// Names under the prefix that are no lock keys.
	for _, s := range c.servers {
		if _, err := s.Do("HSET", suitePrefix+"{hash}", "f", "v"); err != nil {
			t.Fatalf("HSET: %v", err)
		}
		if _, err := s.Do("SET", suitePrefix+"{plain}:extra", "v"); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	// A waiter for job-a, in the nodes' lines.
	wctx, stop := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		_, err := c.client(t).Lock(wctx, "job-a", dlm.WithFairness(dlm.Fairness{}))
		waited <- err
	}()
	deadline := time.Now().Add(20 * c.timeout)
	var ls *dlm.Listing
	for {
		if ls, err = c.m.List(ctx, "", 0); err != nil {
			t.Fatalf("List: %v", err)
		}
		if a := find(ls, "job-a"); a != nil && a.Waiters > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(c.timeout / 10)
	}
	stop()
	<-waited
	var got []string
	for _, li := range ls.Locks {
		got = append(got, li.Key)
	}
	if want := []string{hostile, "job-a", "shared"}; strings.Join(got, "|") != strings.Join(want, "|") || ls.Truncated {
		t.Fatalf("List() keys = %q, truncated %v; want %q, not truncated", got, ls.Truncated, want)
	}
	for i, st := range ls.Nodes {
		if st.Err != nil || st.Node != c.nodes[i].Addr() {
			t.Errorf("List() node %d = %+v; want %s answering", i, st, c.nodes[i].Addr())
		}
	}
	hl, a, sh := ls.Locks[0], ls.Locks[1], ls.Locks[2]
	if !a.Held || a.HeldOn != n || a.TTL <= 0 || a.Counter == 0 || a.Counter != w.Token() || a.Waiters != 1 || a.Readers != 0 {
		t.Errorf("List() job-a = %+v; want held on %d nodes, a TTL, counter %d, 1 waiter", a, n, w.Token())
	}
	if !hl.Held || hl.HeldOn != n || hl.Counter != 0 || hl.Waiters != 0 {
		t.Errorf("List() %q = %+v; want held on %d nodes, no counter, no waiters", hostile, hl, n)
	}
	if !sh.Held || sh.HeldOn != n || sh.Readers != 2 {
		t.Errorf("List() shared = %+v; want held on %d nodes by 2 readers", sh, n)
	}
	for _, st := range a.Nodes {
		if !st.Held || st.TTL < a.TTL && q == n {
			t.Errorf("List() job-a on %s = %+v; want held, TTL at least %v", st.Node, st, a.TTL)
		}
	}
	// The pattern, and the limit.
	if ls, err := c.m.List(ctx, "job-*", 0); err != nil || len(ls.Locks) != 1 || ls.Locks[0].Key != "job-a" {
		t.Errorf("List(job-*) = %+v, %v; want job-a alone", ls, err)
	}
	if ls, err := c.m.List(ctx, "nothing*", 0); err != nil || len(ls.Locks) != 0 {
		t.Errorf("List(nothing*) = %+v, %v; want no locks", ls, err)
	}
	if ls, err := c.m.List(ctx, "", 1); err != nil || len(ls.Locks) == 0 || len(ls.Locks) > n || !ls.Truncated {
		t.Errorf("List(limit 1) = %+v, %v; want a lock per node at most, truncated", ls, err)
	}
	// Once released, nothing is listed as held. (Unlock returns once a
	// quorum released the lock: a node whose release is still under way
	// may list the key, not held on a quorum, a moment longer.)
	w.Unlock(ctx)
	h.Unlock(ctx)
	ls, err = c.m.List(ctx, "job*", 0)
	if err != nil {
		t.Errorf("List(job*) after Unlock: %v", err)
	} else {
		for _, l := range ls.Locks {
			if l.Held || l.HeldOn >= q {
				t.Errorf("List(job*) after Unlock: %+v; want no lock held on a quorum", l)
			}
		}
	}
	for _, bad := range []struct {
		pattern string
		limit   int
	}{{strings.Repeat("x", dlm.MaxKeyLen+1), 0}, {"*", -1}, {"*", dlm.MaxListLimit + 1}} {
		if ls, err := c.m.List(ctx, bad.pattern, bad.limit); !errors.Is(err, dlm.ErrInvalid) {
			t.Errorf("List(%d-byte pattern, limit %d) = %v, %v; want ErrInvalid", len(bad.pattern), bad.limit, ls, err)
		}
	}
}

// testClusterList checks that [dlm.Manager.List] reports a Redis Cluster
// node as failed with ErrInvalid, which the listing does not cover.
func testClusterList(t *testing.T, c *cluster) {
	ls, err := c.m.List(context.Background(), "", 0)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for i, st := range ls.Nodes {
		if !errors.Is(st.Err, dlm.ErrInvalid) {
			t.Errorf("List() on cluster node %d = %+v; want ErrInvalid", i, st)
		}
	}
}

// find returns the lock of ls named key, or nil.
func find(ls *dlm.Listing, key string) *dlm.LockInfo {
	for i := range ls.Locks {
		if ls.Locks[i].Key == key {
			return &ls.Locks[i]
		}
	}
	return nil
}

// testForceUnlock checks [dlm.Manager.ForceUnlock] on real servers: it
// deletes a held lock's keys on every node; the holder, auto-extended in
// Do, loses it by its next extension, which the nodes refuse (a quorum
// against, not the validity running out); another client then takes the
// lock with a greater fencing token, the counter being kept; readers of a
// read lock are broken too; and a free key is left as it is.
func testForceUnlock(t *testing.T, c *cluster) {
	ctx := context.Background()
	n := len(c.servers)
	held := make(chan uint64, 1)
	cause := make(chan error, 1)
	go func() {
		err := c.m.Do(ctx, "stale", func(ctx context.Context) error {
			held <- dlm.LockFromContext(ctx).Token()
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		}, dlm.WithFencing())
		if !errors.Is(err, dlm.ErrLockLost) {
			t.Errorf("Do(stale) broken by ForceUnlock = %v; want ErrLockLost", err)
		}
	}()
	token := <-held
	operator := c.client(t)
	res, err := operator.ForceUnlock(ctx, "stale")
	if err != nil {
		t.Fatalf("ForceUnlock(stale): %v", err)
	}
	for _, r := range res {
		if r.Err != nil || r.Deleted != 1 {
			t.Errorf("ForceUnlock(stale) on %s = %+v; want 1 key deleted", r.Node, r)
		}
	}
	lost := <-cause
	var qerr *dlm.QuorumError
	if !errors.Is(lost, dlm.ErrLockLost) || !errors.As(lost, &qerr) || qerr.Op != "extend" || qerr.Against < n/2+1 {
		t.Errorf("holder's loss after ForceUnlock = %v; want ErrLockLost from an extension a quorum refused", lost)
	}
	l, err := operator.TryLock(ctx, "stale", dlm.WithFencing())
	if err != nil || l.Token() <= token {
		t.Fatalf("TryLock(stale) after ForceUnlock = %v, %v; want a lock with a token above %d", l, err, token)
	}
	l.Unlock(ctx)
	// Readers.
	for range 2 {
		r, err := c.client(t).TryRLock(ctx, "read", dlm.WithAutoExtend(dlm.AutoExtend{}))
		if err != nil {
			t.Fatalf("TryRLock(read): %v", err)
		}
		defer r.Unlock(ctx)
	}
	if res, err := operator.ForceUnlock(ctx, "read"); err != nil || res[0].Deleted != 2 {
		t.Errorf("ForceUnlock(read) = %+v, %v; want the key and its readers deleted", res, err)
	}
	w, err := operator.TryLock(ctx, "read")
	if err != nil {
		t.Fatalf("TryLock(read) after ForceUnlock = %v; want the lock", err)
	}
	w.Unlock(ctx)
	if res, err := operator.ForceUnlock(ctx, "free"); err != nil || res[0].Deleted != 0 || res[0].Err != nil {
		t.Errorf("ForceUnlock(free) = %+v, %v; want nothing deleted", res, err)
	}
}

// testOwner checks [dlm.WithOwner] on real servers: Status and List show a
// labelled holder's host, process id and name on every node, with a grant
// time near now; the label lives with the lock's TTL, extended by Extend
// and by auto-extension past the TTL it was stored with; after the release
// a holder without a label shows none, the old label being another
// holder's; and an unlabelled lock stores nothing beside its key.
func testOwner(t *testing.T, c *cluster) {
	ctx := context.Background()
	host, _ := os.Hostname()
	before := time.Now()
	l, err := c.m.TryLock(ctx, "owned", dlm.WithOwner("billing cron"))
	if err != nil {
		t.Fatalf("TryLock(owned, WithOwner): %v", err)
	}
	want := dlm.Owner{Host: host, PID: os.Getpid(), Name: "billing cron"}
	checkOwner := func(what string, want dlm.Owner) {
		t.Helper()
		st, err := c.m.Status(ctx, "owned")
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		for _, n := range st {
			if n.Owner != want || (want != dlm.Owner{}) && (n.Since.Before(before.Add(-5*time.Second)) || n.Since.After(time.Now().Add(5*time.Second))) {
				t.Errorf("%s: Status on %s = owner %+v since %v; want %+v since about %v", what, n.Node, n.Owner, n.Since, want, before)
			}
		}
		ls, err := c.m.List(ctx, "owned", 0)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if c.nodes[0] != nil && len(ls.Nodes) > 0 && ls.Nodes[0].Err == nil {
			if len(ls.Locks) != 1 || ls.Locks[0].Owner != want {
				t.Errorf("%s: List(owned) = %+v; want owner %+v", what, ls.Locks, want)
			}
		}
	}
	checkOwner("after the grant", want)
	if err := l.Extend(ctx, 2*suiteTTL); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	// On a quorum at least (a node whose extension failed keeps the key's
	// TTL, and the label with it).
	extended := 0
	var ttls []any
	for _, s := range c.servers {
		v, err := s.Do("PTTL", suitePrefix+"{owned}:owner")
		ttls = append(ttls, v)
		if n, ok := v.(int64); err == nil && ok && n > suiteTTL.Milliseconds() {
			extended++
		}
	}
	if extended < len(c.servers)/2+1 {
		t.Errorf("owner key's PTTL after Extend(%v) = %v on the nodes; want above %v on a quorum", 2*suiteTTL, ttls, suiteTTL)
	}
	l.Unlock(ctx)
	plain, err := c.client(t).TryLock(ctx, "owned")
	if err != nil {
		t.Fatalf("TryLock(owned) after Unlock: %v", err)
	}
	checkOwner("an unlabelled holder after a labelled one", dlm.Owner{})
	plain.Unlock(ctx)
	for _, s := range c.servers {
		s.Do("DEL", suitePrefix+"{owned}:owner")
	}
	// Auto-extension carries the label past the TTL it was stored with.
	ttl := 4 * c.timeout
	err = c.m.Do(ctx, "owned", func(ctx context.Context) error {
		time.Sleep(ttl * 3 / 2)
		checkOwner("auto-extended past its TTL", want)
		return nil
	}, dlm.WithOwner("billing cron"), dlm.WithTTL(ttl))
	if err != nil {
		t.Errorf("Do(WithOwner) = %v", err)
	}
	// Labelled holders contend: one at a time, and a quorum of the nodes
	// show the holder's label during each hold (a node may still hold the
	// previous holder's key, whose release is retried there, and show
	// that holder's label: the label follows the key).
	ms := []*dlm.Manager{c.m, c.client(t)}
	var holders atomic.Int32
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("worker %d", w)
			for range 2 {
				err := ms[w%2].Do(ctx, "contended", func(ctx context.Context) error {
					if h := holders.Add(1); h != 1 {
						t.Errorf("%d labelled holders at once", h)
					}
					defer holders.Add(-1)
					st, err := ms[w%2].Status(ctx, "contended")
					if err != nil {
						return err
					}
					mine := 0
					for _, n := range st {
						if n.Held && n.Owner.Name == name {
							mine++
						}
					}
					if mine < len(st)/2+1 {
						t.Errorf("Status during %s's hold = %+v; want its label on a quorum", name, st)
					}
					return nil
				}, dlm.WithOwner(name))
				if err != nil {
					t.Errorf("Do(contended, %s) = %v", name, err)
				}
			}
		}()
	}
	wg.Wait()
	// No label, nothing beside the key.
	u, err := c.m.TryLock(ctx, "unowned")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Unlock(ctx)
	for _, s := range c.servers {
		if v, err := s.Do("EXISTS", suitePrefix+"{unowned}:owner"); err != nil || v != int64(0) {
			t.Errorf("EXISTS owner key of an unlabelled lock = %v, %v; want 0", v, err)
		}
	}
	if _, err := c.m.TryLockAll(ctx, []string{"{t}a", "{t}b"}, dlm.WithOwner("x")); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLockAll(WithOwner) = %v; want ErrInvalid", err)
	}
	if _, err := c.m.TryLock(ctx, "x", dlm.WithOwner("a\x1bb")); !errors.Is(err, dlm.ErrInvalid) {
		t.Errorf("TryLock(WithOwner(control character)) = %v; want ErrInvalid", err)
	}
}
