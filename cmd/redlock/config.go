package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// config is what the command line and the environment say. Each command
// uses its share of it.
type config struct {
	// For every command that talks to the nodes.
	nodes       []string
	backend     string // for plain redis:// and rediss:// URLs; "" for defaultBackend
	keyPrefix   string
	nodeTimeout time.Duration // 0: derived from the TTL by package dlm
	logFormat   string        // "text" or "json"
	logLevel    slog.Level
	quiet       bool

	// For run.
	ttl          time.Duration
	wait         time.Duration // waitForever, or 0 for a single attempt
	grace        time.Duration
	fencing      bool
	fair         bool // wait in the nodes' lines, first come, first served
	shared       bool // a read lock
	limit        int  // a semaphore's limit; 0 for the mutex
	conflictCode int
	lostCode     int
	passNodes    bool   // REDLOCK_NODES is passed on to the command
	owner        string // the holder's label's name (dlm.WithOwner); "" for none

	// For status and ls.
	json bool
	// For ls.
	max int // 0: dlm.DefaultListLimit
	// For unlock.
	force, yes bool
}

// Defaults of the options that package dlm does not define.
const (
	// waitForever is the --wait that sets no limit: the default.
	waitForever time.Duration = -1
	// defaultGrace is the time between SIGTERM and SIGKILL to a command
	// whose lock was lost.
	defaultGrace = 5 * time.Second
	// minTTL is the shortest --ttl: below it, background extensions
	// would follow each other as fast as the nodes answer.
	minTTL = 100 * time.Millisecond
)

// defaultConfig returns the configuration before the environment and the
// command line are read.
func defaultConfig() *config {
	return &config{
		keyPrefix:    dlm.DefaultKeyPrefix,
		logFormat:    "text",
		logLevel:     slog.LevelWarn,
		ttl:          dlm.DefaultTTL,
		wait:         waitForever,
		grace:        defaultGrace,
		conflictCode: defaultConflictCode,
		lostCode:     defaultLostCode,
	}
}

// option is one command-line flag and the environment variable that sets
// it too. Flags win over the environment.
type option struct {
	name  string // the flag, written --name
	env   string // the environment variable
	arg   string // what the value is, for help; "" for a switch
	usage string
	def   string // the default, for help; "" for none worth showing
	value flag.Value
}

// nodeOptions are the options of every command that talks to the nodes.
func nodeOptions(c *config) []option {
	return []option{
		{"nodes", "REDLOCK_NODES", "URL,...", "Redis master URLs or HOST:PORT addresses, comma-separated; a password may hold commas, as written or as %2C; repeatable", "",
			&nodesValue{p: &c.nodes}},
		{"backend", "REDLOCK_BACKEND", "NAME", "client library of the URLs that name none (redis://, rediss://, HOST:PORT): " + strings.Join(dlm.Drivers(), ", "), defaultBackend,
			&choiceValue{p: &c.backend, choices: dlm.Drivers()}},
		{"key-prefix", "REDLOCK_KEY_PREFIX", "PREFIX", "prefix of the Redis keys", dlm.DefaultKeyPrefix,
			&stringValue{p: &c.keyPrefix}},
		{"node-timeout", "REDLOCK_NODE_TIMEOUT", "DURATION", "bound on each request to a node", "a twentieth of the TTL, 20ms to 250ms",
			&durationValue{p: &c.nodeTimeout}},
		{"log-format", "REDLOCK_LOG_FORMAT", "FORMAT", "log format on stderr: text or json", "text",
			&choiceValue{p: &c.logFormat, choices: []string{"text", "json"}}},
		{"log-level", "REDLOCK_LOG_LEVEL", "LEVEL", "least level logged: debug, info, warn or error", "warn",
			&levelValue{p: &c.logLevel}},
		{"quiet", "REDLOCK_QUIET", "", "log errors only, and show no waiting line", "",
			&boolValue{p: &c.quiet}},
	}
}

// runOptions are the options of run: its own, then those of every command.
func runOptions(c *config) []option {
	return append([]option{
		{"ttl", "REDLOCK_TTL", "DURATION", "time to live of the lock on the nodes, renewed while COMMAND runs", dlm.DefaultTTL.String(),
			&durationValue{p: &c.ttl, min: minTTL}},
		{"wait", "REDLOCK_WAIT", "DURATION", "give up waiting for the lock after DURATION; 0 makes one attempt; forever never gives up", "forever",
			&waitValue{p: &c.wait}},
		{"no-wait", "REDLOCK_NO_WAIT", "", "make one attempt, do not wait (as --wait 0)", "",
			&noWaitValue{p: &c.wait}},
		{"grace", "REDLOCK_GRACE", "DURATION", "after losing the lock, time between SIGTERM and SIGKILL to COMMAND", defaultGrace.String(),
			&durationValue{p: &c.grace}},
		{"fencing", "REDLOCK_FENCING", "", "take a fencing token and pass it to COMMAND as REDLOCK_FENCE", "",
			&boolValue{p: &c.fencing}},
		{"fair", "REDLOCK_FAIR", "", "wait first come, first served across processes; every client of the lock must use it", "",
			&boolValue{p: &c.fair}},
		{"shared", "REDLOCK_SHARED", "", "take a read lock, shared with other readers; the lock without it is the write lock", "",
			&boolValue{p: &c.shared}},
		{"limit", "REDLOCK_LIMIT", "N", "take one of N permits of a semaphore named KEY; every holder must give the same N", "",
			&limitValue{p: &c.limit}},
		{"conflict-exit-code", "REDLOCK_CONFLICT_EXIT_CODE", "CODE", "exit code when someone else holds the lock", fmt.Sprint(defaultConflictCode),
			&codeValue{p: &c.conflictCode}},
		{"lost-exit-code", "REDLOCK_LOST_EXIT_CODE", "CODE", "exit code when the lock was lost while COMMAND ran", fmt.Sprint(defaultLostCode),
			&codeValue{p: &c.lostCode}},
		{"pass-nodes", "REDLOCK_PASS_NODES", "", "pass REDLOCK_NODES, with its passwords, on to COMMAND, which does not get it otherwise", "",
			&boolValue{p: &c.passNodes}},
		{"owner", "REDLOCK_OWNER", "NAME", "label the lock with this host, the process id and NAME, which status and ls show (not with --shared or --limit)", "",
			&stringValue{p: &c.owner}},
	}, nodeOptions(c)...)
}

// statusOptions are the options of status: its own, then those of every
// command.
func statusOptions(c *config) []option {
	return append([]option{
		{"json", "REDLOCK_JSON", "", "print JSON instead of a table", "",
			&boolValue{p: &c.json}},
	}, nodeOptions(c)...)
}

// lsOptions are the options of ls: its own, then those of every command.
func lsOptions(c *config) []option {
	return append([]option{
		{"json", "REDLOCK_JSON", "", "print JSON instead of a table", "",
			&boolValue{p: &c.json}},
		{"max", "REDLOCK_MAX", "N", "list at most N locks", fmt.Sprint(dlm.DefaultListLimit),
			&maxValue{p: &c.max}},
	}, nodeOptions(c)...)
}

// unlockOptions are the options of unlock: its own, then those of every
// command.
func unlockOptions(c *config) []option {
	return append([]option{
		{"force", "REDLOCK_FORCE", "", "break the lock, whoever holds it (required)", "",
			&boolValue{p: &c.force}},
		{"yes", "REDLOCK_YES", "", "do not ask for confirmation", "",
			&boolValue{p: &c.yes}},
		{"json", "REDLOCK_JSON", "", "print the lock's status as JSON instead of a table", "",
			&boolValue{p: &c.json}},
	}, nodeOptions(c)...)
}

// errHelp is returned by parse when -h or --help was given.
var errHelp = flag.ErrHelp

// parse reads opts from the environment through getenv, then from args,
// and returns the npos positional arguments and whatever follows them. Flags
// may come before the positional arguments and right after them, up to "--"
// or the first argument that is not a flag: "redlock status KEY --json",
// "redlock run --ttl 30s KEY --no-wait -- make".
func parse(cmd string, opts []option, args []string, npos int, getenv func(string) string) (pos, rest []string, err error) {
	if err := applyEnv(opts, getenv); err != nil {
		return nil, nil, err
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, o := range opts {
		fs.Var(o.value, o.name, o.usage)
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, errHelp
			}
			return nil, nil, dashes(err)
		}
		rest = fs.Args()
		n := len(args) - len(rest)
		if n > 0 && args[n-1] == "--" {
			// Everything after "--" is an argument.
			take := min(npos-len(pos), len(rest))
			pos, rest = append(pos, rest[:take]...), rest[take:]
			break
		}
		if len(rest) == 0 || len(pos) == npos {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
		if len(pos) == npos && (len(args) == 0 || !strings.HasPrefix(args[0], "-") || args[0] == "-") {
			rest = args
			break
		}
	}
	for _, pair := range [][]string{{"wait", "no-wait"}, {"shared", "limit"}, {"shared", "fencing"}, {"limit", "fencing"}, {"shared", "fair"}, {"limit", "fair"}, {"shared", "owner"}, {"limit", "owner"}} {
		if err := exclusive(fs, pair...); err != nil {
			return nil, nil, err
		}
	}
	return pos, rest, nil
}

// applyEnv sets each option whose environment variable is set and not
// empty.
func applyEnv(opts []option, getenv func(string) string) error {
	set := make(map[string]bool)
	for _, o := range opts {
		v := getenv(o.env)
		if v == "" {
			continue
		}
		if err := o.value.Set(v); err != nil {
			if _, ok := o.value.(*nodesValue); ok {
				// The value may hold passwords.
				return fmt.Errorf("%s: %v", o.env, err)
			}
			return fmt.Errorf("%s=%q: %v", o.env, v, err)
		}
		set[o.name] = true
		if n, ok := o.value.(*nodesValue); ok {
			// The first --nodes replaces what the environment says.
			n.fromEnv = true
		}
	}
	if noWait, _ := parseBool(getenv("REDLOCK_NO_WAIT")); noWait && set["wait"] {
		return errors.New("REDLOCK_WAIT and REDLOCK_NO_WAIT are both set: set one of them")
	}
	return nil
}

// exclusive returns an error if the command line set more than one of the
// flags named.
func exclusive(fs *flag.FlagSet, names ...string) error {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		for _, n := range names {
			if f.Name == n {
				set = append(set, "--"+n)
			}
		}
	})
	if len(set) > 1 {
		return fmt.Errorf("%s: give only one of them", strings.Join(set, " and "))
	}
	return nil
}

// dashes rewrites the flag package's errors, which write flags with one
// dash, as redlock's help writes them: with two.
func dashes(err error) error {
	msg := err.Error()
	for _, s := range []string{"for flag -", "for -", "not defined: -", "needs an argument: -"} {
		if i := strings.Index(msg, s); i >= 0 && !strings.HasPrefix(msg[i+len(s):], "-") {
			msg = msg[:i+len(s)] + "-" + msg[i+len(s):]
		}
	}
	return errors.New(msg)
}

// checkKey returns an error for a key package dlm would reject.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("KEY is empty")
	case len(key) > dlm.MaxKeyLen:
		return fmt.Errorf("KEY is %d bytes long: at most %d allowed", len(key), dlm.MaxKeyLen)
	}
	return nil
}
