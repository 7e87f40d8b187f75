//go:build unix

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestStatusClusterNode checks that status reports a node that is a whole
// Redis Cluster, named by its seed addresses, next to a plain node: one
// cluster opened through go-redis, one through rueidis, one plain server.
func TestStatusClusterNode(t *testing.T) {
	t.Parallel()
	clusters := redistest.StartRedisClusters(t, 2)
	plain := redistest.StartServer(t)
	measurePaceThrough(t, plain)
	urls := []string{clusters[0].URL("goredis"), clusters[1].URL("rueidis"), "redis+goredis://" + plain.Addr()}
	nodes := strings.Join(urls, ",")
	m, err := dlm.Open(urls, dlm.WithKeyPrefix(dlm.DefaultKeyPrefix))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.TryLock(context.Background(), "clustered")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(context.Background())

	code, rep := statusJSON(t, nodes, "clustered")
	if code != 0 || !rep.Held || rep.HeldOn != 3 || len(rep.Nodes) != 3 {
		t.Fatalf("status --json = %d, %+v; want 0 and held on all 3 nodes", code, rep)
	}
	for i, want := range []string{clusters[0].Addr(), clusters[1].Addr(), plain.Addr()} {
		if n := rep.Nodes[i]; n.Node != want || !n.Held || n.TTLMillis <= 0 {
			t.Errorf("node %d = %+v; want %s holding the key with a TTL", i, n, want)
		}
	}
	code, stdout, _ := redlockRun(t, nil, "status", "--nodes", nodes, "clustered")
	if code != 0 || !strings.Contains(stdout, clusters[0].Addr()) || !strings.Contains(stdout, clusters[1].Addr()) {
		t.Errorf("status = %d,\n%s\nwant 0 and the clusters named by their addresses", code, stdout)
	}
}

// TestClusterMemberWithoutClusterFlagExitsConfig checks that status and run
// exit 78 (EX_CONFIG) when the nodes are members of a Redis Cluster opened
// as single servers, without ?cluster=true: the members that do not serve
// the key's slot answer MOVED, which package dlm reports as ErrInvalid, a
// configuration error that retrying cannot fix, not a node that is down
// (69).
func TestClusterMemberWithoutClusterFlagExitsConfig(t *testing.T) {
	t.Parallel()
	c := redistest.StartRedisCluster(t)
	var urls []string
	for _, a := range c.Addrs() {
		urls = append(urls, "redis+goredis://"+a)
	}
	nodes := strings.Join(urls, ",")
	code, stdout, stderr := redlockRun(t, nil, "status", "--nodes", nodes, "member")
	if code != exitConfig || !strings.Contains(stdout+stderr, "cluster=true") {
		t.Errorf("status on cluster members opened as single servers = %d,\n%s\n%s\nwant %d and a hint at ?cluster=true", code, stdout, stderr, exitConfig)
	}
	code, _, stderr = redlockRun(t, nil, runArgs("member", sh("exit 0"), "--nodes", nodes)...)
	if code != exitConfig || !strings.Contains(stderr, "cluster=true") {
		t.Errorf("run on cluster members opened as single servers = %d,\n%s\nwant %d and a hint at ?cluster=true", code, stderr, exitConfig)
	}
}
