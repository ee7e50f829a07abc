package logkeys_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The directories whose log lines are checked, from the repository's root.
var dirs = []string{"cri", "runtime", "plugin", "plugins"}

// The first key-value argument of the slog.Logger methods.
var firstKey = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0,
}

var (
	// An expression that holds a pod's ID: pod.GetId(), req.GetPodId(),
	// sb.ID, s.rt.ContainerID, id, podID.
	isID = regexp.MustCompile(`(?i)(Id\(\)$|ID$|^id$|^podID$)`)
	// Keys that would say the same under another name.
	otherKeys = map[string]string{"pod_id": "sandbox", "podID": "sandbox", "podId": "sandbox", "sandbox_id": "sandbox", "sandboxID": "sandbox", "pod_name": "pod", "podName": "pod"}
)

// TestLogKeys: every log call under cri/, runtime/, plugin/ and plugins/
// gives "pod" a namespace/name (never an ID) and "sandbox" an ID, and
// uses no other key for either.
func TestLogKeys(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]int{}
	for _, dir := range dirs {
		root := filepath.Join("..", "..", dir)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				start, ok := firstKey[sel.Sel.Name]
				if !ok {
					return true
				}
				for i := start; i+1 < len(call.Args); i += 2 {
					lit, ok := call.Args[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						i-- // a slog.Attr: one argument
						continue
					}
					key, _ := strconv.Unquote(lit.Value)
					value := source(fset, call.Args[i+1])
					where := fset.Position(lit.Pos()).String()
					switch {
					case otherKeys[key] != "":
						t.Errorf("%s: key %q: use %q", where, key, otherKeys[key])
					case key == "pod" && isID.MatchString(value):
						t.Errorf(`%s: "pod" is %s, an ID: the pod's namespace/name goes under "pod", its ID under "sandbox"`, where, value)
					case key == "sandbox" && !isID.MatchString(value):
						t.Errorf(`%s: "sandbox" is %s, not an ID`, where, value)
					}
					seen[key]++
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen["pod"] < 10 || seen["sandbox"] < 10 {
		t.Errorf("found %d pod and %d sandbox keys; the walk missed the log calls", seen["pod"], seen["sandbox"])
	}
}

// source prints an expression as written.
func source(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	printer.Fprint(&b, fset, e)
	return b.String()
}
