package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dlmgo/redlock/dlm"
	"github.com/dlmgo/redlock/dlm/driver"

	// Every backend registers its scheme: redis+goredis://,
	// redis+redigo://, redis+rueidis://, redis+valkey:// and their rediss+
	// forms.
	_ "github.com/dlmgo/redlock/backends/goredis"
	_ "github.com/dlmgo/redlock/backends/redigo"
	_ "github.com/dlmgo/redlock/backends/rueidis"
	_ "github.com/dlmgo/redlock/backends/valkeygo"
)

// errNoNodes is the configuration error of a command given no nodes.
var errNoNodes = errors.New("no nodes: give --nodes URL,... or set REDLOCK_NODES")

// defaultBackend is the backend of a plain redis:// or rediss:// URL, and
// of a bare HOST:PORT, when --backend names none: redlock connects to a
// plain URL as every Redis tool does. (Package dlm refuses such a URL where
// several backends are registered; a program that imports several names
// one per URL, as redlock does here for the user.)
const defaultBackend = "goredis"

// nodeURL returns the URL that dlm.Open gets for an entry of --nodes. A
// bare HOST:PORT becomes a redis:// URL. A plain redis:// or rediss:// URL
// is given backend, the --backend given, or [defaultBackend] when backend
// is "": redis://h:6379 becomes redis+goredis://h:6379. A URL that names
// its backend is left alone.
func nodeURL(entry, backend string) string {
	if backend == "" {
		backend = defaultBackend
	}
	scheme, rest, ok := strings.Cut(entry, "://")
	if !ok {
		scheme, rest = "redis", entry
	}
	switch s := strings.ToLower(scheme); s {
	case "redis", "rediss":
		return s + "+" + backend + "://" + rest
	}
	return entry
}

// secrets are the passwords of the node URLs, to scrub from anything shown.
type secrets []string

// nodeURLs maps the entries of --nodes with [nodeURL] and checks them: each
// must parse. It returns the URLs and their passwords. Its errors name no
// password, and number the entries from 0, as package dlm's errors number the nodes: the
// first entry is "node 0" in every message.
func nodeURLs(entries []string, backend string) ([]string, secrets, error) {
	if len(entries) == 0 {
		return nil, nil, errNoNodes
	}
	urls := make([]string, len(entries))
	var pw secrets
	for i, e := range entries {
		urls[i] = nodeURL(e, backend)
		cfg, err := driver.ParseURL(urls[i])
		if err != nil {
			return nil, nil, fmt.Errorf("node %d: %w", i, err)
		}
		if cfg.Password != "" {
			pw = append(pw, cfg.Password)
		}
	}
	return urls, pw, nil
}

// scrub returns err with every password replaced, for errors that might
// quote a URL. Package dlm already keeps passwords out of its errors; this
// covers what a client library might add.
func (pw secrets) scrub(err error) error {
	for _, p := range pw {
		err = driver.RedactError(err, p)
	}
	return err
}

// redactAll returns what logs show of urls: each one's scheme, user and
// host, without the password, path or parameters, whose values may repeat
// the password (driver.RedactOrigin).
func redactAll(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = driver.RedactOrigin(u)
	}
	return out
}

// openManager opens a manager over the configured nodes with opts, logging
// through log. On failure it logs why and returns the exit code.
func openManager(c *config, log *slog.Logger, opts ...dlm.ManagerOption) (*dlm.Manager, secrets, int) {
	urls, pw, err := nodeURLs(c.nodes, c.backend)
	if err != nil {
		log.Error("redlock: " + err.Error())
		return nil, nil, exitConfig
	}
	opts = append([]dlm.ManagerOption{dlm.WithKeyPrefix(c.keyPrefix), dlm.WithLogger(log)}, opts...)
	if c.nodeTimeout > 0 {
		opts = append(opts, dlm.WithNodeTimeout(c.nodeTimeout))
	}
	m, err := dlm.Open(urls, opts...)
	if err != nil {
		// The options are valid, so Open rejected the nodes: an unknown
		// backend, duplicates, or a node that turned the connection's
		// settings down (a wrong password, a database that does not
		// exist, a TLS certificate that does not verify). The backends do
		// not fail Open for a node they cannot reach.
		log.Error("redlock: cannot open the nodes: check the URLs, passwords and TLS settings", slog.Any("error", pw.scrub(err)))
		return nil, nil, exitConfig
	}
	log.Debug("redlock: nodes", slog.Any("urls", redactAll(urls)))
	return m, pw, exitOK
}
