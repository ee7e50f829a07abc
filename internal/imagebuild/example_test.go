package imagebuild_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/imagebuild"
)

// Write an image holding one executable as its entrypoint, named with a
// version and "latest", and read its references back.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "imagebuild-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	bin := "usr/local/bin/hello"
	files := append(imagebuild.Dirs(bin), imagebuild.File{Name: bin, Mode: 0o755, Data: []byte("#!/bin/sh\necho hello\n")})
	img, err := imagebuild.Image(files, "amd64", v1.Config{Entrypoint: []string{"/" + bin}})
	if err != nil {
		log.Fatal(err)
	}
	archive := filepath.Join(dir, "hello.tar")
	if err := imagebuild.Write(archive, img, imagebuild.Ref("hello", "v1"), imagebuild.Ref("hello", imagebuild.LatestTag)); err != nil {
		log.Fatal(err)
	}

	out := filepath.Join(dir, "layout")
	if err := os.Mkdir(out, 0o755); err != nil {
		log.Fatal(err)
	}
	p, err := imagebuild.Extract(archive, out)
	if err != nil {
		log.Fatal(err)
	}
	images, err := imagebuild.Images(p)
	if err != nil {
		log.Fatal(err)
	}
	var refs []string
	for ref := range images {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	for _, ref := range refs {
		fmt.Println(ref)
	}
	// Output:
	// localhost/nrinet/hello:latest
	// localhost/nrinet/hello:v1
}
