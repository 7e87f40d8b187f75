package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// clusterReadyTimeout bounds the wait for a new Redis Cluster to agree on
// its slots: about a second on an idle machine.
const clusterReadyTimeout = 30 * time.Second

// ClusterMasters is the number of masters [StartRedisCluster] starts.
const ClusterMasters = 3

// RedisCluster is a Redis Cluster of [ClusterMasters] masters without
// replicas, each a redis-server child process on a loopback port, which a
// test uses as one lock node: a client of the whole cluster (go-redis'
// ClusterClient, rueidis with several init addresses) is one
// [driver.Node]. Like [Server], it belongs to one test, whose cleanup kills
// its processes.
type RedisCluster struct {
	t testing.TB
	// Masters are the servers, sorted by address; each owns a third of the
	// slots.
	Masters []*Server
}

// StartRedisCluster starts [ClusterMasters] redis-server processes with
// cluster mode enabled, joins them into one cluster with `redis-cli
// --cluster create`, and returns when every master reports cluster_state:ok
// and knows the others. The processes are killed in t.Cleanup. redis-cli is
// taken from the REDIS_CLI environment variable, else from beside
// redis-server, else from PATH.
//
// The cluster node timeout is a minute, so that a test pausing a whole
// cluster (every master at once) does not have the masters mark each other
// failed after they resume.
func StartRedisCluster(t testing.TB, opts ...ServerOption) *RedisCluster {
	t.Helper()
	return StartRedisClusters(t, 1, opts...)[0]
}

// StartRedisClusters starts n clusters as [StartRedisCluster] does, at once.
func StartRedisClusters(t testing.TB, n int, opts ...ServerOption) []*RedisCluster {
	t.Helper()
	opts = append([]ServerOption{func(c *serverConfig) { c.cluster = true }}, opts...)
	servers := StartServers(t, n*ClusterMasters, opts...)
	clusters := make([]*RedisCluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range clusters {
		c := &RedisCluster{t: t, Masters: servers[i*ClusterMasters : (i+1)*ClusterMasters]}
		sort.Slice(c.Masters, func(i, j int) bool { return c.Masters[i].Addr() < c.Masters[j].Addr() })
		clusters[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.create()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return clusters
}

// clusterArgs are the redis-server arguments of a cluster master whose
// files go to dir.
func clusterArgs(dir string) []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
		"--cluster-node-timeout", "60000",
		"--dir", dir,
	}
}

// create joins the masters and waits until the cluster is up.
func (c *RedisCluster) create() error {
	cli, err := redisCLIPath(c.Masters[0].bin)
	if err != nil {
		return err
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0")
	if pw := c.Masters[0].cfg.password(); pw != "" {
		args = append(args, "-a", pw, "--no-auth-warning")
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterReadyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stdin = strings.NewReader("yes\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("redis-cli --cluster create %s: %v; its output:\n%s", strings.Join(c.Addrs(), " "), err, out.String())
	}
	deadline := time.Now().Add(clusterReadyTimeout)
	for _, s := range c.Masters {
		for {
			v, err := s.Do("CLUSTER", "INFO")
			info, _ := v.(string)
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(ClusterMasters)+"\r\n") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("redis cluster %s not ready after %v: %v %q", c.Addr(), clusterReadyTimeout, err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// redisCLIPath finds redis-cli for the redis-server at serverBin.
func redisCLIPath(serverBin string) (string, error) {
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return exec.LookPath(p)
	}
	if p := filepath.Join(filepath.Dir(serverBin), "redis-cli"); fileExists(p) {
		return p, nil
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		return "", fmt.Errorf("redis-cli not found (%v): it comes with redis-server (`apt-get install redis-server`); set REDIS_CLI to use another", err)
	}
	return p, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Addrs returns the masters' addresses, sorted.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.Masters))
	for i, s := range c.Masters {
		addrs[i] = s.Addr()
	}
	return addrs
}

// Addr returns the masters' sorted addresses joined by commas, as the
// backends' cluster nodes name themselves, and as [TestManagerOnClusters]
// hands them to its Dial.
func (c *RedisCluster) Addr() string { return strings.Join(c.Addrs(), ",") }

// Do sends one command as [Server.Do] does, to the master that owns the
// slot of the command's first argument after its name (its key), following
// the MOVED redirection a cluster answers with; a command of one word goes
// to the first master. For commands that concern every master (FLUSHALL,
// SCRIPT FLUSH, CLIENT KILL) use [RedisCluster.DoAll].
func (c *RedisCluster) Do(args ...string) (any, error) {
	s := c.Masters[0]
	for range ClusterMasters {
		v, err := s.Do(args...)
		moved, ok := movedTo(err)
		if !ok {
			return v, err
		}
		if s = c.master(moved); s == nil {
			return nil, fmt.Errorf("%w (a master of this cluster's?)", err)
		}
	}
	return nil, fmt.Errorf("redis cluster %s: %v: redirected %d times", c.Addr(), args, ClusterMasters)
}

// DoAll sends one command to every master and returns their replies in the
// order of [RedisCluster.Masters], or the first error.
func (c *RedisCluster) DoAll(args ...string) ([]any, error) {
	out := make([]any, len(c.Masters))
	for i, s := range c.Masters {
		v, err := s.Do(args...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Addr(), err)
		}
		out[i] = v
	}
	return out, nil
}

// movedTo returns the address of a MOVED error reply.
func movedTo(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	i := strings.Index(msg, "MOVED ")
	if i < 0 {
		return "", false
	}
	f := strings.Fields(msg[i:])
	if len(f) < 3 {
		return "", false
	}
	return f[2], true
}

func (c *RedisCluster) master(addr string) *Server {
	for _, s := range c.Masters {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// Kill kills every master, as the loss of the whole deployment would.
func (c *RedisCluster) Kill() {
	c.t.Helper()
	for _, s := range c.Masters {
		s.Kill()
	}
}

// Pause stops every master with SIGSTOP, as [Server.Pause] does.
func (c *RedisCluster) Pause() {
	c.t.Helper()
	for _, s := range c.Masters {
		s.Pause()
	}
}

// Resume continues every master.
func (c *RedisCluster) Resume() {
	c.t.Helper()
	for _, s := range c.Masters {
		s.Resume()
	}
}

// URL returns a node URL for the whole cluster through the driver named
// drv: "redis+DRV://FIRST?cluster=true&addr=SECOND&addr=THIRD" (see
// [driver.ParseURL]).
func (c *RedisCluster) URL(drv string) string {
	addrs := c.Addrs()
	u := "redis+" + drv + "://" + addrs[0] + "?cluster=true"
	for _, a := range addrs[1:] {
		u += "&addr=" + a
	}
	return u
}
