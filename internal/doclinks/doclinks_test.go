package doclinks_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nrinet/nrinet/internal/doclinks"
)

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Install on one node", "install-on-one-node"},
		{"Network mode `nri`: NRI plugins own the pod network", "network-mode-nri-nri-plugins-own-the-pod-network"},
		{"The migration: `TestMigration` (`make e2e-migration`)", "the-migration-testmigration-make-e2e-migration"},
		{"Which nodes: the opt-in label", "which-nodes-the-opt-in-label"},
		{"Differences from containerd NRI v0.12.5", "differences-from-containerd-nri-v0125"},
		{"make crio-test", "make-crio-test"},
		{"Stage 4: the uninstall (end of `TestKube/3-real-node`)", "stage-4-the-uninstall-end-of-testkube3-real-node"},
		{"A [link](x.md) and **bold**, snake_case", "a-link-and-bold-snake_case"},
	} {
		if got := doclinks.Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchors(t *testing.T) {
	page := "# Title\n\n## Results\n\n```sh\n# not a heading\n```\n\n### Results\n\n## Closed ##\n#not a heading\n"
	got := doclinks.Anchors(page)
	for _, a := range []string{"title", "results", "results-1", "closed"} {
		if !got[a] {
			t.Errorf("no anchor %q in %v", a, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("anchors %v, want 4", got)
	}
}

func TestLinks(t *testing.T) {
	page := "A [page](a.md), an ![image](img/x.png \"title\") and [a URL](https://example.com).\n" +
		"`[in code](no.md)` is code.\n\n```md\n[in a block](no.md)\n```\n\n   ~~~\n   [indented block](no.md)\n   ~~~\n" +
		"[anchor](#x) and [two](b.md#y) on line 11.\n"
	want := []doclinks.Link{{"a.md", 1}, {"img/x.png", 1}, {"https://example.com", 1}, {"#x", 11}, {"b.md#y", 11}}
	if got := doclinks.Links(page); !slices.Equal(got, want) {
		t.Errorf("Links = %v, want %v", got, want)
	}
}

// TestCheck finds every kind of broken link in a tree of its own, and
// passes the good ones.
func TestCheck(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n[docs](docs/), [guide](docs/guide.md#setting-it-up), [code](cmd/main.go#L3), [root](/docs/guide.md)\n"+
		"[gone](docs/gone.md)\n[bad anchor](docs/guide.md#nowhere)\n[here](#top) [not here](#bottom)\n[out](../x.md)\n")
	write("docs/guide.md", "# Guide\n\n## Setting it up\n\n[back](../README.md#top), [sibling](dev/x.md)\n")
	write("cmd/main.go", "package main\n")
	errs := doclinks.Check(root, []string{"README.md", "docs/guide.md"})
	want := []string{
		`README.md:4: link "docs/gone.md": docs/gone.md does not exist`,
		`README.md:5: link "docs/guide.md#nowhere": docs/guide.md has no heading whose anchor is "nowhere"`,
		`README.md:6: link "#bottom": README.md has no heading whose anchor is "bottom"`,
		`README.md:7: link "../x.md": leaves the repository`,
		`docs/guide.md:5: link "dev/x.md": docs/dev/x.md does not exist`,
	}
	var got []string
	for _, err := range errs {
		got = append(got, err.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check:\n%q\nwant\n%q", got, want)
	}
}

// TestRepository holds every Markdown page of the repository to its
// links.
func TestRepository(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files, err := doclinks.Files(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/README.md") {
		t.Fatalf("the pages listed under %s lack README.md or docs/README.md: %v", root, files)
	}
	for _, err := range doclinks.Check(root, files) {
		t.Error(err)
	}
	t.Logf("%d pages", len(files))
}
