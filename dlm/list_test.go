package dlm

import (
	"strings"
	"testing"
)

// TestParseListReply checks that a reply of the list script is read with
// bounds: every malformed reply is an error, never a panic, and a key
// outside the prefix is refused rather than listed.
func TestParseListReply(t *testing.T) {
	t.Parallel()
	good := []any{"0", "p:{k}", int64(1), int64(900), int64(7), int64(2), int64(0)}
	if next, es, err := parseListReply(good, "n", "p:"); err != nil || next != "0" || len(es) != 1 ||
		es[0].key != "k" || !es[0].st.Held || es[0].st.Counter != 7 || es[0].waiters != 2 || es[0].st.TTL.Milliseconds() != 900 {
		t.Errorf("parseListReply(good) = %q, %+v, %v; want key k held, counter 7, 2 waiters, TTL 900ms", next, es, err)
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
		{"key outside the prefix", []any{"0", "q:{k}", int64(1), int64(1), int64(0), int64(0), int64(0)}},
		{"key without braces", []any{"0", "p:k", int64(1), int64(1), int64(0), int64(0), int64(0)}},
		{"key the prefix alone", []any{"0", "p:{", int64(1), int64(1), int64(0), int64(0), int64(0)}},
		{"key not a string", []any{"0", int64(3), int64(1), int64(1), int64(0), int64(0), int64(0)}},
		{"field not an integer", []any{"0", "p:{k}", "1", int64(1), int64(0), int64(0), int64(0)}},
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
