package runtimesuite

import (
	"bufio"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// GoModRules says what adopting nrinet may change in a runtime's go.mod
// besides the two replace lines: modules it adds and modules it drops, each
// with the reason. Any other change, a requirement moving to another
// version above all, breaks the promise of docs/dev/modules.md that the
// modules a runtime links require nothing newer than the runtime does.
type GoModRules struct {
	// Runtime names the runtime in the problems Check reports.
	Runtime string
	// Added and Dropped map a module path to why it may be added or
	// dropped.
	Added, Dropped map[string]string
}

// requirementLine matches a requirement in a go.mod diff line, inside or
// outside a require block: "+\tmodule version // indirect".
var requirementLine = regexp.MustCompile(`^([+-])\s*(?:require\s+)?([^\s()]+)\s+(v[^\s]+)(\s*//.*)?$`)

// Check reads the unified diff a build script writes (go.mod.diff) and
// returns every change that is not allowed: a requirement whose version
// moved, a module added or dropped that is not in Added or Dropped, a
// changed go or toolchain directive, or a replace other than the two of
// github.com/containerd/nri and github.com/nrinet/nrinet.
func (g GoModRules) Check(diff string) []string {
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
			problems = append(problems, fmt.Sprintf("%s's requirement %s moved from %s to %s", g.Runtime, mod, old, v))
		case !was && g.Added[mod] == "":
			problems = append(problems, fmt.Sprintf("new requirement %s %s", mod, v))
		}
	}
	for mod, v := range removed {
		if _, still := added[mod]; !still && g.Dropped[mod] == "" {
			problems = append(problems, fmt.Sprintf("requirement %s %s dropped", mod, v))
		}
	}
	slices.Sort(problems)
	return problems
}

// AdoptionRules are the go.mod rules of adopting compat/nri, the same for
// every runtime (docs/dev/modules.md): nrinet's root module and vtprotobuf
// added, upstream's two WASM modules dropped.
func AdoptionRules(runtime string) GoModRules {
	return GoModRules{
		Runtime: runtime,
		Added: map[string]string{
			"github.com/nrinet/nrinet":          "what compat/nri is built on",
			"github.com/planetscale/vtprotobuf": "nrinet's generated marshal code uses its helpers",
		},
		Dropped: map[string]string{
			"github.com/tetratelabs/wazero": "upstream's WASM runtime; nrinet runs no WASM plugins",
			"github.com/knqyf263/go-plugin": "upstream's WASM plugin interface",
		},
	}
}
