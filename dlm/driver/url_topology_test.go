package driver

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseURLTopology(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url      string
		cluster  bool
		sentinel string
		addrs    []string
		name     string
	}{
		{"redis://h1:7000", false, "", nil, "h1:7000"},
		{"redis+goredis://h3:7002?cluster=true&addr=h1:7000&addr=h2:7001", true, "", []string{"h1:7000", "h2:7001", "h3:7002"}, "h1:7000,h2:7001,h3:7002"},
		{"redis://h1:7000?cluster=true", true, "", []string{"h1:7000"}, "h1:7000"},
		{"redis://:pw@s1:26379/2?sentinel_master=mymaster&addr=s2", false, "mymaster", []string{"s1:26379", "s2:6379"}, "mymaster@s1:26379,s2:6379"},
	} {
		cfg, err := ParseURL(tc.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.url, err)
			continue
		}
		if cfg.Cluster != tc.cluster || cfg.SentinelMaster != tc.sentinel || !slices.Equal(cfg.Addrs, tc.addrs) || cfg.Name() != tc.name {
			t.Errorf("ParseURL(%q) = cluster %v, sentinel %q, addrs %q, name %q; want %v, %q, %q, %q",
				tc.url, cfg.Cluster, cfg.SentinelMaster, cfg.Addrs, cfg.Name(), tc.cluster, tc.sentinel, tc.addrs, tc.name)
		}
	}
}

func TestParseURLTopologyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, want string }{
		{"redis://:s3cret@h1?addr=h2", "needs cluster=true or sentinel_master"},
		{"redis://:s3cret@h1?cluster=true&sentinel_master=m", "exclude each other"},
		{"redis://:s3cret@h1/1?cluster=true", "database 0 only"},
		{"redis://:s3cret@h1?cluster=yes", "cluster: want true or false"},
		{"redis://:s3cret@h1?cluster=true&addr=h2:99999", "port"},
		{"redis://:s3cret@h1?cluster=true&addr=h1:6379", "given twice"},
		{"redis://:s3cret@h1?sentinel_master=", "sentinel_master is empty"},
	} {
		_, err := ParseURL(tc.url)
		if !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL(%q) = %v; want ErrBadURL about %q, without the password", tc.url, err, tc.want)
		}
	}
}
