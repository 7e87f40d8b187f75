package main

import (
	"fmt"
	"io"
	"strings"
)

// helpWidth is the width help text is wrapped to.
const helpWidth = 79

// mainHelp is the help of redlock as a whole.
const mainHelp = `redlock runs a command under a distributed lock held on a majority of
independent Redis masters (the Redlock algorithm): flock(1) across machines.

Usage:
  redlock run [OPTIONS] KEY [--] COMMAND [ARG...]   run COMMAND holding lock KEY
  redlock status [OPTIONS] KEY                      show lock KEY on each node
  redlock ls [OPTIONS] [PATTERN]                    list the locks held
  redlock unlock --force [OPTIONS] KEY              break lock KEY (asks first)
  redlock elect [OPTIONS] NAME VALUE [--] COMMAND   run COMMAND as leader
  redlock elect --observe [OPTIONS] NAME            follow the leader of NAME
  redlock version                                   show the version
  redlock help [COMMAND]                            show a command's help

The nodes come from --nodes or REDLOCK_NODES: comma-separated URLs such as
redis://HOST:PORT, rediss://HOST:PORT for TLS, redis://:PASSWORD@HOST:PORT,
or bare HOST:PORT addresses. They connect through the goredis client
library; --backend (REDLOCK_BACKEND) picks another for them, and a URL may
name its own, as redis+rueidis://HOST:PORT. Use 3 or 5 independent
masters, not replicas. Every option can also be set by an environment
variable; flags win.

Examples:
  export REDLOCK_NODES=redis://r1:6379,redis://r2:6379,redis://r3:6379
  redlock run --no-wait nightly-report -- ./report.sh
  redlock status nightly-report

Run "redlock help run" for the options and the exit codes.
`

// runHelp is the help of run; %s is where its options go.
const runHelp = `Usage: redlock run [OPTIONS] KEY [--] COMMAND [ARG...]

Takes the lock named KEY, waiting for it as --wait says, runs COMMAND while
the lock is extended in the background, and releases the lock when COMMAND
exits. COMMAND gets the environment variable REDLOCK_KEY, and with --fencing
the lock's fencing token as REDLOCK_FENCE and its grant id as
REDLOCK_FENCE_GRANT; it does not get REDLOCK_NODES, which holds the nodes'
passwords, unless --pass-nodes is given. The signals INT, TERM, HUP, QUIT,
USR1 and USR2 are passed on to COMMAND. If the lock is lost, COMMAND gets
SIGTERM, then SIGKILL after --grace, and redlock exits with --lost-exit-code.
Options may also follow KEY, up to "--".

Options:
%s
DURATION is a number of seconds (10, 2.5) or a Go duration (500ms, 1m30s).

Exit codes:
  N        COMMAND ran and exited with N; 128+N when signal N killed it
  75       someone else holds the lock: --no-wait, or --wait ran out
           (--conflict-exit-code changes it)
  70       the lock was lost while COMMAND ran (--lost-exit-code changes it)
  69       too many nodes unavailable for a quorum
  64       bad command line or environment variable
  78       no nodes, a bad node URL, a node refused access (password, ACL),
           or a node is misconfigured (a cluster member without ?cluster=true)
  126      COMMAND cannot be executed
  127      COMMAND not found
  128+N    signal N stopped redlock while it waited for the lock
  1        any other failure of redlock

Examples:
  # At most one copy of a cron job across machines; skip it if running.
  redlock run --no-wait --quiet nightly-report -- ./report.sh

  # Wait up to 5 minutes for the lock, then deploy holding it.
  redlock run --wait 5m deploy -- make deploy

  # Readers share the key; a run without --shared is the writer.
  redlock run --shared catalog -- ./export.sh

  # At most 3 of these at once.
  redlock run --limit 3 encoders -- ./encode.sh

  # Give the command a fencing token to guard its writes.
  redlock run --fencing migrate -- \
    sh -c './migrate --fence "$REDLOCK_FENCE" --grant "$REDLOCK_FENCE_GRANT"'

  # Nodes with a password, over TLS (rediss), from the environment.
  export REDLOCK_NODES=rediss://:pw@r1,rediss://:pw@r2,rediss://:pw@r3
  export REDLOCK_BACKEND=goredis
  redlock run backup -- ./backup.sh
`

// statusHelp is the help of status; %s is where its options go.
const statusHelp = `Usage: redlock status [OPTIONS] KEY

Asks every node about the lock named KEY: whether the node holds it, for how
much longer, and its fencing counter. The lock is held when a quorum of the
nodes holds it. The holder's secret is never shown. It takes and changes
nothing. Options may also follow KEY.

Options:
%s
Exit codes:
  0        every node answered
  69       a node did not answer; the report shows its error
  78       no nodes, a bad node URL, a node refused access (password, ACL),
           or a node is misconfigured (a cluster member without ?cluster=true)
  64       bad command line or environment variable

Examples:
  redlock status nightly-report
  redlock status --json nightly-report | jq .held
`

// lsHelp is the help of ls; %s is where its options go.
const lsHelp = `Usage: redlock ls [OPTIONS] [PATTERN]

Lists the locks under the key prefix on every node, found with SCAN (never
KEYS): for each, on how many nodes it is held (a quorum means someone holds
it), how long its keys live on a quorum unless extended, its fencing
counter, the waiters in its line and a read lock's readers. PATTERN selects
keys as Redis MATCH patterns do (*, job-*, report-[0-9]); without it, all.
Semaphores' permits are not listed, nor the locks of a Redis Cluster node.
Holders' secrets are never shown; keys are shown with the characters that
do not print escaped.

Options:
%s
Exit codes:
  0        every node answered
  69       a node did not answer in full; its locks may be missing
  78       no nodes, a bad node URL, a node refused access (password, ACL),
           or a node is a Redis Cluster, whose locks ls cannot list
  64       bad command line or environment variable

Examples:
  redlock ls
  redlock ls 'deploy-*'
  redlock ls --json | jq -r '.locks[] | select(.held) | .key'
`

// unlockHelp is the help of unlock; %s is where its options go.
const unlockHelp = `Usage: redlock unlock --force [OPTIONS] KEY

Breaks the lock named KEY, whoever holds it: shows its status on each node,
asks for confirmation on the terminal (y to go on) unless --yes, then
deletes the lock's keys on every node and logs what it deleted. The holder
is not stopped: its next extension finds the lock gone and it loses it
(redlock run exits 70), but until then, or if it is paused, it may still
write while another client holds the lock. Only fencing (--fencing, and a
store that checks REDLOCK_FENCE) keeps such a late write out; the fencing
counter is kept, so the next holder's token is greater.

Options:
%s
Exit codes:
  0        every node answered and the lock's keys are gone
  1        the question was not answered y: nothing deleted
  69       a node did not answer; the lock's keys may remain there
  78       no nodes, a bad node URL, a node refused access (password, ACL),
           or a node is misconfigured (a cluster member without ?cluster=true)
  64       bad command line or environment variable, or no --force

Examples:
  redlock unlock --force nightly-report
  redlock unlock --force --yes nightly-report   # in a script
`

// electHelp is the help of elect; %s is where its options go.
const electHelp = `Usage: redlock elect [OPTIONS] NAME VALUE [--] COMMAND [ARG...]
       redlock elect --observe [OPTIONS] NAME

Campaigns in the election called NAME, waiting to lead as --wait says, then
runs COMMAND as the leader, and resigns when COMMAND exits. At most one
candidate leads at a time; the others wait, and one of them leads once the
leader resigns, or its leadership expires (a crash). COMMAND gets NAME as
REDLOCK_KEY, the leader's term as REDLOCK_FENCE, a fencing token that
grows with every leadership, and its grant id as REDLOCK_FENCE_GRANT; not
REDLOCK_NODES, unless --pass-nodes is given. Signals and a lost leadership
are handled as by "redlock run", with the same exit codes.

With --observe, takes no part: prints the leader's VALUE, then each change
(a new leader, or none), one line each, until INT or TERM. It prints
nothing while too many nodes fail to tell.

Options:
%s
Examples:
  # Run the scheduler on one machine at a time; others take over.
  redlock elect scheduler "$(hostname)" -- ./scheduler

  # Who leads?
  redlock elect --observe scheduler
  redlock elect --observe --json scheduler | jq -r .value
`

// versionHelp is the help of version.
const versionHelp = `Usage: redlock version

Shows the version of redlock, the Go version it was built with, the VCS
revision when the build recorded it, and the versions of the lock and client
libraries.
`

// writeHelp writes the help of topic, a command name or "" for redlock's.
// It reports false for an unknown topic.
func writeHelp(w io.Writer, topic string) bool {
	c := defaultConfig()
	switch topic {
	case "", "help":
		io.WriteString(w, mainHelp)
	case "run":
		fmt.Fprintf(w, runHelp, formatOptions(runOptions(c)))
	case "status":
		fmt.Fprintf(w, statusHelp, formatOptions(statusOptions(c)))
	case "ls":
		fmt.Fprintf(w, lsHelp, formatOptions(lsOptions(c)))
	case "unlock":
		fmt.Fprintf(w, unlockHelp, formatOptions(unlockOptions(c)))
	case "elect":
		fmt.Fprintf(w, electHelp, formatOptions(electOptions(c, &electFlags{})))
	case "version":
		io.WriteString(w, versionHelp)
	default:
		return false
	}
	return true
}

// formatOptions lists options for help: the flag and its value, then what
// it does, its environment variable and its default, wrapped.
func formatOptions(opts []option) string {
	const indent = 6
	var b strings.Builder
	for _, o := range opts {
		name := "--" + o.name
		if o.arg != "" {
			name += " " + o.arg
		}
		text := o.usage + " [" + o.env
		if o.def != "" {
			text += "; default " + o.def
		}
		text += "]"
		fmt.Fprintf(&b, "  %s\n%s", name, wrap(text, indent, helpWidth))
	}
	return b.String()
}

// wrap breaks text into lines of at most width columns, each indented by
// indent spaces.
func wrap(text string, indent, width int) string {
	var b strings.Builder
	pad := strings.Repeat(" ", indent)
	line := pad
	for _, word := range strings.Fields(text) {
		if len(line) > indent && len(line)+1+len(word) > width {
			b.WriteString(line + "\n")
			line = pad
		}
		if len(line) > indent {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// usageError writes err, its characters that do not print escaped, and
// where to find help to w, and returns the exit code of a usage error.
func usageError(w io.Writer, cmd string, err error) int {
	help := "redlock help"
	if cmd != "" {
		help += " " + cmd
	}
	fmt.Fprintf(w, "redlock: %s\nRun %q for usage.\n", printable(err.Error()), help)
	return exitUsage
}
