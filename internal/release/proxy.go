package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// buildProxy writes a module proxy (the GOPROXY protocol, served from a
// file:// URL) into dir, holding each published module of rev at version:
// its go.mod, its info, and its zip, made by golang.org/x/mod/zip from
// "git archive" of the module's directory at rev, as the go command makes
// it from a tag.
func buildProxy(dir, repo, rev, version string, mods []repoModule) error {
	at, err := git(repo, "show", "-s", "--format=%cI", rev)
	if err != nil {
		return err
	}
	when, err := time.Parse(time.RFC3339, strings.TrimSpace(at))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when.UTC()})
	if err != nil {
		return err
	}
	for _, m := range mods {
		if !m.published() {
			continue
		}
		esc, err := module.EscapePath(m.Path)
		if err != nil {
			return err
		}
		ev, err := module.EscapeVersion(version)
		if err != nil {
			return err
		}
		vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return err
		}
		files := map[string][]byte{
			"list":       []byte(version + "\n"),
			ev + ".info": info,
			ev + ".mod":  m.Mod,
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				return err
			}
		}
		zf, err := os.Create(filepath.Join(vdir, ev+".zip"))
		if err != nil {
			return err
		}
		err = createZip(zf, module.Version{Path: m.Path, Version: version}, repo, rev, m.Dir)
		if cerr := zf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s@%s: %w", m.Path, version, err)
		}
	}
	return nil
}

// createZip writes the module zip of m, the module in subdir of repo at
// rev, to w: the files "git archive" gives for subdir (with line endings as
// committed, as the go command archives a tag), less those of nested
// modules, which [modzip.Create] leaves out. ([modzip.CreateFromVCS] does
// the same but only in a repository's main work tree, not in a git
// worktree.)
func createZip(w io.Writer, m module.Version, repo, rev, subdir string) error {
	args := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", rev}
	if subdir != "" {
		args = append(args, "--", subdir)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git archive %s %s: %v: %s", rev, subdir, err, strings.TrimSpace(stderr.String()))
	}
	zr, err := zip.NewReader(bytes.NewReader(stdout.Bytes()), int64(stdout.Len()))
	if err != nil {
		return err
	}
	prefix := ""
	if subdir != "" {
		prefix = subdir + "/"
	}
	var files []modzip.File
	for _, f := range zr.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		files = append(files, archived{name: name, f: f})
	}
	return modzip.Create(w, m, files)
}

// archived is one file of a git archive, as [modzip.Create] reads it.
type archived struct {
	name string
	f    *zip.File
}

func (a archived) Path() string                 { return a.name }
func (a archived) Lstat() (os.FileInfo, error)  { return a.f.FileInfo(), nil }
func (a archived) Open() (io.ReadCloser, error) { return a.f.Open() }
