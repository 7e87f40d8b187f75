package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	repo := flag.String("repo", "../..", "the repository's root")
	ref := flag.String("ref", "HEAD", "the commit or tag to check; HEAD includes uncommitted changes to tracked files")
	keep := flag.Bool("keep", false, "keep the temporary directory (proxy, module cache, user module) for inspection")
	// The limit only keeps a hung step from holding make test for ever: the
	// check builds every module from an empty module cache at the lowest
	// CPU priority, beside the test binaries' build, which on a busy 2-core
	// machine took more than 15 minutes.
	timeout := flag.Duration("timeout", time.Hour, "the whole check's time limit (a hang guard)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, os.Stdout, *repo, *ref, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "release check:", err)
		os.Exit(1)
	}
}

// run is the whole check; see the package documentation.
func run(ctx context.Context, out io.Writer, repoDir, ref string, keep bool) (err error) {
	start := time.Now()
	top, err := git(repoDir, "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	repo := strings.TrimSpace(top)
	rev, desc, err := resolveRevision(repo, ref)
	if err != nil {
		return err
	}
	files, err := goModFiles(repo, rev)
	if err != nil {
		return err
	}
	mods, err := parseModules(files)
	if err != nil {
		return err
	}
	version, err := releaseVersion(mods)
	if err != nil {
		return err
	}
	var root string
	var tags []string
	for _, m := range mods {
		if m.Dir == "" {
			root = m.Path
		}
		if m.published() {
			tags = append(tags, tagName(m.Dir, version))
		}
	}
	if root == "" {
		return fmt.Errorf("no go.mod at the repository's root")
	}
	readmeText, err := git(repo, "show", rev+":README.md")
	if err != nil {
		return err
	}
	rd, err := parseReadme(readmeText)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "release check of %s as %s (tags %s)\n", desc, version, strings.Join(tags, " "))

	tmp, err := os.MkdirTemp("", "redlock-release-")
	if err != nil {
		return err
	}
	u := &user{out: out, dir: tmp}
	defer func() {
		if keep {
			fmt.Fprintf(out, "kept %s\n", tmp)
			return
		}
		// The module cache is read-only; go clean -modcache empties it.
		u.run(context.WithoutCancel(ctx), tmp, "go", "clean", "-modcache")
		if rerr := os.RemoveAll(tmp); err == nil {
			err = rerr
		}
	}()
	proxy := filepath.Join(tmp, "proxy")
	if err := buildProxy(proxy, repo, rev, version, mods); err != nil {
		return err
	}
	if u.env, err = userEnv(tmp, proxy, root); err != nil {
		return err
	}

	// A new program: the README's go get commands, then every module of
	// its table, then its Usage snippet.
	prog := filepath.Join(tmp, "user")
	if err := os.MkdirAll(prog, 0o755); err != nil {
		return err
	}
	if err := u.run(ctx, prog, "go", "mod", "init", "example.com/user"); err != nil {
		return err
	}
	got := map[string]bool{}
	for _, c := range rd.Get {
		if err := u.run(ctx, prog, c...); err != nil {
			return err
		}
		for _, a := range c[2:] {
			got[a] = true
		}
	}
	for _, p := range rd.Modules {
		if !got[p] {
			if err := u.run(ctx, prog, "go", "get", p); err != nil {
				return err
			}
		}
	}
	src, err := usageProgram(rd.Usage)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(prog, "main.go"), []byte(src), 0o644); err != nil {
		return err
	}
	if err := u.run(ctx, prog, "go", "build", "-o", filepath.Join(tmp, "usage"), "."); err != nil {
		return fmt.Errorf("%w\n(the program made of README.md's Usage snippet:)\n%s", err, src)
	}
	if err := u.run(ctx, prog, "go", "list", "-m", root); err != nil {
		return err
	}

	// The same program built with a clone, as the Using a checkout section
	// says.
	if err := checkCheckout(ctx, u, repo, rev, src, version, rd.Checkout, mods); err != nil {
		return err
	}

	// The command-line tool, installed outside any module: as the README
	// says, and at the version released.
	outside := filepath.Join(tmp, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		return err
	}
	var bins []string
	for _, c := range rd.Install {
		if err := u.run(ctx, outside, c...); err != nil {
			return err
		}
		target := c[len(c)-1]
		pkg, _, _ := strings.Cut(target, "@")
		if err := u.run(ctx, outside, "go", "install", pkg+"@"+version); err != nil {
			return err
		}
		bins = append(bins, filepath.Join(tmp, "bin", filepath.Base(pkg)))
	}
	for _, bin := range bins {
		var stdout bytes.Buffer
		u.stdout = &stdout
		err := u.run(ctx, outside, bin, "version")
		u.stdout = nil
		if err != nil {
			return err
		}
		first, _, _ := strings.Cut(stdout.String(), "\n")
		if want := filepath.Base(bin) + " " + version; first != want {
			return fmt.Errorf("%s version: first line %q, want %q", bin, first, want)
		}
	}
	fmt.Fprintf(out, "release check passed in %s: %s installs as README.md says\n", time.Since(start).Round(time.Second), version)
	return nil
}

// userEnv is a new user's environment: an empty GOPATH and module cache,
// the proxy on disk first (the usual proxies after it, for third-party
// modules only: a module of the repository is found on disk, and has no
// checksum database entry yet), no workspace, no go env file.
func userEnv(tmp, proxy, root string) ([]string, error) {
	upstream, err := exec.Command("go", "env", "GOPROXY").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOPROXY: %v", err)
	}
	cache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOCACHE: %v", err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GO") {
			env = append(env, kv)
		}
	}
	gopath := filepath.Join(tmp, "gopath")
	return append(env,
		"GOPATH="+gopath,
		"GOMODCACHE="+filepath.Join(gopath, "pkg", "mod"),
		"GOBIN="+filepath.Join(tmp, "bin"),
		// The build cache holds no modules: sharing it only saves time.
		"GOCACHE="+strings.TrimSpace(string(cache)),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+strings.TrimSpace(string(upstream)),
		"GONOSUMDB="+root,
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
		"GOENV=off",
		"GOTOOLCHAIN=local",
	), nil
}

// user runs commands as the new user.
type user struct {
	out    io.Writer
	dir    string
	env    []string
	stdout io.Writer // where a command's standard output goes besides the log
}

// run runs a command in dir, printing it and, when it fails, its output.
func (u *user) run(ctx context.Context, dir string, args ...string) error {
	rel, _ := filepath.Rel(u.dir, dir)
	fmt.Fprintf(u.out, "  [%s] %s\n", rel, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = u.env
	var output bytes.Buffer
	cmd.Stderr = &output
	cmd.Stdout = &output
	if u.stdout != nil {
		cmd.Stdout = io.MultiWriter(&output, u.stdout)
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s (in %s): %v\n%s", strings.Join(args, " "), rel, err, output.String())
	}
	return nil
}
