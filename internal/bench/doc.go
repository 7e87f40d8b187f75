// Package bench is redlock's side-by-side benchmark harness: it starts real
// redis-server processes, runs the scenarios of the project's performance
// issue against redlock over each backend and against redsync v4 on the
// same nodes in the same run (and redlock's read lock and semaphore beside
// its mutex), and writes the report (Markdown and an SVG
// chart) that docs/benchmarks.md is. The hot-key cases run twice in one
// process: with the contenders sharing one client, as goroutines of one
// process would, and with a client each, as separate processes would; and
// the contention cases run again with a process per contender, the harness
// starting copies of its own program ([IsContender], [ContenderMain]) and
// merging their calls on the shared clock (procs.go). The cold bursts start
// hundreds of such processes for each run, which open the library at one
// start instant with no warm-up and at once contend for one key, the nodes'
// connections and leftover keys counted around the run (burst.go). Last,
// with every other library closed, the held-locks cases have one Manager
// hold tens or hundreds of thousands of auto-extended locks and measure
// what it costs (held.go).
//
// It is a module of its own so that redsync, the comparison target, never
// enters the library's module graph. It uses only the library's public API,
// so it measures whatever the library does at the time it runs. The command
// is ./cmd/lockbench; `make bench` at the repository root runs it.
package bench
