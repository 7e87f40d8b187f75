package dlm_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestClusterMemberWithoutClusterFlagFailsAtOnce checks that a member of a
// Redis Cluster opened as a plain node, which redirects (MOVED) the keys of
// the other members' slots, fails Lock at once with ErrInvalid and an error
// that names the node and says to open it with cluster=true — rather than
// being retried as a failing node for as long as the context lasts, which
// with context.Background() is forever. Status reads through the same node
// calls, so it reports the node the same way.
func TestClusterMemberWithoutClusterFlagFailsAtOnce(t *testing.T) {
	t.Parallel()
	const nodeTimeout = 250 * time.Millisecond
	rc := redistest.StartRedisCluster(t)
	member := rc.Masters[0]
	// A key of a slot another member owns: the member answers MOVED.
	key := ""
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		if _, err := member.Do("GET", "redlock:{"+k+"}"); err != nil && strings.HasPrefix(err.Error(), "MOVED ") {
			key = k
			break
		}
	}
	if key == "" {
		t.Fatalf("no key of another member's slot among a to l: the cluster's slots are not spread")
	}
	m, err := dlm.New([]driver.Node{respNode(t, member.Addr(), "")}, dlm.WithNodeTimeout(nodeTimeout))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res := make(chan error, 1)
	go func() {
		_, err := m.Lock(context.Background(), key)
		res <- err
	}()
	// One attempt takes at most a node timeout; retries would go on for
	// as long as the context lasts.
	bound := 8 * nodeTimeout
	select {
	case err = <-res:
	case <-time.After(bound):
		m.Close() // ends the Lock, with ErrClosed
		t.Fatalf("Lock on a cluster member opened without cluster=true still retrying after %v; want ErrInvalid at once (it returned %v once the manager closed)", bound, <-res)
	}
	var nerr *dlm.NodeError
	switch {
	case !errors.Is(err, dlm.ErrInvalid):
		t.Errorf("Lock = %v; want ErrInvalid", err)
	case !errors.As(err, &nerr) || nerr.Node != member.Addr():
		t.Errorf("Lock = %v; want a NodeError naming %s", err, member.Addr())
	case !strings.Contains(err.Error(), "cluster=true") || !strings.Contains(err.Error(), member.Addr()):
		t.Errorf("Lock = %v; want it to name %s and say to open it with cluster=true", err, member.Addr())
	}
	sts, err := m.Status(context.Background(), key)
	if err != nil {
		t.Fatalf("Status = %v", err)
	}
	if err := sts[0].Err; !errors.Is(err, dlm.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "cluster=true") {
		t.Errorf("Status of the member: Err = %v; want ErrInvalid, saying to open it with cluster=true", err)
	}
}
