// Command protogen is a small stand-in for protoc, used by go:generate to
// turn the project's .proto files into Go code without a protoc binary.
//
// It compiles the named .proto files with github.com/bufbuild/protocompile
// (keeping comments, so they reach the generated Go code), builds a
// CodeGeneratorRequest and feeds it on stdin to each generator plugin,
// started as "go tool <plugin>". The plugins are pinned with tool
// directives in go.mod, so the output only depends on the module graph.
// The files in every response are written below the output directory.
//
// Usage:
//
//	protogen [-I dir]... [-out dir] [-param p] [-plugin name[:params]]... file.proto...
//
// File names are relative to an import directory (-I, default "."). As
// with protoc, an import directory may be given as "virtual=dir" to make
// the files in dir known under the virtual path prefix. The default
// plugins are protoc-gen-go, protoc-gen-go-ttrpc and protoc-gen-go-vtproto
// (with features=marshal+unmarshal+unmarshal_unsafe+size+clone+equal), and the default
// parameter is "paths=source_relative". A -plugin value "name:params"
// appends params to the parameter for that plugin.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// defaultPlugins are the generators run when no -plugin flag is given.
// A plugin may carry extra parameters after a colon, appended to -param.
var defaultPlugins = []string{
	"protoc-gen-go",
	"protoc-gen-go-ttrpc",
	"protoc-gen-go-vtproto:features=marshal+unmarshal+unmarshal_unsafe+size+clone+equal",
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func main() {
	var includes, plugins listFlag
	flag.Var(&includes, "I", "import `dir`ectory or virtual=dir mapping (repeatable, default \".\")")
	flag.Var(&plugins, "plugin", "generator run as \"go tool `name`\", optionally name:params (repeatable, default protoc-gen-go, protoc-gen-go-ttrpc, protoc-gen-go-vtproto)")
	out := flag.String("out", ".", "output `dir`ectory")
	param := flag.String("param", "paths=source_relative", "`parameter` passed to every plugin")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: protogen [flags] file.proto...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if len(includes) == 0 {
		includes = listFlag{"."}
	}
	if len(plugins) == 0 {
		plugins = defaultPlugins
	}

	if err := run(context.Background(), includes, flag.Args(), plugins, *param, *out); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

// run compiles files, runs every plugin and writes the generated files.
func run(ctx context.Context, includes, files, plugins []string, param, out string) error {
	req, err := buildRequest(ctx, includes, files, param)
	if err != nil {
		return err
	}
	for _, spec := range plugins {
		p, extra, _ := strings.Cut(spec, ":")
		req.Parameter = proto.String(strings.Trim(param+","+extra, ","))
		in, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
		if err != nil {
			return fmt.Errorf("marshal request: %w", err)
		}
		resp, err := runPlugin(ctx, p, in)
		if err != nil {
			return err
		}
		if err := writeFiles(out, resp.GetFile()); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// buildRequest compiles files and returns the request a protoc plugin
// expects: the files to generate plus every file they depend on,
// dependencies first.
func buildRequest(ctx context.Context, includes, files []string, param string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: includeAccessor(includes),
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(ctx, files...)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}

	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: slices.Clone(files),
		Parameter:      proto.String(param),
	}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, fileProto(fd))
	}
	for _, f := range compiled {
		add(f)
	}
	for _, f := range compiled {
		req.SourceFileDescriptors = append(req.SourceFileDescriptors, fileProto(f))
	}
	return req, nil
}

// includeAccessor opens proto files by searching the import directories in
// order. As with protoc, an entry may be "virtual=dir": then only names
// below the virtual prefix are looked up, in dir, with the prefix removed.
func includeAccessor(includes []string) func(string) (io.ReadCloser, error) {
	return func(name string) (io.ReadCloser, error) {
		for _, inc := range includes {
			virtual, dir, mapped := strings.Cut(inc, "=")
			if !mapped {
				virtual, dir = "", inc
			}
			rel := name
			if virtual != "" {
				var ok bool
				rel, ok = strings.CutPrefix(name, strings.TrimSuffix(virtual, "/")+"/")
				if !ok {
					continue
				}
			}
			f, err := os.Open(filepath.Join(dir, filepath.FromSlash(rel)))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return f, err
		}
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
}

// fileProto returns the descriptor proto of fd. Compiled sources carry the
// protoc-compatible proto (with json_name and source info) directly.
func fileProto(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if r, ok := fd.(linker.Result); ok {
		return r.FileDescriptorProto()
	}
	return protodesc.ToFileDescriptorProto(fd)
}

// runPlugin runs "go tool name" with the encoded request on stdin and
// decodes its response.
func runPlugin(ctx context.Context, name string, in []byte) (*pluginpb.CodeGeneratorResponse, error) {
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", name)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool %s: %w", name, err)
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), resp); err != nil {
		return nil, fmt.Errorf("%s: decode response: %w", name, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("%s: %s", name, resp.GetError())
	}
	return resp, nil
}

// writeFiles writes the generated files below dir, in name order.
func writeFiles(dir string, files []*pluginpb.CodeGeneratorResponse_File) error {
	files = slices.Clone(files)
	slices.SortStableFunc(files, func(a, b *pluginpb.CodeGeneratorResponse_File) int {
		return strings.Compare(a.GetName(), b.GetName())
	})
	for _, f := range files {
		name := f.GetName()
		switch {
		case f.GetInsertionPoint() != "":
			return fmt.Errorf("%s: insertion points are not supported", name)
		case !filepath.IsLocal(filepath.FromSlash(name)):
			return fmt.Errorf("refusing to write %q outside the output directory", name)
		}
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
