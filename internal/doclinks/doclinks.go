package doclinks

import (
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

// BrokenLink is a link that does not resolve: the page it is in (a slash
// path from the root), its line, its target as written, and why.
type BrokenLink struct {
	File   string
	Line   int
	Target string
	Reason string
}

func (b *BrokenLink) Error() string {
	return fmt.Sprintf("%s:%d: link %q: %s", b.File, b.Line, b.Target, b.Reason)
}

// scheme matches a target that is a URL (https:, mailto:), not a path.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// Check reads the pages files (slash paths from root) and returns a
// *BrokenLink for every link to a path that does not exist under root, or
// that leaves it, and for every anchor that is not a heading of the page
// it names (a Markdown page; an anchor of another file is not checked).
// Links to URLs are not followed. An error reading a page is returned as
// it is.
func Check(root string, files []string) []error {
	anchors := map[string]map[string]bool{} // by slash path from root
	anchorsOf := func(p string) (map[string]bool, error) {
		if a, ok := anchors[p]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		anchors[p] = Anchors(string(b))
		return anchors[p], nil
	}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range Links(string(b)) {
			if reason := resolve(root, f, l.Target, anchorsOf); reason != "" {
				errs = append(errs, &BrokenLink{File: f, Line: l.Line, Target: l.Target, Reason: reason})
			}
		}
	}
	return errs
}

// resolve says why target, a link of page, does not resolve under root,
// or "" when it does.
func resolve(root, page, target string, anchorsOf func(string) (map[string]bool, error)) string {
	if scheme.MatchString(target) {
		return ""
	}
	p, frag, _ := strings.Cut(target, "#")
	switch {
	case p == "":
		p = page
	case strings.HasPrefix(p, "/"):
		p = path.Clean(strings.TrimPrefix(p, "/"))
	default:
		p = path.Join(path.Dir(page), p)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "leaves the repository"
	}
	info, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p + " does not exist"
	case err != nil:
		return err.Error()
	}
	if frag == "" || info.IsDir() || !strings.HasSuffix(p, ".md") {
		return ""
	}
	a, err := anchorsOf(p)
	if err != nil {
		return err.Error()
	}
	if !a[frag] {
		return fmt.Sprintf("%s has no heading whose anchor is %q", p, frag)
	}
	return ""
}

// Files lists the Markdown files git knows under root, tracked or
// untracked but not ignored, as slash paths from root, leaving out those
// deleted in the work tree.
func Files(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.md")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %v: %s", root, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var files []string
	for f := range strings.SplitSeq(string(out), "\x00") {
		if f == "" || slices.Contains(files, f) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			continue // tracked, moved or deleted in the work tree
		}
		files = append(files, f)
	}
	return files, nil
}
