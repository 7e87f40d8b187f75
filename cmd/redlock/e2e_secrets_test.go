//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dlmgo/redlock/dlm/redistest"
)

// TestCLINoSecretInOutput runs "redlock run" on three nodes, one of which
// refuses scripting (EVALSHA and EVAL renamed away) and answers every
// script with a quotation of its first arguments, the lock's secret among
// them; and, while the command runs, "redlock status" as a table and as
// JSON. At every log level, in both log formats, with the refusing node
// opened by each backend in turn, nothing redlock writes shows the lock's
// secret (read from a node that holds it), nor its start; while its error
// is still reported, the server's quotation of the arguments removed.
func TestCLINoSecretInOutput(t *testing.T) {
	t.Parallel()
	refusing := redistest.StartServer(t, redistest.WithoutScripting())
	healthy := redistest.StartServers(t, 2)
	measurePaceThrough(t, healthy[0])
	schemes := []string{"redis+goredis", "redis+redigo", "redis+rueidis", "redis+valkey"}
	i := 0
	for _, level := range []string{"debug", "info", "warn", "error"} {
		for _, format := range []string{"text", "json"} {
			scheme := schemes[i%len(schemes)]
			i++
			t.Run(level+"/"+format+"/"+scheme, func(t *testing.T) {
				key := "job-" + level + "-" + format
				nodes := scheme + "://" + refusing.Addr() + ",redis+redigo://" + healthy[0].Addr() + ",redis+rueidis://" + healthy[1].Addr()
				// Node timeouts far above a loaded machine's stalls: at
				// least 2 s, stretched to the pace.
				nt := nodeTimeout(t, 2*time.Second)
				opts := []string{"--nodes", nodes, "--log-level", level, "--log-format", format, "--node-timeout", nt.String()}
				dir := t.TempDir()
				ready, release := filepath.Join(dir, "ready"), filepath.Join(dir, "release")
				// A TTL of three node timeouts, which a loaded machine's
				// stalls do not use up; the lock may be extended while
				// the command waits.
				p := startRedlock(t, nil, runArgs(key, sh(`touch "$2"; `+boundedWait, release, ready), append(opts, "--ttl", (3*nt).String())...)...)
				waitFor(t, "the command to start", func() bool { return exists(ready) })
				v, err := healthy[0].Do("GET", "redlock:{"+key+"}")
				secret, _ := v.(string)
				if err != nil || len(secret) < 16 {
					t.Fatalf("GET the lock's key on %s = %v, %v; want the secret", healthy[0].Addr(), v, err)
				}
				statusArgs := append(append([]string{"status"}, opts...), key)
				code, tableOut, tableErr := redlockRun(t, nil, statusArgs...)
				if code != 69 || !strings.Contains(strings.ToLower(tableOut), "unknown command 'evalsha'") {
					t.Errorf("status = %d,\n%s\nwant 69 and the refusing node's error", code, tableOut)
				}
				code, jsonOut, jsonErr := redlockRun(t, nil, append([]string{"status", "--json"}, statusArgs[1:]...)...)
				if code != 69 || !strings.Contains(strings.ToLower(jsonOut), "unknown command 'evalsha'") {
					t.Errorf("status --json = %d,\n%s\nwant 69 and the refusing node's error", code, jsonOut)
				}
				touch(t, release)
				p.expectExit(0)
				runErr := p.stderr.String()
				if level != "error" && !strings.Contains(strings.ToLower(runErr), "unknown command 'evalsha', with args beginning with: [redacted]") {
					t.Errorf("run --log-level %s: stderr has no record of the refusing node's error, its quotation removed:\n%s", level, runErr)
				}
				for what, out := range map[string]string{
					"run's stdout": p.stdout.String(), "run's stderr": runErr,
					"status' stdout": tableOut, "status' stderr": tableErr,
					"status --json's stdout": jsonOut, "status --json's stderr": jsonErr,
				} {
					for _, s := range []string{secret, secret[:6]} {
						if strings.Contains(out, s) {
							t.Errorf("%s shows %q:\n%s", what, s, out)
							break
						}
					}
				}
			})
		}
	}
}
