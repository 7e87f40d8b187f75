package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHelpFitsTheTerminal(t *testing.T) {
	t.Parallel()
	for _, topic := range []string{"", "run", "status", "version"} {
		var b bytes.Buffer
		if !writeHelp(&b, topic) {
			t.Fatalf("writeHelp(%q) = false; want true", topic)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("help %q: line of %d columns: %q", topic, n, line)
			}
		}
	}
	if writeHelp(&bytes.Buffer{}, "lock") {
		t.Errorf("writeHelp(%q) = true; want false", "lock")
	}
}

// TestEveryOptionDocumented checks that the help, the package
// documentation and docs/cli.md name every flag and environment variable.
func TestEveryOptionDocumented(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	for _, path := range []string{"doc.go", "../../docs/cli.md"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		docs[path] = string(b)
	}
	c := defaultConfig()
	for cmd, opts := range map[string][]option{"run": runOptions(c), "status": statusOptions(c)} {
		var help bytes.Buffer
		writeHelp(&help, cmd)
		docs["redlock help "+cmd] = help.String()
		for _, o := range opts {
			for where, text := range docs {
				if where == "redlock help status" && cmd == "run" || where == "redlock help run" && cmd == "status" {
					continue
				}
				if !strings.Contains(text, "--"+o.name) || !strings.Contains(text, o.env) {
					t.Errorf("%s does not name --%s and %s", where, o.name, o.env)
				}
			}
		}
	}
	for _, code := range []string{"64", "69", "70", "75", "78", "126", "127", "128+N"} {
		for _, where := range []string{"doc.go", "../../docs/cli.md", "redlock help run"} {
			if !strings.Contains(docs[where], code) {
				t.Errorf("%s does not document exit code %s", where, code)
			}
		}
	}
}

func TestWrap(t *testing.T) {
	t.Parallel()
	got := wrap("one two three four five", 2, 12)
	want := "  one two\n  three four\n  five\n"
	if got != want {
		t.Errorf("wrap = %q; want %q", got, want)
	}
}
