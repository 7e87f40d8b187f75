package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// checkoutPlaceholder stands for the clone's directory in README.md's "Using
// a checkout" commands.
const checkoutPlaceholder = "REDLOCK"

// checkCheckout builds a program with a clone of the repository as README.md's
// "Using a checkout" section says: rev's tree unpacked in a directory of its
// own, a new module holding the program src (which imports the core and one
// backend), the section's commands with $REDLOCK that directory. It then
// checks what the section promises of go mod tidy: the module requires the
// core and the backends src imports, and a backend that src does not import
// is dropped even when required first, as go get would.
func checkCheckout(ctx context.Context, u *user, repo, rev, src, version string, checkout [][]string, mods []repoModule) error {
	tree := filepath.Join(u.dir, "checkout")
	if err := unpack(ctx, repo, rev, tree); err != nil {
		return err
	}
	prog := filepath.Join(u.dir, "checkout-user")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		return err
	}
	if err := u.run(ctx, prog, "go", "mod", "init", "example.com/checkout"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(prog, "main.go"), []byte(src), 0o644); err != nil {
		return err
	}
	var backends, imported []string
	for _, m := range mods {
		if !strings.HasPrefix(m.Dir, "backends/") {
			continue
		}
		backends = append(backends, m.Path)
		if strings.Contains(src, `"`+m.Path+`"`) {
			imported = append(imported, m.Path)
		}
	}
	if len(imported) == 0 || len(imported) == len(backends) {
		return fmt.Errorf("README.md's Usage snippet imports backends %q of %q; want some, not all", imported, backends)
	}
	// A backend the program does not import, required as go get would:
	// the section's go mod tidy must drop it.
	for _, b := range backends {
		if !contains(imported, b) {
			if err := u.run(ctx, prog, "go", "mod", "edit", "-require", b+"@"+version); err != nil {
				return err
			}
		}
	}
	for _, c := range checkout {
		args := make([]string, len(c))
		for i, a := range c {
			args[i] = os.Expand(a, func(k string) string {
				if k == checkoutPlaceholder {
					return tree
				}
				return "$" + k
			})
		}
		if err := u.run(ctx, prog, args...); err != nil {
			return err
		}
	}
	if err := u.run(ctx, prog, "go", "build", "-o", filepath.Join(u.dir, "checkout-usage"), "."); err != nil {
		return err
	}
	required, err := requirements(ctx, prog)
	if err != nil {
		return err
	}
	for _, b := range backends {
		if want := contains(imported, b); required[b] != want {
			return fmt.Errorf("after README.md's Using a checkout commands, go.mod requires %s: %v; want %v", b, required[b], want)
		}
	}
	return nil
}

// unpack writes rev's tree into dir, as a clone would have it.
func unpack(ctx context.Context, repo, rev, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	archive := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", rev)
	extract := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	extract.Stdin = pipe
	if err := archive.Start(); err != nil {
		return err
	}
	out, xerr := extract.CombinedOutput()
	if err := archive.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v", rev, err)
	}
	if xerr != nil {
		return fmt.Errorf("tar -x: %v\n%s", xerr, out)
	}
	return nil
}

// requirements returns the module paths dir's go.mod requires.
func requirements(ctx context.Context, dir string) (map[string]bool, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go mod edit -json (in %s): %v", dir, err)
	}
	var mod struct{ Require []struct{ Path string } }
	if err := json.Unmarshal(out, &mod); err != nil {
		return nil, fmt.Errorf("go mod edit -json (in %s): %v", dir, err)
	}
	req := map[string]bool{}
	for _, r := range mod.Require {
		req[r.Path] = true
	}
	return req, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
