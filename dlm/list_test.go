package dlm

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestParseListReply checks that a reply of the list script is read with
// bounds: every malformed reply is an error, never a panic, and a key
// outside the prefix is refused rather than listed.
func TestParseListReply(t *testing.T) {
	t.Parallel()
	good := []any{"0", "p:{k}", int64(1), int64(900), int64(7), int64(2), int64(0), int64(1700000000000), "h 42 job"}
	if next, es, err := parseListReply(good, "n", "p:"); err != nil || next != "0" || len(es) != 1 ||
		es[0].key != "k" || !es[0].st.Held || es[0].st.Counter != 7 || es[0].waiters != 2 || es[0].st.TTL.Milliseconds() != 900 ||
		es[0].st.Owner != (Owner{Host: "h", PID: 42, Name: "job"}) || es[0].st.Since.UnixMilli() != 1700000000000 {
		t.Errorf("parseListReply(good) = %q, %+v, %v; want key k held, counter 7, 2 waiters, TTL 900ms, owner job (h, pid 42)", next, es, err)
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"not an array", "x"},
		{"empty", []any{}},
		{"cursor not a string", []any{int64(0)}},
		{"cursor not a number", []any{"12a"}},
		{"cursor too long", []any{strings.Repeat("9", 21)}},
		{"empty cursor", []any{""}},
		{"short entry", []any{"0", "p:{k}", int64(1)}},
		{"label not a string", []any{"0", "p:{k}", int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), int64(5)}},
		{"key outside the prefix", []any{"0", "q:{k}", int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), ""}},
		{"key without braces", []any{"0", "p:k", int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), ""}},
		{"key the prefix alone", []any{"0", "p:{", int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), ""}},
		{"key not a string", []any{"0", int64(3), int64(1), int64(1), int64(0), int64(0), int64(0), int64(0), ""}},
		{"field not an integer", []any{"0", "p:{k}", "1", int64(1), int64(0), int64(0), int64(0), int64(0), ""}},
	} {
		if _, es, err := parseListReply(tc.v, "n", "p:"); err == nil {
			t.Errorf("parseListReply(%s) = %+v, nil; want an error", tc.name, es)
		}
	}
}

// TestGlobEscape checks that a key prefix is matched literally by SCAN.
func TestGlobEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"redlock:": "redlock:", `a*b?[c]\`: `a\*b\?\[c\]\\`, "\xff*": "\xff\\*"} {
		if got := globEscape(in); got != want {
			t.Errorf("globEscape(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestParseOwner checks that a label a node returns is split with bounds,
// and that anything else names no owner.
func TestParseOwner(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Owner{
		"web-3 4711 billing cron":         {Host: "web-3", PID: 4711, Name: "billing cron"},
		"":                                {},
		"web-3":                           {},
		"web-3 x name":                    {},
		"web-3 -1 name":                   {},
		"web-3 12":                        {},
		" 12 name":                        {},
		"web-3 99999999999999999999 name": {},
	} {
		if got := parseOwner(in); got != want {
			t.Errorf("parseOwner(%q) = %+v; want %+v", in, got, want)
		}
	}
}

// TestOwnerLabel checks WithOwner's validation of the name.
func TestOwnerLabel(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", strings.Repeat("x", MaxOwnerName+1), "a\x1bb", "a\nb", "\u202e", "\xff"} {
		if _, err := ownerLabel(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ownerLabel(%q) = %v; want ErrInvalid", bad, err)
		}
	}
	label, err := ownerLabel("billing cron")
	if o := parseOwner(label); err != nil || o.Name != "billing cron" || o.PID != os.Getpid() || o.Host == "" {
		t.Errorf("ownerLabel(billing cron) = %q, %v; parsed %+v", label, err, o)
	}
}
