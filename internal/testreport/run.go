package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A suite is one prebuilt test binary to run: a line of the manifest that
// make build-tests writes, "PACKAGE DIR BINARY [FLAG...]". PACKAGE names it
// in the report, DIR is the package's directory (a test binary runs there,
// as go test runs it), and the flags are passed to the binary after the
// runner's own.
type suite struct {
	pkg, dir, bin string
	flags         []string
}

// readManifest reads the manifest at path; blank lines and lines starting
// with # are skipped.
func readManifest(path string) ([]suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []suite
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: want PACKAGE DIR BINARY [FLAG...], got %q", path, i+1, l)
		}
		out = append(out, suite{pkg: f[0], dir: f[1], bin: f[2], flags: f[3:]})
	}
	return out, nil
}

// runOptions are what -run takes from the command line.
type runOptions struct {
	procs    int           // test binaries running at once
	parallel int           // each binary's -test.parallel
	timeout  time.Duration // each binary's -test.timeout
	keep     string        // the file the JSON stream is kept in
	report   string        // the directory whose "usage" file gets a line per binary
	// test2json is the path of cmd/test2json, built beforehand (go tool
	// test2json would build it, or load the module, for every binary).
	test2json string
}

// runSuites runs the suites' binaries, procs at once in the manifest's
// order, each through test2json as go test -json would, and follows
// their merged stream as -stream does (printing each package's result line
// and the output of failed tests to w). Nothing is compiled: the binaries
// were built before, so no compiler competes with the tests for the cores.
// Each binary's wall and CPU time (its own and its children's, the
// redis-server processes it started and waited for) goes to the report's
// usage file. It returns the exit status: 1 when a test or binary failed or
// nothing ran.
func runSuites(w io.Writer, suites []suite, o runOptions) int {
	pr, pw := io.Pipe()
	status := make(chan int, 1)
	go func() {
		status <- follow(pr, w, o.keep)
		io.Copy(io.Discard, pr) // follow stopped early: keep the runners unblocked
	}()
	var (
		mu    sync.Mutex // serializes whole lines into pw, and the usage file
		usage []string
		wg    sync.WaitGroup
	)
	emit := func(lines ...[]byte) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			pw.Write(append(l, '\n'))
		}
	}
	stopLoad := sampleLoad(o.report)
	defer stopLoad()
	slots := make(chan struct{}, max(o.procs, 1))
	for _, s := range suites {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			u := runSuite(o.test2json, s, o, emit)
			mu.Lock()
			usage = append(usage, u)
			mu.Unlock()
		}()
	}
	wg.Wait()
	pw.Close()
	rc := <-status
	if o.report != "" {
		f, err := os.OpenFile(filepath.Join(o.report, "usage"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			return 1
		}
		defer f.Close()
		for _, u := range usage {
			fmt.Fprintln(f, u)
		}
	}
	return rc
}

// runSuite runs one binary through test2json, passing each line of its
// JSON stream to emit, and returns its usage line "PACKAGE WALL CPU".
func runSuite(test2json string, s suite, o runOptions, emit func(...[]byte)) string {
	args := []string{"-t", "-p", s.pkg, s.bin,
		"-test.v=test2json", "-test.paniconexit0",
		fmt.Sprintf("-test.parallel=%d", o.parallel), fmt.Sprintf("-test.timeout=%v", o.timeout)}
	cmd := exec.Command(test2json, append(args, s.flags...)...)
	cmd.Dir = s.dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	start := time.Now()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		emit(event2json(s.pkg, "output", fmt.Sprintf("testreport: run %s: %v\n", s.bin, err)),
			event2json(s.pkg, "fail", ""))
		return fmt.Sprintf("%s %.1f 0", s.pkg, time.Since(start).Seconds())
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		emit(append([]byte(nil), sc.Bytes()...))
	}
	err = cmd.Wait()
	wall := time.Since(start)
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	result := "ok  "
	if err != nil {
		result = "FAIL"
	}
	// go test prints this line for a package; a binary run alone does not.
	emit(event2json(s.pkg, "output", fmt.Sprintf("%s\t%s\t%.3fs (cpu %.1fs)\n", result, s.pkg, wall.Seconds(), cpu.Seconds())))
	return fmt.Sprintf("%s %.1f %.1f", s.pkg, wall.Seconds(), cpu.Seconds())
}

// event2json is one line of test2json's stream for the package as a whole.
func event2json(pkg, action, output string) []byte {
	b, _ := json.Marshal(event{Action: action, Package: pkg, Output: output})
	return b
}

// sampleLoad reads the 1-minute load average, and counts the redis-server
// processes alive, every few seconds while the tests run; when stopped it
// writes the highest and the mean load and the most servers seen at once
// to dir's "load" file, for the report. Where /proc is missing it writes
// nothing.
func sampleLoad(dir string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var peak, sum float64
		n, servers := 0, 0
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			if b, err := os.ReadFile("/proc/loadavg"); err == nil {
				var l float64
				if _, err := fmt.Sscan(string(b), &l); err == nil {
					peak, sum, n = max(peak, l), sum+l, n+1
				}
			}
			servers = max(servers, countProcesses("redis-server"))
			select {
			case <-done:
				if n > 0 && dir != "" {
					line := fmt.Sprintf("max %.1f, mean %.1f over %d samples; at most %d redis-server processes at once\n", peak, sum/float64(n), n, servers)
					os.WriteFile(filepath.Join(dir, "load"), []byte(line), 0o644)
				}
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

// countProcesses returns how many processes named name (their comm) are
// alive.
func countProcesses(name string) int {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	n := 0
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == name {
			n++
		}
	}
	return n
}
