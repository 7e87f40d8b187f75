// Command testreport follows the JSON that go test -json writes, for make
// test: it prints what a reader of go test's plain output needs (each
// package's result line, and the whole output of every test that failed),
// keeps the stream in a file, and at the end prints one table of every
// package and step with its seconds and the tests it ran.
//
//	go test -json ./... | testreport -stream -o dir/NAME.json
//	testreport -report dir
//
// With -stream it exits 1 when a test or package failed or nothing ran. With
// -report it reads every dir/*.json and dir/steps (lines "NAME SECONDS
// EXIT"), prints the table, the total time since dir/start (Unix seconds)
// and a closing line "N passed, N failed, N skipped", and exits 1 when
// anything failed.
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
	report := flag.String("report", "", "the directory of streams and steps to report on")
	flag.Parse()
	switch {
	case *stream && *report == "":
		os.Exit(follow(os.Stdin, os.Stdout, *out))
	case *report != "" && !*stream:
		os.Exit(summarize(os.Stdout, *report))
	default:
		fmt.Fprintln(os.Stderr, "usage: testreport -stream [-o FILE] | testreport -report DIR")
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
	sort.Slice(rows, func(i, j int) bool { return rows[i].seconds > rows[j].seconds })
	steps, err := readSteps(filepath.Join(dir, "steps"))
	if err != nil {
		fmt.Fprintln(w, "testreport:", err)
		return 1
	}
	bad := false
	fmt.Fprintf(w, "\n%-52s %8s %6s %9s  %s\n", "package or step", "seconds", "tests", "subtests", "result")
	for _, r := range append(steps, rows...) {
		tests, subtests := "", ""
		if r.status != "step ok" && r.status != "step FAIL" {
			tests, subtests = strconv.Itoa(r.tests), strconv.Itoa(r.subtests)
		}
		fmt.Fprintf(w, "%-52s %8.1f %6s %9s  %s\n", r.name, r.seconds, tests, subtests, r.status)
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
			r = &row{name: strings.TrimPrefix(p, "github.com/dlmgo/redlock/"), status: "no result"}
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

// readSteps reads the steps file: "NAME SECONDS EXIT" per line.
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
		if len(f) != 3 {
			continue
		}
		sec, _ := strconv.ParseFloat(f[1], 64)
		st := "step ok"
		if f[2] != "0" {
			st = "step FAIL"
		}
		out = append(out, row{name: "(" + f[0] + ")", seconds: sec, status: st})
	}
	return out, nil
}
