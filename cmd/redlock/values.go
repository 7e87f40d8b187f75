package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dlmgo/redlock/dlm"
)

// The flag.Value types behind redlock's options. Each Set is used for the
// environment variable and for the flag alike, so both accept the same
// values and fail with the same message.

// parseDuration reads a Go duration ("500ms", "1m30s") or, as flock(1)
// takes it, a number of seconds ("10", "2.5").
func parseDuration(s string) (time.Duration, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a number of seconds or a value such as 500ms, 10s or 1m30s", s)
	}
	return d, nil
}

// durationValue is a duration of at least min (and never negative).
type durationValue struct {
	p   *time.Duration
	min time.Duration
}

func (v *durationValue) Set(s string) error {
	d, err := parseDuration(s)
	switch {
	case err != nil:
		return err
	case d < 0:
		return fmt.Errorf("%s is negative", d)
	case d < v.min:
		return fmt.Errorf("%s is too short: want at least %s", d, v.min)
	}
	*v.p = d
	return nil
}

func (v *durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

// waitValue is a duration, or "forever" for no limit.
type waitValue struct{ p *time.Duration }

func (v *waitValue) Set(s string) error {
	if strings.EqualFold(s, "forever") {
		*v.p = waitForever
		return nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("%w, or forever", err)
	}
	if d < 0 {
		return fmt.Errorf("%s is negative", d)
	}
	*v.p = d
	return nil
}

func (v *waitValue) String() string {
	if v.p == nil || *v.p == waitForever {
		return "forever"
	}
	return v.p.String()
}

// noWaitValue is the --no-wait switch: it sets the wait of --wait to zero.
type noWaitValue struct{ p *time.Duration }

func (v *noWaitValue) Set(s string) error {
	b, err := parseBool(s)
	if err != nil {
		return err
	}
	switch {
	case b:
		*v.p = 0
	case *v.p == 0:
		*v.p = waitForever
	}
	return nil
}

func (v *noWaitValue) String() string   { return strconv.FormatBool(v.p != nil && *v.p == 0) }
func (v *noWaitValue) IsBoolFlag() bool { return true }

// boolValue is a switch: --quiet, --quiet=false, REDLOCK_QUIET=1.
type boolValue struct{ p *bool }

func (v *boolValue) Set(s string) error {
	b, err := parseBool(s)
	if err != nil {
		return err
	}
	*v.p = b
	return nil
}

func (v *boolValue) String() string   { return strconv.FormatBool(v.p != nil && *v.p) }
func (v *boolValue) IsBoolFlag() bool { return true }

// parseBool accepts what strconv.ParseBool does, and yes and no.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "yes", "y", "on":
		return true, nil
	case "no", "n", "off":
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean: want true or false", s)
	}
	return b, nil
}

// codeValue is an exit code, 0 to 255.
type codeValue struct{ p *int }

func (v *codeValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 255 {
		return fmt.Errorf("%q is not an exit code: want a number from 0 to 255", s)
	}
	*v.p = n
	return nil
}

func (v *codeValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}

// limitValue is a semaphore's limit, 1 to dlm.MaxPermits.
type limitValue struct{ p *int }

func (v *limitValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > dlm.MaxPermits {
		return fmt.Errorf("%q is not a limit: want a number of permits from 1 to %d", s, dlm.MaxPermits)
	}
	*v.p = n
	return nil
}

func (v *limitValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}

// choiceValue is one of a fixed set of words.
type choiceValue struct {
	p       *string
	choices []string
}

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("%q: want one of %s", s, strings.Join(v.choices, ", "))
	}
	*v.p = s
	return nil
}

func (v *choiceValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// stringValue is any string.
type stringValue struct{ p *string }

func (v *stringValue) Set(s string) error { *v.p = s; return nil }

func (v *stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

// levelValue is a log level: debug, info, warn or error, in any case.
type levelValue struct{ p *slog.Level }

func (v *levelValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "warning", "error":
	default:
		return fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	if strings.EqualFold(s, "warning") {
		s = "warn"
	}
	return v.p.UnmarshalText([]byte(s))
}

func (v *levelValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.ToLower(v.p.String())
}

// nodesValue is a list of node URLs, comma-separated ([splitNodes]). Each
// --nodes adds to the list, except that the first replaces the list from
// REDLOCK_NODES.
type nodesValue struct {
	p       *[]string
	fromEnv bool // the list came from the environment
}

func (v *nodesValue) Set(s string) error {
	if v.fromEnv {
		*v.p, v.fromEnv = nil, false
	}
	added := splitNodes(s)
	if len(added) == 0 {
		return errors.New("no node URL")
	}
	*v.p = append(*v.p, added...)
	return nil
}

func (v *nodesValue) String() string {
	if v.p == nil {
		return ""
	}
	// Shown only in help, where the list is empty: never a password.
	return strings.Join(redactAll(*v.p), ",")
}

// schemeAhead matches what starts a URL: a scheme and "://", after spaces.
var schemeAhead = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9+.-]*://`)

// splitNodes splits a list of node URLs and addresses at its commas, but
// for those in user information, so that a password may hold a comma as
// written (or as %2C). A comma followed by a URL scheme, as in
// ",rediss://", always separates two entries. Between two such commas, as
// in a URL, the user information ends at the last '@': a comma before it
// is the password's, and those after it separate bare HOST:PORT entries.
// Blank entries are dropped.
func splitNodes(s string) []string {
	var out []string
	for len(s) > 0 {
		// The stretch up to the next comma that a scheme follows.
		end := len(s)
		for i := strings.IndexByte(s, ','); i >= 0; {
			if schemeAhead.MatchString(s[i+1:]) {
				end = i
				break
			}
			j := strings.IndexByte(s[i+1:], ',')
			if j < 0 {
				break
			}
			i += 1 + j
		}
		stretch := s[:end]
		s = strings.TrimPrefix(s[end:], ",")
		userinfo := strings.LastIndexByte(stretch, '@') + 1
		entries := strings.Split(stretch[userinfo:], ",")
		entries[0] = stretch[:userinfo] + entries[0]
		for _, e := range entries {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// maxValue is ls's --max: how many locks to list at most.
type maxValue struct{ p *int }

func (v *maxValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > dlm.MaxListLimit {
		return fmt.Errorf("%q is not a number of locks: want 1 to %d", s, dlm.MaxListLimit)
	}
	*v.p = n
	return nil
}

func (v *maxValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}
