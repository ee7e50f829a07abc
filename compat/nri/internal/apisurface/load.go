package apisurface

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Load compiles the packages named by paths, as seen from the module in
// dir, and returns their type information by import path.
func Load(dir string, paths ...string) (map[string]*types.Package, error) {
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}, paths...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("apisurface: go list -export %s: %w: %s", strings.Join(paths, " "), err, stderr.Bytes())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, _ := strings.Cut(sc.Text(), "\t")
		exports[path] = file
	}
	lookup := func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("apisurface: no export data for %q", path)
		}
		return os.Open(file)
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", lookup)
	pkgs := map[string]*types.Package{}
	for _, path := range paths {
		p, err := imp.Import(path)
		if err != nil {
			return nil, fmt.Errorf("apisurface: %s: %w", path, err)
		}
		pkgs[path] = p
	}
	return pkgs, nil
}
