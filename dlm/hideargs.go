package dlm

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/dlmgo/redlock/dlm/driver"
	"github.com/dlmgo/redlock/dlm/internal/round"
)

// A node's failure is untrusted text that ends up in errors, events, logs
// and traces, and a node may quote the request back in it: Redis answers a
// command renamed away ("rename-command EVALSHA ''") with "ERR unknown
// command 'evalsha', with args beginning with: '<sha>' '1' 'redlock:{k}'
// '<SECRET>' ...". Whoever read the secret could resume the lock and
// release it under its holder. So a node's call removes the request's
// arguments from its failure before anything else sees it, whatever the
// adapter: hideArgs below, the outermost decorator of every node's call
// (node.go).

// argsEcho starts Redis' quotation of a refused command's first arguments
// (6.x quotes them with backticks, 7.x with single quotes, each cut at 128
// bytes in all: an argument may show only in part).
const argsEcho = "with args beginning with:"

// argsHidden stands in a node's text for what was removed.
const argsHidden = "[redacted]"

// minHiddenArg is the length from which an argument is removed wherever it
// shows in a node's text. The secrets and waiter ids are 22 bytes; what is
// shorter is a script's flag, or a short leader value, which Observe shows
// to anyone anyway; and removing "q" from every word would garble the text.
const minHiddenArg = 8

// hideArgs runs next, the call of a node whose arguments for a request are
// those args returns, and removes those arguments from its failure (see
// [argHider]) so that no secret, waiter id or leader value reaches a
// [NodeError].
func hideArgs(args func(*round.Request) []string, next round.Call) round.Call {
	return func(ctx context.Context, req *round.Request) (any, error) {
		v, err := next(ctx, req)
		if err != nil {
			err = newArgHider(req.Args, req.Quiet, args(req)).hide(err)
		}
		return v, err
	}
}

// argHider removes a request's arguments from a node's failure: the echo
// of Redis' "with args beginning with:" whole, to the end of its line; and
// every argument that is not a number (the scripts' TTLs, windows, limits
// and fencing counters are not secret) and has at least minHiddenArg bytes
// wherever it shows, as does each ':'-separated part of one (a leader's
// value may hold ':'; an election's secret and value are arguments of
// their own). A hostile node can return any text: nothing is assumed of
// where it puts them.
type argHider struct {
	hidden []string // longest first, so that no shorter one splits it
}

// newArgHider returns the hider of the arguments in lists.
func newArgHider(lists ...[]string) argHider {
	var h argHider
	add := func(s string) {
		if len(s) < minHiddenArg || slices.Contains(h.hidden, s) {
			return
		}
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return
		}
		h.hidden = append(h.hidden, s)
	}
	for _, args := range lists {
		for _, a := range args {
			add(a)
			if strings.Contains(a, ":") {
				for _, p := range strings.Split(a, ":") {
					add(p)
				}
			}
		}
	}
	slices.SortFunc(h.hidden, func(a, b string) int { return len(b) - len(a) })
	return h
}

// text returns s without the arguments.
func (h argHider) text(s string) string {
	if i := strings.Index(s, argsEcho); i >= 0 {
		rest := ""
		if end := strings.IndexAny(s[i:], "\r\n"); end >= 0 {
			rest = s[i+end:]
		}
		s = s[:i] + argsEcho + " " + argsHidden + rest
	}
	for _, a := range h.hidden {
		s = strings.ReplaceAll(s, a, argsHidden)
	}
	return s
}

// shows reports whether an argument shows in the text of err or of an
// error it wraps.
func (h argHider) shows(err error) bool {
	if s := err.Error(); h.text(s) != s {
		return true
	}
	for _, w := range unwrapped(err) {
		if w != nil && h.shows(w) {
			return true
		}
	}
	return false
}

// hide returns err without the arguments: err itself when none shows in it
// or in what it wraps, or else an error whose text is err's without them,
// and which wraps, of the errors under err, those that show none (a
// context's error, a *net.OpError, ...), so that errors.Is and errors.As
// still find them. An error that shows an argument is not kept, not even
// in an unexported field: errors.As, Unwrap or reflection cannot reach its
// text. The errors of this package's own decorators and driver.PanicError
// are rebuilt around their hidden parts, keeping their type.
func (h argHider) hide(err error) error {
	if !h.shows(err) {
		return err
	}
	if e := h.rebuild(err); e != nil {
		return e
	}
	return &hiddenArgsError{msg: h.text(err.Error()), errs: h.clean(err)}
}

// rebuild returns err, which shows an argument, rebuilt without it when it
// is of a type whose identity matters to the callers, or nil.
func (h argHider) rebuild(err error) error {
	switch e := err.(type) {
	case *redirectError:
		return &redirectError{h.hide(e.err)}
	case *driver.PanicError:
		// The stack holds no strings' contents: Go prints their
		// addresses only.
		return &driver.PanicError{Client: h.text(e.Client), Value: h.text(e.Value), Stack: e.Stack}
	}
	return nil
}

// clean returns the errors under err that show no argument, and those that
// do rebuilt without it, as rebuild may.
func (h argHider) clean(err error) []error {
	var out []error
	for _, w := range unwrapped(err) {
		switch {
		case w == nil:
		case !h.shows(w):
			out = append(out, w)
		default:
			if e := h.rebuild(w); e != nil {
				out = append(out, e)
			} else {
				out = append(out, h.clean(w)...)
			}
		}
	}
	return out
}

// unwrapped returns the errors err wraps.
func unwrapped(err error) []error {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	}
	return nil
}

// hiddenArgsError is a node's failure whose text showed a request's
// arguments: its text without them, and the errors it wrapped that showed
// none.
type hiddenArgsError struct {
	msg  string
	errs []error
}

func (e *hiddenArgsError) Error() string { return e.msg }

// Unwrap returns the wrapped errors that showed no argument.
func (e *hiddenArgsError) Unwrap() []error { return e.errs }
