// Command testreport runs and follows make test's tests and steps: it
// prints what a reader of go test's plain output needs (each package's
// result line, and the whole output of every test that failed), keeps the
// stream in a file, and at the end prints one table of every package and
// step with its wall and CPU seconds and the tests it ran.
//
//	go test -json ./... | testreport -stream -o dir/NAME.json
//	testreport -run MANIFEST -test2json PATH -p 2 -parallel 4 -o dir/NAME.json -report dir
//	testreport -step NAME -report dir -- COMMAND [ARG...]
//	testreport -report dir
//
// With -stream it exits 1 when a test or package failed or nothing ran.
// With -run it runs the prebuilt test binaries that MANIFEST lists (see
// [suite]) through test2json (-test2json), -p at once, and follows their stream
// as -stream does, adding a line per binary (package, wall and CPU seconds)
// to dir/usage. With -step it runs COMMAND and adds a line "NAME SECONDS
// EXIT CPU" to dir/steps. With -report alone it reads every dir/*.json,
// dir/usage and dir/steps, prints the table, the total time since dir/start
// (Unix seconds) and a closing line "N passed, N failed, N skipped", and
// exits 1 when anything failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	stream := flag.Bool("stream", false, "follow go test -json on standard input")
	out := flag.String("o", "", "with -stream: the file to keep the stream in")
	report := flag.String("report", "", "the directory of streams, usage and steps to report on")
	run := flag.String("run", "", "the manifest of prebuilt test binaries to run")
	procs := flag.Int("p", 2, "with -run: test binaries running at once")
	parallel := flag.Int("parallel", 4, "with -run: each binary's -test.parallel")
	timeout := flag.Duration("timeout", 20*time.Minute, "with -run: each binary's -test.timeout")
	test2json := flag.String("test2json", "test2json", "with -run: the path of a test2json binary (go build -o PATH cmd/test2json)")
	step := flag.String("step", "", "the name of a step to run and time")
	flag.Parse()
	switch {
	case *stream && *report == "" && *run == "" && *step == "":
		os.Exit(follow(os.Stdin, os.Stdout, *out))
	case *run != "" && !*stream && *step == "":
		suites, err := readManifest(*run)
		if err == nil && strings.ContainsRune(*test2json, filepath.Separator) {
			*test2json, err = filepath.Abs(*test2json) // the binaries run in their packages' directories
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(1)
		}
		os.Exit(runSuites(os.Stdout, suites, runOptions{procs: *procs, parallel: *parallel, timeout: *timeout, keep: *out, report: *report, test2json: *test2json}))
	case *step != "" && *report != "" && !*stream && *run == "":
		os.Exit(runStep(*step, *report, flag.Args()))
	case *report != "" && !*stream && *run == "" && *step == "":
		os.Exit(summarize(os.Stdout, *report))
	default:
		fmt.Fprintln(os.Stderr, "usage: testreport -stream [-o FILE] | testreport -run MANIFEST [-p N] [-parallel N] [-o FILE] [-report DIR] | testreport -step NAME -report DIR -- COMMAND... | testreport -report DIR")
		os.Exit(2)
	}
}

// follow copies in to keep (when named), printing result lines and failed
// tests' output to w, and returns the exit status.
func follow(in io.Reader, w io.Writer, keep string) int {
	var sink io.Writer = io.Discard
	if keep != "" {
		f, err := os.Create(keep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			return 1
		}
		defer f.Close()
		sink = f
	}
	outputs := map[string][]string{} // package + test → its output so far
	failed, results := false, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(sink, "%s\n", line)
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: a build error, a panic before test2json
			continue
		}
		id := e.Package + " " + e.Test
		switch e.Action {
		case "output", "build-output":
			if e.Test == "" && e.Action == "output" && isResultLine(e.Output) {
				fmt.Fprint(w, e.Output)
				continue
			}
			outputs[id] = append(outputs[id], e.Output)
		case "fail", "build-fail":
			failed = true
			fmt.Fprint(w, strings.Join(outputs[id], ""))
			delete(outputs, id)
			if e.Test == "" {
				results++
			}
		case "pass", "skip":
			delete(outputs, id)
			if e.Test == "" {
				results++
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "testreport:", err)
		return 1
	}
	if failed || results == 0 {
		return 1
	}
	return 0
}

// isResultLine says whether a package's output line is go test's closing
// line for it ("ok  \tpkg\t1.2s", "FAIL\tpkg\t…", "?   \tpkg\t[no test files]").
func isResultLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "?   \t")
}

// row is one line of the table.
type row struct {
	name                    string
	seconds                 float64
	cpu                     float64 // CPU seconds, or -1 when not measured
	tests, subtests, failed int
	skipped                 int
	status                  string
}

func summarize(w io.Writer, dir string) int {
	var rows []row
	streams, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, s := range streams {
		r, err := packages(s)
		if err != nil {
			fmt.Fprintln(w, "testreport:", err)
			return 1
		}
		rows = append(rows, r...)
	}
	if err := addUsage(rows, filepath.Join(dir, "usage")); err != nil {
		fmt.Fprintln(w, "testreport:", err)
		return 1
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].seconds > rows[j].seconds })
	steps, err := readSteps(filepath.Join(dir, "steps"))
	if err != nil {
		fmt.Fprintln(w, "testreport:", err)
		return 1
	}
	bad := false
	fmt.Fprintf(w, "\n%-52s %8s %8s %6s %9s  %s\n", "package or step", "seconds", "cpu", "tests", "subtests", "result")
	for _, r := range append(steps, rows...) {
		tests, subtests, cpu := "", "", ""
		if r.status != "step ok" && r.status != "step FAIL" {
			tests, subtests = strconv.Itoa(r.tests), strconv.Itoa(r.subtests)
		}
		if r.cpu >= 0 {
			cpu = strconv.FormatFloat(r.cpu, 'f', 1, 64)
		}
		fmt.Fprintf(w, "%-52s %8.1f %8s %6s %9s  %s\n", r.name, r.seconds, cpu, tests, subtests, r.status)
		bad = bad || strings.Contains(r.status, "FAIL")
	}
	var passed, failed, skipped int
	for _, r := range rows {
		passed += r.tests + r.subtests - r.failed - r.skipped
		failed += r.failed
		skipped += r.skipped
	}
	if b, err := os.ReadFile(filepath.Join(dir, "start")); err == nil {
		if start, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			fmt.Fprintf(w, "total: %ds\n", int(time.Since(time.Unix(start, 0)).Seconds()))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "load")); err == nil {
		fmt.Fprintf(w, "load average during the tests: %s\n", strings.TrimSpace(string(b)))
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no test ran")
		bad = true
	}
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if bad {
		return 1
	}
	return 0
}

// packages reads one stream into a row per package.
func packages(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byPkg := map[string]*row{}
	var order []string
	get := func(p string) *row {
		r, ok := byPkg[p]
		if !ok {
			r = &row{name: strings.TrimPrefix(p, "github.com/dlmgo/redlock/"), status: "no result", cpu: -1}
			byPkg[p] = r
			order = append(order, p)
		}
		return r
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Package == "" {
			continue
		}
		r := get(e.Package)
		switch {
		case e.Test == "" && (e.Action == "pass" || e.Action == "skip"):
			r.seconds, r.status = e.Elapsed, "ok"
			if e.Action == "skip" {
				r.status = "no tests"
			}
		case e.Test == "" && e.Action == "fail":
			r.seconds, r.status = e.Elapsed, "FAIL"
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			if strings.Contains(e.Test, "/") {
				r.subtests++
			} else {
				r.tests++
			}
			if e.Action == "fail" {
				r.failed++
			}
			if e.Action == "skip" {
				r.skipped++
			}
		}
	}
	var out []row
	for _, p := range order {
		r := byPkg[p]
		if r.status == "no result" {
			r.status = "FAIL (no result)"
		}
		if r.status == "no tests" && r.tests == 0 {
			continue
		}
		out = append(out, *r)
	}
	return out, sc.Err()
}

// addUsage sets the CPU seconds of the rows whose package the usage file
// (lines "PACKAGE WALL CPU", see [runSuites]) names.
func addUsage(rows []row, path string) error {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cpu := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			if v, err := strconv.ParseFloat(f[2], 64); err == nil {
				cpu[strings.TrimPrefix(f[0], "github.com/dlmgo/redlock/")] = v
			}
		}
	}
	for i := range rows {
		if v, ok := cpu[rows[i].name]; ok {
			rows[i].cpu = v
		}
	}
	return nil
}

// readSteps reads the steps file: "NAME SECONDS EXIT [CPU]" per line.
func readSteps(path string) ([]row, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []row
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 && len(f) != 4 {
			continue
		}
		sec, _ := strconv.ParseFloat(f[1], 64)
		st := "step ok"
		if f[2] != "0" {
			st = "step FAIL"
		}
		cpu := -1.0
		if len(f) == 4 {
			cpu, _ = strconv.ParseFloat(f[3], 64)
		}
		out = append(out, row{name: "(" + f[0] + ")", seconds: sec, cpu: cpu, status: st})
	}
	return out, nil
}
