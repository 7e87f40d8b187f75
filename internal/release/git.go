package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"strings"
)

// git runs git in repo and returns its standard output.
func git(repo string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// resolveRevision returns the commit to check: ref's, or for HEAD with
// uncommitted changes to tracked files, a commit of the work tree made by
// "git stash create" (which changes neither the work tree nor any ref), so
// that the check sees what make test tests. Untracked files are not in it.
func resolveRevision(repo, ref string) (rev, desc string, err error) {
	rev, err = git(repo, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", "", err
	}
	rev = strings.TrimSpace(rev)
	desc = ref + " " + rev[:12]
	if ref != "HEAD" {
		return rev, desc, nil
	}
	status, err := git(repo, "status", "--porcelain", "--untracked-files=no")
	if err != nil || strings.TrimSpace(status) == "" {
		return rev, desc, err
	}
	stash, err := git(repo, "stash", "create")
	if err != nil {
		return "", "", err
	}
	if s := strings.TrimSpace(stash); s != "" {
		return s, desc + " with its uncommitted changes", nil
	}
	return rev, desc, nil
}

// goModFiles returns the go.mod files of rev, by directory.
func goModFiles(repo, rev string) (map[string][]byte, error) {
	list, err := git(repo, "ls-tree", "-r", "--name-only", rev)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimSpace(list), "\n") {
		if path.Base(name) != "go.mod" {
			continue
		}
		data, err := git(repo, "show", rev+":"+name)
		if err != nil {
			return nil, err
		}
		dir := path.Dir(name)
		if dir == "." {
			dir = ""
		}
		files[dir] = []byte(data)
	}
	return files, nil
}
