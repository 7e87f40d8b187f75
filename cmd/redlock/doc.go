// Command redlock runs a command under a distributed lock: flock(1) across
// machines. The lock is held on a majority of independent Redis masters by
// the Redlock algorithm of package [github.com/dlmgo/redlock/dlm], and kept
// extended while the command runs.
//
// Usage:
//
//	redlock run [OPTIONS] KEY [--] COMMAND [ARG...]
//	redlock status [OPTIONS] KEY
//	redlock ls [OPTIONS] [PATTERN]
//	redlock unlock --force [OPTIONS] KEY
//	redlock elect [OPTIONS] NAME VALUE [--] COMMAND [ARG...]
//	redlock elect --observe [OPTIONS] NAME
//	redlock version
//	redlock help [COMMAND]
//
// # run
//
// run takes the lock named KEY, waiting for it without limit, up to --wait,
// or not at all with --no-wait; runs COMMAND with the lock extended in the
// background; and releases the lock when COMMAND exits. COMMAND inherits
// redlock's standard streams and environment, plus REDLOCK_KEY (the key)
// and, with --fencing, REDLOCK_FENCE (the lock's fencing token, greater than
// that of any earlier holder of the key) and REDLOCK_FENCE_GRANT (its grant
// id: a store admits a token equal to the largest it has seen only with the
// same grant id). REDLOCK_NODES, which holds the nodes' passwords, is
// removed from COMMAND's environment unless --pass-nodes is given. The
// signals INT, TERM, HUP, QUIT,
// USR1 and USR2 are passed on to COMMAND; while redlock still waits for the
// lock they stop the wait instead. A signal redlock was started with ignored
// (SIGHUP under nohup) stays ignored, by redlock and COMMAND alike. If the lock is lost — an extension finds
// it gone from a quorum of nodes, or its validity is about to end with no
// extension succeeding — COMMAND gets SIGTERM, then SIGKILL after --grace
// (default 5s), and redlock exits with --lost-exit-code.
//
// With --shared, run takes a read lock on KEY, held together with other
// readers; a run without it is the writer, which waits for the readers and
// keeps new ones out meanwhile. With --limit N, KEY names a semaphore of N
// permits and run takes one of them. With --fair, the waiters of KEY take
// the lock in the order they began to wait, across processes and machines;
// every client of KEY must use it (not with --shared or --limit).
//
// Outside the foreground of a terminal (cron, systemd, scripts, CI) COMMAND
// runs in a process group of its own, and signals go to the whole group,
// processes COMMAND started included. In the foreground of a terminal
// COMMAND shares redlock's process group, so that it can read the terminal;
// the terminal then sends Ctrl-C and Ctrl-\ to COMMAND itself, and redlock
// does not send them a second time.
//
// On Linux COMMAND runs under a supervisor, redlock's own executable, which
// keeps every process COMMAND starts below it (a child subreaper) and exits
// with COMMAND's status. If redlock dies without ending COMMAND (SIGKILL, a
// crash), the supervisor sends SIGTERM to COMMAND's process group and every
// process below it, then SIGKILL after --grace or a quarter of --ttl,
// whichever is shorter: all are gone before the lock expires. Processes
// COMMAND leaves running when it exits, and those that COMMAND did not start
// itself, are not covered.
//
// While redlock waits on a terminal, a line on stderr shows how long it has
// waited and what the nodes say of the holder: on how many nodes the lock
// is, and when it expires unless extended. The holder's secret is never
// shown.
//
// # status
//
// status asks every node about the lock named KEY: whether it holds it,
// the time left to live, the fencing counter, and the holder's label and
// grant time when it ran with --owner, as a table or, with
// --json, as a JSON object:
//
//	{"key": "job", "held": true, "held_on": 3, "failed": 0, "quorum": 2,
//	 "nodes": [{"node": "10.0.0.1:6379", "held": true, "ttl_ms": 9120, "fence": 7}, ...]}
//
// "held" is true when a quorum of nodes holds the key. A node whose key a
// release has just handed to a waiting client shows "reserved" in the HELD
// column ("reserved": true in the JSON, held by no one): that client's next
// attempt takes it, and the reservation lasts two node timeouts at most. A
// node that did not answer has "error" set.
//
// # ls
//
// ls lists the locks under the key prefix on every node, found with SCAN
// (never KEYS), PATTERN selecting keys as Redis MATCH patterns do: for
// each, on how many nodes it is held, how long its keys live on a quorum,
// its fencing counter, the waiters in its line and a read lock's readers,
// as a table or, with --json, a JSON object. --max N (1000) bounds the
// list. Keys are shown with the characters that do not print escaped.
//
// # unlock
//
// unlock --force KEY breaks the lock named KEY, whoever holds it: it shows
// the lock's status, asks for a "y" on stdin unless --yes (anything else
// deletes nothing and exits 1), deletes the lock's keys on every node and
// logs what it deleted. The holder is not stopped: its next extension
// fails and it loses the lock (a run exits 70), but until then it may
// still write; only fencing keeps that late write out, and the fencing
// counter is kept.
//
// # elect
//
// elect campaigns in the leader election called NAME (package dlm's
// Election.Campaign), waiting to lead as run waits for a lock, then runs
// COMMAND as the leader and resigns when COMMAND exits. At most one
// candidate leads at a time; when the leader resigns, or its leadership
// expires after a crash, one of the waiting candidates leads. COMMAND gets
// REDLOCK_KEY (NAME), REDLOCK_FENCE (the leader's term, greater than any
// earlier leader's while the nodes keep their counters) and
// REDLOCK_FENCE_GRANT (its grant id). Signals, a lost leadership and the exit codes are those
// of run.
//
// redlock elect --observe NAME takes no part: it prints the leader's VALUE,
// then each change — a new leader, or none — one line each (leader "VALUE"
// or no leader), or with --json a JSON object a line
// ({"leader": true, "value": "host-1"}), until INT or TERM.
//
// # Nodes and options
//
// Nodes come from --nodes or REDLOCK_NODES, comma-separated: node URLs as
// package dlm reads them (redis[s][+BACKEND]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?PARAMS])
// or bare HOST:PORT addresses. redlock includes the goredis, redigo,
// rueidis and valkey (valkey-go) backends; a plain redis:// or rediss://
// URL, or a bare address, names none and connects through goredis, or
// through the backend --backend names (package dlm itself refuses such a
// URL where several backends are registered: redlock names one for it);
// redis+rueidis://, redis+valkey:// and the like name their own. A URL
// without a host is refused (exit 78). Passwords are never printed: URLs are shown
// redacted.
// A comma in a password needs no escaping (%2C also works): a comma
// followed by a scheme starts a new URL, and in a URL the user information
// runs to its last '@'. A '/', '?' or '#' in a password must be
// percent-encoded (%2F, %3F, %23).
//
// Every option can also be set by an environment variable, REDLOCK_ and the
// option's name in capitals with dashes as underscores (--ttl:
// REDLOCK_TTL, --no-wait: REDLOCK_NO_WAIT); flags win over the environment,
// and an empty variable counts as unset. Options of all commands:
//
//	--nodes URL,...         node URLs; repeatable              REDLOCK_NODES
//	--backend NAME          backend of plain URLs (goredis)    REDLOCK_BACKEND
//	--key-prefix PREFIX     prefix of Redis keys (redlock:)    REDLOCK_KEY_PREFIX
//	--node-timeout DURATION bound on one node request          REDLOCK_NODE_TIMEOUT
//	--log-format text|json  format of logs on stderr (text)    REDLOCK_LOG_FORMAT
//	--log-level LEVEL       debug, info, warn (default), error REDLOCK_LOG_LEVEL
//	--quiet                 errors only, no waiting line       REDLOCK_QUIET
//
// Options of run:
//
//	--ttl DURATION          lock TTL, renewed meanwhile (10s)  REDLOCK_TTL
//	--wait DURATION         give up waiting after DURATION     REDLOCK_WAIT
//	--no-wait               one attempt only (--wait 0)        REDLOCK_NO_WAIT
//	--grace DURATION        SIGTERM to SIGKILL on loss (5s)    REDLOCK_GRACE
//	--fencing               pass REDLOCK_FENCE to COMMAND      REDLOCK_FENCING
//	--shared                a read lock, shared by readers     REDLOCK_SHARED
//	--limit N               one of N permits of semaphore KEY  REDLOCK_LIMIT
//	--fair                  first come, first served           REDLOCK_FAIR
//	--conflict-exit-code N  exit code when held elsewhere (75) REDLOCK_CONFLICT_EXIT_CODE
//	--lost-exit-code N      exit code when lost (70)           REDLOCK_LOST_EXIT_CODE
//	--pass-nodes            pass REDLOCK_NODES to COMMAND      REDLOCK_PASS_NODES
//	--owner NAME            label the lock: host, pid, NAME    REDLOCK_OWNER
//
// Options of status:
//
//	--json                  JSON instead of a table            REDLOCK_JSON
//
// Options of elect: those of run but --fencing (a leader always has its
// term), and:
//
//	--observe               follow the leader, take no part    REDLOCK_OBSERVE
//	--json                  with --observe, JSON lines         REDLOCK_JSON
//
// Logs go to stderr as log/slog text, or JSON with --log-format json, from
// warnings up by default, and include the lock library's own events (node
// failures, a lost lock). A warning repeated within 10 seconds, such as a
// node down while redlock waits, is logged once. Lock secrets and passwords
// are never logged.
//
// # Exit codes
//
// Exit codes follow flock(1), the shells and sysexits(3):
//
//	N      run: COMMAND ran and exited with N
//	128+N  run: COMMAND was killed by signal N; or signal N stopped redlock
//	       while it waited for the lock
//	0      status, ls, unlock: every node answered
//	1      unlock: not confirmed; any other failure of redlock
//	64     EX_USAGE: bad command line or environment variable
//	69     EX_UNAVAILABLE: run: too many nodes unavailable for a quorum;
//	       status, ls, unlock: a node did not answer
//	70     EX_SOFTWARE: run: the lock was lost while COMMAND ran, and COMMAND
//	       was terminated (--lost-exit-code changes it)
//	75     EX_TEMPFAIL: run: someone else holds the lock, with --no-wait or
//	       when --wait ran out (--conflict-exit-code changes it, as flock -E)
//	78     EX_CONFIG: no nodes given, a bad node URL, an unknown backend, a
//	       node refused access (wrong password, missing ACL permission), or a
//	       node is misconfigured (a Redis Cluster member without
//	       ?cluster=true)
//	126    run: COMMAND cannot be executed
//	127    run: COMMAND not found
//
// Since COMMAND may exit with any of these codes itself, a script that must
// tell "someone else holds the lock" apart for sure can pick an unused code
// with --conflict-exit-code.
package main
