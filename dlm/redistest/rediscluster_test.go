package redistest

import (
	"strings"
	"testing"
)

// TestStartRedisCluster checks that the harness's cluster is up, spreads
// keys over its masters, and routes Do by key.
func TestStartRedisCluster(t *testing.T) {
	t.Parallel()
	c := StartRedisCluster(t)
	owners := map[string]bool{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		if _, err := c.Do("SET", k, "v"); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		v, err := c.Do("GET", k)
		if err != nil || v != "v" {
			t.Fatalf("GET %s = %v, %v; want v", k, v, err)
		}
		for _, s := range c.Masters {
			if v, _ := s.Do("GET", k); v == "v" {
				owners[s.Addr()] = true
			}
		}
	}
	if len(owners) < 2 {
		t.Errorf("8 keys landed on %d master(s); want them spread over the cluster", len(owners))
	}
	infos, err := c.DoAll("CLUSTER", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range infos {
		if s, _ := v.(string); !strings.Contains(s, "cluster_state:ok") {
			t.Errorf("master %d: CLUSTER INFO = %q; want cluster_state:ok", i, s)
		}
	}
}
