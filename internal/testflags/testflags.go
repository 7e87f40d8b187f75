// Package testflags sets defaults of go test's flags for the packages whose
// tests wait on servers far more than they compute.
package testflags

import (
	"flag"
	"os"
	"runtime"
	"strconv"
)

// DefaultParallel makes n, or GOMAXPROCS where that is more, the most
// parallel tests (t.Parallel) that run at once, unless the command line gave
// -test.parallel (go test's -parallel), whose default, GOMAXPROCS, would
// leave tests that wait on TTLs and servers one after another on a machine
// of few cores. Call it from TestMain, before m.Run; it parses the command
// line.
func DefaultParallel(n int) {
	setDefault(flag.CommandLine, os.Args[1:], "test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
}

// setDefault parses args into fs, unless done already, and sets the flag
// name to value unless args set it.
func setDefault(fs *flag.FlagSet, args []string, name, value string) {
	if !fs.Parsed() {
		fs.Parse(args) // with ExitOnError, as go test's own flags
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if !given {
		fs.Set(name, value)
	}
}
