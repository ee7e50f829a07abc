package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

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

// options are the command line's.
type options struct {
	version, out, arch, goCmd string
	components                []string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.version, "version", "", "image tag and version stamped into the binaries (default: git describe --always --dirty, else devel)")
	fs.StringVar(&o.out, "out", filepath.Join("_output", "images"), "directory the archives are written to")
	fs.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binaries and the images' platform (linux/ARCH)")
	fs.StringVar(&o.goCmd, "go", cmpOr(os.Getenv("GO"), "go"), "the go command")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: image [-version V] [-out DIR] [-arch GOARCH] [component...]\n\nBuilds OCI image archives of %s.\n\n", strings.Join(components, ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
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

// run builds the images the arguments name and prints one line per image:
// its references, digest and archive.
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
		bin := filepath.Join(work, c)
		if err := goBuild(ctx, o, c, bin); err != nil {
			return err
		}
		archive := filepath.Join(o.out, c+".tar")
		digest, err := writeImage(archive, c, o, bin)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s %s %s\n", imagebuild.Ref(c, o.version), digest, archive)
	}
	return nil
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

// goBuild builds ./cmd/<component> of this module, static, into bin.
func goBuild(ctx context.Context, o options, component, bin string) error {
	cmd := exec.CommandContext(ctx, o.goCmd, "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X "+versionVar+"="+o.version,
		"-o", bin, "github.com/nrinet/nrinet/cmd/"+component)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.arch)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building %s for linux/%s: %w\n%s", component, o.arch, err, out.Bytes())
	}
	return nil
}

// writeImage writes component's image, the binary bin as its entrypoint,
// to archive, and returns the image's digest.
func writeImage(archive, component string, o options, bin string) (v1.Hash, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return v1.Hash{}, err
	}
	path := binDir + "/" + component
	files := append(imagebuild.Dirs(path), imagebuild.File{Name: path, Mode: 0o755, Data: data})
	img, err := imagebuild.Image(files, o.arch, v1.Config{
		Entrypoint: []string{"/" + path},
		Env:        []string{"PATH=/" + binDir},
		Labels: map[string]string{
			"org.opencontainers.image.title":   component,
			"org.opencontainers.image.version": o.version,
		},
	})
	if err != nil {
		return v1.Hash{}, fmt.Errorf("%s: %w", component, err)
	}
	refs := []string{imagebuild.Ref(component, o.version)}
	if o.version != imagebuild.LatestTag {
		refs = append(refs, imagebuild.Ref(component, imagebuild.LatestTag))
	}
	if err := imagebuild.Write(archive, img, refs...); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
