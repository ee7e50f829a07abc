package containerd_test

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// What adopting nrinet may change in containerd's go.mod besides the two
// replace lines: modules it adds and modules it drops. Any other change,
// a requirement moving to another version above all, is a regression of
// the promise in docs/compat.md that nrinet's requirements are no newer
// than containerd's.
var (
	goModAdded = map[string]string{
		"github.com/nrinet/nrinet":          "what compat/nri is built on",
		"github.com/planetscale/vtprotobuf": "nrinet's generated marshal code uses its helpers",
	}
	goModDropped = map[string]string{
		"github.com/tetratelabs/wazero": "upstream's WASM runtime; nrinet runs no WASM plugins",
		"github.com/knqyf263/go-plugin": "upstream's WASM plugin interface",
	}
)

// requirementLine matches a requirement in a go.mod diff line, inside or
// outside a require block: "+\tmodule version // indirect".
var requirementLine = regexp.MustCompile(`^([+-])\s*(?:require\s+)?([^\s()]+)\s+(v[^\s]+)(\s*//.*)?$`)

// checkGoModDiff reads the unified diff hack/containerd.sh writes
// (go.mod.diff) and returns every change that is not allowed: a
// requirement whose version moved, a module added or dropped that is not
// listed above, a changed go or toolchain directive, or a replace other
// than the two of github.com/containerd/nri and github.com/nrinet/nrinet.
func checkGoModDiff(diff string) []string {
	removed, added := map[string]string{}, map[string]string{}
	var problems []string
	sc := bufio.NewScanner(strings.NewReader(diff))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "+++") || strings.HasPrefix(line, "---") || (!strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "-")) {
			continue
		}
		body := strings.TrimSpace(line[1:])
		switch {
		case body == "":
			continue
		case strings.HasPrefix(body, "replace "):
			target := strings.Fields(body)[1]
			if line[0] != '+' || (target != "github.com/containerd/nri" && target != "github.com/nrinet/nrinet") {
				problems = append(problems, "unexpected replace change: "+line)
			}
			continue
		case strings.HasPrefix(body, "go ") || strings.HasPrefix(body, "toolchain "):
			problems = append(problems, "the go directive changed: "+line)
			continue
		}
		m := requirementLine.FindStringSubmatch(line)
		if m == nil {
			problems = append(problems, "unrecognized go.mod change: "+line)
			continue
		}
		if m[1] == "-" {
			removed[m[2]] = m[3]
		} else {
			added[m[2]] = m[3]
		}
	}
	for mod, v := range added {
		old, was := removed[mod]
		switch {
		case was && old != v:
			problems = append(problems, fmt.Sprintf("containerd's requirement %s moved from %s to %s", mod, old, v))
		case !was && goModAdded[mod] == "":
			problems = append(problems, fmt.Sprintf("new requirement %s %s", mod, v))
		}
	}
	for mod, v := range removed {
		if _, still := added[mod]; !still && goModDropped[mod] == "" {
			problems = append(problems, fmt.Sprintf("requirement %s %s dropped", mod, v))
		}
	}
	slices.Sort(problems)
	return problems
}
