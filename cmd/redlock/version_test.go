package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{
		GoVersion: "go1.22.5",
		Main:      debug.Module{Path: "github.com/dlmgo/redlock/cmd/redlock", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/dlmgo/redlock", Version: "v1.2.0"},
			{Path: "github.com/redis/go-redis/v9", Version: "v9.0.0", Replace: &debug.Module{Path: "../go-redis"}},
			{Path: "github.com/other/module", Version: "v0.1.0"},
		},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := versionText(bi)
	for _, want := range []string{
		"redlock v1.2.3\n", "go1.22.5", "0123abcd (modified)", "2025-01-02T03:04:05Z",
		"github.com/dlmgo/redlock      v1.2.0", "v9.0.0 => ../go-redis", "goredis, redigo, rueidis, valkey",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("versionText does not contain %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "other/module") {
		t.Errorf("versionText lists an unrelated module:\n%s", got)
	}
	if got := versionText(nil); !strings.Contains(got, "no build information") {
		t.Errorf("versionText(nil) = %q; want it to say there is no build information", got)
	}
}
