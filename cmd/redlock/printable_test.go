package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"ERR unknown command 'evalsha'", "ERR unknown command 'evalsha'"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"bell\a del\x7f bs\b cr\r lf\n tab\t", `bell\a del\x7f bs\b cr\r lf\n tab\t`},
		{"c1 \u009b31m nel \u0085", `c1 \u009b31m nel \u0085`},
		{"bidi \u202egnp.exe \u2066x\u2069 zw\u200b", `bidi \u202egnp.exe \u2066x\u2069 zw\u200b`},
		{"raw \x9b31m \xff", `raw \x9b31m \xff`},
		{"ünïcödé — 日本 ✓ \\x1b", "ünïcödé — 日本 ✓ \\x1b"},
		{"tag \U000E0041", `tag \U000e0041`},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// TestEscapeJSON checks that JSON from encoding/json and slog's JSON
// handler leaves jsonWriter with no character that does not print, but the
// line feeds between values, and that it decodes to the same text.
func TestEscapeJSON(t *testing.T) {
	t.Parallel()
	const hostile = "a\x1b[31m\a\x7f\u009b31m\u0085\u202e\u2028\U000E0041\x9bz ü"
	var buf bytes.Buffer
	w := jsonWriter{&buf}
	if err := json.NewEncoder(w).Encode(map[string]string{"error": hostile}); err != nil {
		t.Fatal(err)
	}
	slog.New(slog.NewJSONHandler(w, nil)).Warn(hostile, "error", hostile)
	out := buf.String()
	if !isPrintable(string(bytes.ReplaceAll(buf.Bytes(), []byte("\n"), nil))) {
		t.Errorf("JSON through jsonWriter = %q; want only printable characters and line feeds", out)
	}
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("JSON through jsonWriter = %q; want two lines", out)
	}
	// Bytes that are not UTF-8 become U+FFFD in either encoder.
	want := bytes.ToValidUTF8([]byte(hostile), []byte("\uFFFD"))
	for _, line := range lines {
		var v map[string]any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("JSON through jsonWriter %q: %v", line, err)
		}
		if v["error"] != string(want) {
			t.Errorf("JSON through jsonWriter decodes to %q; want %q", v["error"], want)
		}
	}
	if got := string(escapeJSON([]byte(`{"a":"b"}`))); got != `{"a":"b"}` {
		t.Errorf("escapeJSON of plain JSON = %q; want it unchanged", got)
	}
}

func TestUsageErrorPrintable(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	usageError(&buf, "status", errors.New("bad value \"\x1b[2J\u009b\u202e\""))
	if got, want := buf.String(), "redlock: bad value \"\\x1b[2J\\u009b\\u202e\"\nRun \"redlock help status\" for usage.\n"; got != want {
		t.Errorf("usageError wrote %q; want %q", got, want)
	}
}
