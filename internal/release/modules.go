package main

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

// repoModule is one module of the repository at the commit checked.
type repoModule struct {
	Dir  string // relative to the repository root, "" for the root
	Path string // module path
	Mod  []byte // the go.mod file
	File *modfile.File
}

// published reports whether users install the module: every module but
// those under internal/ and examples/, which are the repository's own.
func (m repoModule) published() bool {
	for _, elem := range strings.Split(m.Dir, "/") {
		if elem == "internal" || elem == "examples" {
			return false
		}
	}
	return true
}

// parseModules parses the go.mod files of the commit, given as their
// directories and contents.
func parseModules(files map[string][]byte) ([]repoModule, error) {
	var mods []repoModule
	for dir, data := range files {
		f, err := modfile.Parse(path.Join(dir, "go.mod"), data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s: no module directive", path.Join(dir, "go.mod"))
		}
		mods = append(mods, repoModule{Dir: dir, Path: f.Module.Mod.Path, Mod: data, File: f})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Dir < mods[j].Dir })
	return mods, nil
}

// releaseVersion checks the published modules as a release needs them and
// returns the one version they release: no replace directive, and every
// requirement of one repository module on another naming the same
// semantic version.
func releaseVersion(mods []repoModule) (string, error) {
	inRepo := map[string]bool{}
	for _, m := range mods {
		inRepo[m.Path] = true
	}
	var problems []string
	versions := map[string][]string{} // version -> "requirer requires path"
	for _, m := range mods {
		if !m.published() {
			continue
		}
		for _, r := range m.File.Replace {
			problems = append(problems, fmt.Sprintf("%s/go.mod: replace %s: a published module carries no replace directive (use go.work)", dirName(m.Dir), r.Old.Path))
		}
		for _, r := range m.File.Require {
			if !inRepo[r.Mod.Path] {
				continue
			}
			v := r.Mod.Version
			if module.IsPseudoVersion(v) || module.CheckPathMajor(v, pathMajor(r.Mod.Path)) != nil {
				problems = append(problems, fmt.Sprintf("%s/go.mod: requires %s %s: not a release version", dirName(m.Dir), r.Mod.Path, v))
				continue
			}
			versions[v] = append(versions[v], fmt.Sprintf("%s requires %s", m.Path, r.Mod.Path))
		}
	}
	switch {
	case len(problems) > 0:
		return "", fmt.Errorf("%s", strings.Join(problems, "\n"))
	case len(versions) == 0:
		return "", fmt.Errorf("no published module requires another: cannot tell the version to release")
	case len(versions) > 1:
		var b strings.Builder
		b.WriteString("the modules are released together, at one version, but their go.mod files name several:")
		for v, who := range versions {
			fmt.Fprintf(&b, "\n  %s: %s", v, strings.Join(who, "; "))
		}
		return "", fmt.Errorf("%s", b.String())
	}
	for v := range versions {
		return v, nil
	}
	panic("unreachable")
}

func pathMajor(p string) string {
	_, major, _ := module.SplitPathVersion(p)
	return major
}

func dirName(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// tagName is the git tag that releases version v of the module in dir.
func tagName(dir, v string) string {
	if dir == "" {
		return v
	}
	return dir + "/" + v
}
