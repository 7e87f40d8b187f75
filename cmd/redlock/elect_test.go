//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// TestElectTakesTurns runs three candidates for one election, each leading
// for a moment: no two commands overlap, and each leader's term, passed as
// REDLOCK_FENCE, is greater than the one before.
func TestElectTakesTurns(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	log := filepath.Join(t.TempDir(), "log")
	const candidates = 3
	script := `echo "start $2 $REDLOCK_KEY $REDLOCK_FENCE" >> "$1"; sleep 0.5; echo "end $2" >> "$1"`
	var ps []*proc
	for i := range candidates {
		args := append([]string{"elect", "--nodes", nodes, "sched", "host-" + strconv.Itoa(i), "--"}, sh(script, log, strconv.Itoa(i))...)
		ps = append(ps, startRedlock(t, nil, args...))
	}
	for _, p := range ps {
		p.expectExit(0)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, log)), "\n")
	if len(lines) != 2*candidates {
		t.Fatalf("the commands wrote %d lines; want %d:\n%s", len(lines), 2*candidates, strings.Join(lines, "\n"))
	}
	var last uint64
	for i := 0; i < len(lines); i += 2 {
		f := strings.Fields(lines[i])
		if len(f) != 4 || f[0] != "start" || f[2] != "sched" || lines[i+1] != "end "+f[1] {
			t.Fatalf("the leaders' commands overlapped, or lack REDLOCK_KEY:\n%s", strings.Join(lines, "\n"))
		}
		term, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil || term <= last {
			t.Fatalf("REDLOCK_FENCE %q after %d; want a greater term:\n%s", f[3], last, strings.Join(lines, "\n"))
		}
		last = term
	}
}

// TestElectObserve follows an election with --observe --json: no leader,
// then the leader's value, then none once it resigns.
func TestElectObserve(t *testing.T) {
	t.Parallel()
	_, nodes := startServers(t, 3)
	dir := t.TempDir()
	ready, release := filepath.Join(dir, "ready"), filepath.Join(dir, "release")
	watcher := startRedlock(t, nil, "elect", "--observe", "--json", "--nodes", nodes, "jobs")
	lines := func() []observation {
		var out []observation
		for _, l := range strings.Split(strings.TrimSpace(watcher.stdout.String()), "\n") {
			if l == "" {
				continue
			}
			var o observation
			if err := json.Unmarshal([]byte(l), &o); err != nil {
				t.Fatalf("elect --observe --json printed %q: %v", l, err)
			}
			out = append(out, o)
		}
		return out
	}
	waitFor(t, "the first observation", func() bool { return len(lines()) == 1 })
	if got := lines()[0]; got.Leader {
		t.Fatalf("first observation %+v; want no leader", got)
	}
	leader := startRedlock(t, nil, append([]string{"elect", "--nodes", nodes, "jobs", "worker 7", "--"}, sh(`touch "$2"; `+boundedWait, release, ready)...)...)
	waitFor(t, "the leader's command", func() bool { return exists(ready) })
	waitFor(t, "the leader observed", func() bool { return len(lines()) == 2 })
	if got := lines()[1]; got != (observation{Leader: true, Value: "worker 7"}) {
		t.Fatalf("observed %+v; want leader \"worker 7\"", got)
	}
	code, _, stderr := redlockRun(t, nil, "elect", "--nodes", nodes, "--no-wait", "jobs", "other", "--", "true")
	if code != 75 {
		t.Errorf("elect --no-wait while another leads = %d; want 75; stderr:\n%s", code, stderr)
	}
	touch(t, release)
	leader.expectExit(0)
	waitFor(t, "the resignation observed", func() bool { return len(lines()) == 3 })
	if got := lines()[2]; got.Leader {
		t.Fatalf("observed %+v after the leader resigned; want no leader", got)
	}
	watcher.signal(syscall.SIGTERM)
	watcher.expectExit(0)
}

// TestElectUsage checks the command line's refusals, and that the help
// fits the terminal and every option is documented.
func TestElectUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"elect"},
		{"elect", "name"},
		{"elect", "name", "value"},
		{"elect", "--observe", "name", "value"},
		{"elect", "", "value", "--", "true"},
	} {
		var stdout, stderr bytes.Buffer
		if code := redlock(args, func(string) string { return "" }, &stdout, &stderr); code != exitUsage {
			t.Errorf("redlock %q = %d; want %d; stderr:\n%s", args, code, exitUsage, stderr.String())
		}
	}
	var help bytes.Buffer
	if !writeHelp(&help, "elect") {
		t.Fatal(`writeHelp("elect") = false`)
	}
	for _, line := range strings.Split(help.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("help elect: line of %d columns: %q", n, line)
		}
	}
	docs := map[string]string{"redlock help elect": help.String()}
	for _, path := range []string{"doc.go", "../../docs/cli.md"} {
		docs[path] = readFile(t, path)
	}
	f := &electFlags{}
	for _, o := range electOptions(defaultConfig(), f) {
		for where, text := range docs {
			if !strings.Contains(text, "--"+o.name) || !strings.Contains(text, o.env) {
				t.Errorf("%s does not name --%s and %s", where, o.name, o.env)
			}
		}
	}
	for where, text := range docs {
		if !strings.Contains(text, "redlock elect") {
			t.Errorf("%s does not show redlock elect", where)
		}
	}
}
