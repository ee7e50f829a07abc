package envdoc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Uses maps a name to the files that use it: slash paths from the
// repository's root, each once, in the order scanned.
type Uses map[string][]string

func (u Uses) add(name, file string) {
	if !slices.Contains(u[name], file) {
		u[name] = append(u[name], file)
	}
}

// Repo is what a repository's files say about its variables.
type Repo struct {
	// Code holds the names of every file that is not documentation:
	// neither under docs/ nor Markdown.
	Code Uses
	// Docs holds the names the Markdown files name, docs/dev/environment.md
	// and CHANGELOG.md (history) aside.
	Docs Uses
	// Defaults are the defaults the code spells out.
	Defaults []Default
	// Targets are the Makefile's targets.
	Targets []string
}

// TableFile is the table's path from the repository's root.
const TableFile = "docs/dev/environment.md"

// Scan reads the files of the repository at root: those git ls-files
// lists (tracked, and untracked but not ignored), or, when root is not a
// git checkout or git is missing, those below root but .git, _output and
// what the root .gitignore ignores.
func Scan(ctx context.Context, root, prefix string) (Repo, error) {
	files, err := gitFiles(ctx, root)
	if err != nil {
		if files, err = walkFiles(root); err != nil {
			return Repo{}, err
		}
	}
	r := Repo{Code: Uses{}, Docs: Uses{}}
	for _, f := range files {
		isDoc := strings.HasPrefix(f, "docs/") || strings.HasSuffix(f, ".md")
		if f == TableFile || f == "CHANGELOG.md" || isDoc && !strings.HasSuffix(f, ".md") {
			continue
		}
		name := filepath.Join(root, filepath.FromSlash(f))
		info, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) || err == nil && !info.Mode().IsRegular() {
			continue // tracked, deleted in the work tree; a symbolic link or a submodule
		}
		if err != nil {
			return Repo{}, err
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return Repo{}, err
		}
		if f == "Makefile" {
			r.Targets = Targets(string(b))
		}
		if !bytes.Contains(b, []byte(prefix)) || bytes.IndexByte(b, 0) >= 0 {
			continue // no name, or binary
		}
		text := string(b)
		uses := r.Code
		if isDoc {
			uses = r.Docs
		}
		for _, n := range Names(text, prefix) {
			uses.add(n, f)
		}
		if isDoc {
			continue
		}
		for _, d := range Defaults(text, prefix) {
			d.File = f
			r.Defaults = append(r.Defaults, d)
		}
	}
	return r, nil
}

// gitFiles lists the files git knows in root, tracked or untracked but
// not ignored.
func gitFiles(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", root, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if f != "" && !slices.Contains(files, f) { // a conflicted file is listed once per stage
			files = append(files, f)
		}
	}
	return files, nil
}

// walkFiles lists the regular files below root but .git, _output and what
// the root .gitignore's patterns match (a pattern with a slash against the
// path from root, one without against each name).
func walkFiles(root string) ([]string, error) {
	ignore := []string{".git", "/_output"}
	if b, err := os.ReadFile(filepath.Join(root, ".gitignore")); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "!") {
				ignore = append(ignore, strings.TrimSuffix(l, "/"))
			}
		}
	}
	ignored := func(rel string) bool {
		for _, p := range ignore {
			if strings.Contains(p, "/") {
				if ok, _ := path.Match(strings.TrimPrefix(p, "/"), rel); ok {
					return true
				}
			} else if ok, _ := path.Match(p, path.Base(rel)); ok {
				return true
			}
		}
		return false
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case ignored(rel) && e.IsDir():
			return filepath.SkipDir
		case ignored(rel) || !e.Type().IsRegular():
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}

// targetLine is a rule's line: one or more targets, a colon that does
// not start an assignment (:=, ::=).
var targetLine = regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9_.-]*(?:[ \t]+[A-Za-z0-9][A-Za-z0-9_.-]*)*)[ \t]*:(?:[^=:]|$)`)

// Targets returns the targets a Makefile's rules name, each once, in
// order; special targets (.PHONY) and pattern rules are left out.
func Targets(makefile string) []string {
	var out []string
	for _, m := range targetLine.FindAllStringSubmatch(makefile, -1) {
		for _, t := range strings.Fields(m[1]) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}
