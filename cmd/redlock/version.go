package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/dlmgo/redlock/dlm"
)

// versionModules are the dependencies whose versions "redlock version"
// shows: the lock library and the client libraries.
var versionModules = []string{
	"github.com/dlmgo/redlock",
	"github.com/redis/go-redis/v9",
	"github.com/gomodule/redigo",
	"github.com/redis/rueidis",
	"github.com/valkey-io/valkey-go",
}

// writeVersion writes what "redlock version" shows, from the build
// information of the running binary.
func writeVersion(w io.Writer) {
	bi, _ := debug.ReadBuildInfo()
	io.WriteString(w, versionText(bi))
}

// versionText describes a build: redlock's module version ("(devel)" when
// built from a checkout), the Go version, the VCS revision and time when the
// build recorded them, and the versions of the lock and client libraries.
// bi may be nil: a binary built without module support.
func versionText(bi *debug.BuildInfo) string {
	var b strings.Builder
	if bi == nil {
		b.WriteString("redlock (unknown version: no build information)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "redlock %s\n", bi.Main.Version)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  go\t%s\n", bi.GoVersion)
	var rev, at string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		if modified {
			rev += " (modified)"
		}
		fmt.Fprintf(tw, "  revision\t%s\n", rev)
	}
	if at != "" {
		fmt.Fprintf(tw, "  committed\t%s\n", at)
	}
	for _, path := range versionModules {
		for _, d := range bi.Deps {
			if d.Path != path {
				continue
			}
			v := d.Version
			if d.Replace != nil {
				v += " => " + d.Replace.Path
				if d.Replace.Version != "" && d.Replace.Version != "(devel)" {
					v += " " + d.Replace.Version
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\n", path, v)
		}
	}
	fmt.Fprintf(tw, "  backends\t%s (a plain redis:// URL needs --backend)\n", strings.Join(dlm.Drivers(), ", "))
	tw.Flush()
	return b.String()
}
