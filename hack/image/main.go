package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// components are the commands under cmd/ that get an image.
var components = []string{"nri-podnet", "nri-cni"}

// versionVar is the variable the version is stamped into with -ldflags -X.
const versionVar = "github.com/nrinet/nrinet/internal/version.version"

// binDir is where the binary lies in the image.
const binDir = "usr/local/bin"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// defaultArchs are the architectures of `make image`: its index holds
// one image for each.
const defaultArchs = "amd64,arm64"

// options are the command line's.
type options struct {
	version, out, goCmd string
	archs               []string
	// push is the repository the images are pushed to
	// (host[:port]/path), "" for none.
	push       string
	components []string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.version, "version", "", "image tag and version stamped into the binaries (default: git describe --always --dirty, else devel)")
	fs.StringVar(&o.out, "out", filepath.Join("_output", "images"), "directory the archives are written to")
	archs := fs.String("arch", defaultArchs, "comma-separated GOARCHes: one image per linux/ARCH in each component's index")
	fs.StringVar(&o.push, "push", "", "also push each index to `REPO`/<component>:<version> and :latest (host[:port]/path; plain HTTP for localhost and 127.0.0.1)")
	fs.StringVar(&o.goCmd, "go", cmp.Or(os.Getenv("GO"), "go"), "the go command")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: image [-version V] [-out DIR] [-arch GOARCH,...] [-push REPO] [component...]\n\nBuilds multi-architecture OCI image archives of %s, and pushes them.\n\n", strings.Join(components, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for a := range strings.SplitSeq(*archs, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if slices.Contains(o.archs, a) {
			return o, fmt.Errorf("-arch: %q twice", a)
		}
		o.archs = append(o.archs, a)
	}
	if len(o.archs) == 0 {
		return o, fmt.Errorf("-arch: no architecture in %q", *archs)
	}
	if o.push != "" {
		if _, err := name.NewRepository(o.push+"/"+components[0], name.StrictValidation); err != nil {
			return o, fmt.Errorf("-push %q: not a repository (host[:port]/path): %w", o.push, err)
		}
	}
	o.components = fs.Args()
	if len(o.components) == 0 {
		o.components = components
	}
	for _, c := range o.components {
		if !slices.Contains(components, c) {
			return o, fmt.Errorf("unknown component %q (have %s)", c, strings.Join(components, ", "))
		}
	}
	return o, nil
}

// run builds the images the arguments name and prints one line per
// component: its references, the index's digest and the archive, and each
// pushed reference.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.version == "" {
		o.version = gitVersion(ctx)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "nrinet-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, c := range o.components {
		var images []v1.Image
		for _, arch := range o.archs {
			bin := filepath.Join(work, c+"-"+arch)
			if err := goBuild(ctx, o, c, arch, bin); err != nil {
				return err
			}
			img, err := image(c, o.version, arch, bin)
			if err != nil {
				return err
			}
			images = append(images, img)
		}
		idx, err := imagebuild.Index(images...)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		archive := filepath.Join(o.out, c+".tar")
		if err := imagebuild.WriteIndex(archive, idx, refs(imagebuild.Repository, c, o.version)...); err != nil {
			return err
		}
		digest, err := idx.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s %s\n", imagebuild.Ref(c, o.version), digest, archive)
		if o.push == "" {
			continue
		}
		pushed := refs(o.push, c, o.version)
		if err := imagebuild.Push(ctx, idx, pushed...); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		for _, r := range pushed {
			fmt.Fprintf(stdout, "pushed %s %s\n", r, digest)
		}
	}
	return nil
}

// refs are the references of component's image in repository: its version
// and, unless that is it, latest.
func refs(repository, component, version string) []string {
	r := []string{repository + "/" + component + ":" + version}
	if version != imagebuild.LatestTag {
		r = append(r, repository+"/"+component+":"+imagebuild.LatestTag)
	}
	return r
}

// gitVersion is `git describe --always --dirty`, or "devel" when git
// cannot say.
func gitVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output()
	if v := strings.TrimSpace(string(out)); err == nil && v != "" {
		return v
	}
	return "devel"
}

// goBuild builds ./cmd/<component> of this module for linux/arch, static,
// into bin.
func goBuild(ctx context.Context, o options, component, arch, bin string) error {
	cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X "+versionVar+"="+o.version,
		"-o", bin, "github.com/nrinet/nrinet/cmd/"+component)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for linux/%s: %w\n%s", component, arch, err, out.Bytes())
	}
	return nil
}

// image returns component's image for linux/arch: the binary bin as its
// entrypoint, labelled with the component and version.
func image(component, version, arch, bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	path := binDir + "/" + component
	files := append(imagebuild.Dirs(path), imagebuild.File{Name: path, Mode: 0o755, Data: data})
	img, err := imagebuild.Image(files, arch, v1.Config{
		Entrypoint: []string{"/" + path},
		Env:        []string{"PATH=/" + binDir},
		Labels: map[string]string{
			"org.opencontainers.image.title":   component,
			"org.opencontainers.image.version": version,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%s for linux/%s: %w", component, arch, err)
	}
	return img, nil
}
