package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

const sampleReadme = "# x\n\n## Installation\n\n```sh\ngo get example.com/m\ngo get example.com/m/b   # or example.com/m/c\n```\n\n" +
	"| module | requires |\n|---|---|\n| `example.com/m` (`m`) | nothing |\n| `example.com/m/c` | c |\n\n" +
	"## Using a checkout\n\n```sh\ngo mod edit -replace example.com/m=$REDLOCK   # the core\ngo mod tidy\n```\n\n" +
	"## Usage\n\n```go\nimport (\n\t\"example.com/m\"\n)\n\nm.Do(ctx)\n```\n\n```go\nother()\n```\n\n" +
	"## Command-line tool\n\n```sh\ngo install example.com/m/cmd/x@latest\nx run\n```\n"

func TestParseReadme(t *testing.T) {
	r, err := parseReadme(sampleReadme)
	if err != nil {
		t.Fatal(err)
	}
	want := &readme{
		Get:     [][]string{{"go", "get", "example.com/m"}, {"go", "get", "example.com/m/b"}},
		Modules: []string{"example.com/m", "example.com/m/c"},
		Install: [][]string{{"go", "install", "example.com/m/cmd/x@latest"}},
		Usage:   "import (\n\t\"example.com/m\"\n)\n\nm.Do(ctx)\n",
		Checkout: [][]string{
			{"go", "mod", "edit", "-replace", "example.com/m=$REDLOCK"},
			{"go", "mod", "tidy"},
		},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("parseReadme = %#v; want %#v", r, want)
	}
}

func TestParseReadmeMissing(t *testing.T) {
	for _, cut := range []string{"## Installation", "## Using a checkout", "## Usage", "## Command-line tool"} {
		text := strings.Replace(sampleReadme, cut, "## Elsewhere", 1)
		if _, err := parseReadme(text); err == nil {
			t.Errorf("parseReadme without %q: no error", cut)
		}
	}
}

// TestRepositoryReadme parses the repository's README.md as make
// release-check does: it must keep its install commands and Usage snippet
// where the check finds them.
func TestRepositoryReadme(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReadme(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Modules) < 2 || !strings.Contains(r.Usage, "dlm.Open") {
		t.Errorf("README.md: modules %q, usage snippet %q", r.Modules, r.Usage)
	}
}

// TestRepositoryReadmeCheckout checks that README.md says how to build with
// a clone of the repository: a replace directive for the core and for each
// backend, then go mod tidy. make release-check runs these commands.
func TestRepositoryReadmeCheckout(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseReadme(string(data))
	if err != nil {
		t.Fatal(err)
	}
	replaced := map[string]bool{}
	for _, c := range r.Checkout {
		for i, a := range c {
			if a == "-replace" && i+1 < len(c) {
				old, dir, _ := strings.Cut(c[i+1], "=")
				if want := "$REDLOCK" + strings.TrimPrefix(old, "github.com/dlmgo/redlock"); dir != want {
					t.Errorf("README.md replaces %s by %s; want %s", old, dir, want)
				}
				replaced[old] = true
			}
		}
	}
	for _, p := range []string{"github.com/dlmgo/redlock", "github.com/dlmgo/redlock/backends/goredis", "github.com/dlmgo/redlock/backends/redigo", "github.com/dlmgo/redlock/backends/rueidis", "github.com/dlmgo/redlock/backends/valkeygo"} {
		if !replaced[p] {
			t.Errorf("README.md, Using a checkout: no replace of %s", p)
		}
	}
	if last := r.Checkout[len(r.Checkout)-1]; strings.Join(last, " ") != "go mod tidy" {
		t.Errorf("README.md, Using a checkout: last command %q; want go mod tidy", last)
	}
}

func TestUsageProgram(t *testing.T) {
	src, err := usageProgram("import (\n\t\"time\"\n\t\"example.com/m\"\n)\n\nm.Do(ctx, time.Second)\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package main\n", "import (\n\t\"time\"\n\t\"example.com/m\"\n)\n", "\nimport \"context\"\n", "func run(ctx context.Context) error {\n\nm.Do(ctx, time.Second)\n\treturn nil\n}"} {
		if !strings.Contains(src, want) {
			t.Errorf("usageProgram: %q not in\n%s", want, src)
		}
	}
	if strings.Contains(src, "import \"time\"") {
		t.Errorf("usageProgram imports time twice:\n%s", src)
	}
	if _, err := usageProgram("m.Do(ctx)\n"); err == nil {
		t.Error("usageProgram without imports: no error")
	}
}
