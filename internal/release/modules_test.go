package main

import (
	"strings"
	"testing"
)

func TestReleaseVersion(t *testing.T) {
	const core = "module example.com/m\n\ngo 1.22\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string // the version, or a part of the error
	}{
		{"one version", map[string]string{
			"":           core,
			"b":          "module example.com/m/b\n\nrequire example.com/m v0.2.0\n",
			"cmd/x":      "module example.com/m/cmd/x\n\nrequire (\n\texample.com/m v0.2.0\n\texample.com/m/b v0.2.0\n)\n",
			"internal/t": "module example.com/m/internal/t\n\nrequire example.com/m v0.1.0\n\nreplace example.com/m => ../..\n",
		}, "v0.2.0"},
		{"replace", map[string]string{
			"":  core,
			"b": "module example.com/m/b\n\nrequire example.com/m v0.2.0\n\nreplace example.com/m => ../\n",
		}, "no replace directive"},
		{"pseudo-version", map[string]string{
			"":  core,
			"b": "module example.com/m/b\n\nrequire example.com/m v0.0.0-00010101000000-000000000000\n",
		}, "not a release version"},
		{"two versions", map[string]string{
			"":  core,
			"b": "module example.com/m/b\n\nrequire example.com/m v0.2.0\n",
			"c": "module example.com/m/c\n\nrequire example.com/m v0.1.0\n",
		}, "several"},
		{"none", map[string]string{"": core}, "cannot tell"},
	}
	for _, tt := range tests {
		files := map[string][]byte{}
		for d, s := range tt.files {
			files[d] = []byte(s)
		}
		mods, err := parseModules(files)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		v, err := releaseVersion(mods)
		if strings.HasPrefix(tt.want, "v") {
			if err != nil || v != tt.want {
				t.Errorf("%s: releaseVersion = %q, %v; want %q", tt.name, v, err, tt.want)
			}
		} else if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: releaseVersion = %q, %v; want an error with %q", tt.name, v, err, tt.want)
		}
	}
}

func TestTagName(t *testing.T) {
	for _, tt := range []struct{ dir, v, want string }{
		{"", "v0.1.0", "v0.1.0"},
		{"backends/goredis", "v0.1.0", "backends/goredis/v0.1.0"},
	} {
		if got := tagName(tt.dir, tt.v); got != tt.want {
			t.Errorf("tagName(%q, %q) = %q; want %q", tt.dir, tt.v, got, tt.want)
		}
	}
}
