package main

import (
	"bufio"
	"fmt"
	"strings"
)

// readme is what the check takes from README.md.
type readme struct {
	// Get are the Installation section's commands, "go get" each.
	Get [][]string
	// Modules are the module paths of the Installation section's table.
	Modules []string
	// Install are the Command-line tool section's "go install" commands.
	Install [][]string
	// Usage is the Usage section's first Go snippet.
	Usage string
	// Checkout are the "Using a checkout" section's commands, in which
	// $REDLOCK stands for the clone's directory.
	Checkout [][]string
}

// parseReadme reads the sections of README.md that a new user follows.
func parseReadme(text string) (*readme, error) {
	sections := splitSections(text)
	r := &readme{}
	inst, ok := sections["Installation"]
	if !ok {
		return nil, fmt.Errorf("README.md: no Installation section")
	}
	for _, block := range codeBlocks(inst, "sh") {
		for _, line := range commandLines(block) {
			if len(line) < 2 || line[0] != "go" || line[1] != "get" {
				return nil, fmt.Errorf("README.md, Installation: %q is not a go get command", strings.Join(line, " "))
			}
			r.Get = append(r.Get, line)
		}
	}
	for _, line := range strings.Split(inst, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		p, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
		if strings.Contains(p, ".") && strings.Contains(p, "/") {
			r.Modules = append(r.Modules, p)
		}
	}
	if len(r.Get) == 0 || len(r.Modules) == 0 {
		return nil, fmt.Errorf("README.md, Installation: want go get commands and a table of modules, found %d and %d", len(r.Get), len(r.Modules))
	}
	for _, block := range codeBlocks(sections["Command-line tool"], "sh") {
		for _, line := range commandLines(block) {
			if len(line) >= 2 && line[0] == "go" && line[1] == "install" {
				r.Install = append(r.Install, line)
			}
		}
	}
	if len(r.Install) == 0 {
		return nil, fmt.Errorf("README.md, Command-line tool: no go install command")
	}
	for _, block := range codeBlocks(sections["Using a checkout"], "sh") {
		for _, line := range commandLines(block) {
			if len(line) < 2 || line[0] != "go" || line[1] != "mod" {
				return nil, fmt.Errorf("README.md, Using a checkout: %q is not a go mod command", strings.Join(line, " "))
			}
			r.Checkout = append(r.Checkout, line)
		}
	}
	if len(r.Checkout) == 0 {
		return nil, fmt.Errorf("README.md, Using a checkout: no go mod command")
	}
	usage := codeBlocks(sections["Usage"], "go")
	if len(usage) == 0 {
		return nil, fmt.Errorf("README.md: no Go snippet in the Usage section")
	}
	r.Usage = usage[0]
	return r, nil
}

// splitSections maps each "## " heading of a Markdown text to the text
// under it, up to the next such heading.
func splitSections(text string) map[string]string {
	sections := map[string]string{}
	var name string
	var b strings.Builder
	flush := func() {
		if name != "" {
			sections[name] = b.String()
		}
		b.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			name = strings.TrimSpace(h)
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return sections
}

// codeBlocks returns the contents of the fenced code blocks of text whose
// info string is lang.
func codeBlocks(text, lang string) []string {
	var blocks []string
	var b strings.Builder
	in, want := false, false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, want = true, strings.TrimSpace(strings.TrimPrefix(line, "```")) == lang
			b.Reset()
		case in && strings.TrimSpace(line) == "```":
			in = false
			if want {
				blocks = append(blocks, b.String())
			}
		case in:
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return blocks
}

// commandLines splits a shell snippet into commands, one a line, without
// comments and blank lines.
func commandLines(block string) [][]string {
	var cmds [][]string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 0 {
			cmds = append(cmds, f)
		}
	}
	return cmds
}

// usageProgram makes a program of a README snippet: its import declaration
// stays at the top, the rest becomes the body of a function with a ctx in
// scope that returns an error, as the snippet expects.
func usageProgram(snippet string) (string, error) {
	imports, body := splitImports(snippet)
	if imports == "" {
		return "", fmt.Errorf("README.md, Usage: the snippet has no import declaration")
	}
	var b strings.Builder
	b.WriteString("// Code made from README.md's Usage section by internal/release.\n\npackage main\n\n")
	b.WriteString(imports)
	for _, std := range []string{"context", "time"} {
		if !strings.Contains(imports, `"`+std+`"`) {
			fmt.Fprintf(&b, "\nimport %q\n", std)
		}
	}
	b.WriteString("\nvar _ = time.Second\n\n")
	b.WriteString("// run is the README's snippet.\nfunc run(ctx context.Context) error {\n")
	b.WriteString(body)
	b.WriteString("\treturn nil\n}\n\nfunc main() { _ = run }\n")
	return b.String(), nil
}

// splitImports separates a snippet's leading import declaration from the
// statements after it.
func splitImports(snippet string) (imports, body string) {
	lines := strings.Split(snippet, "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || !strings.HasPrefix(lines[i], "import") {
		return "", snippet
	}
	end := i
	if strings.HasSuffix(strings.TrimSpace(lines[i]), "(") {
		for end < len(lines) && strings.TrimSpace(lines[end]) != ")" {
			end++
		}
	}
	if end == len(lines) {
		return "", snippet
	}
	return strings.Join(lines[i:end+1], "\n") + "\n", strings.Join(lines[end+1:], "\n")
}
