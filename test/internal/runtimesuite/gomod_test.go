package runtimesuite

import (
	"strings"
	"testing"
)

func TestCheckGoModDiff(t *testing.T) {
	header := "--- a/go.mod\n+++ b/go.mod\n@@ -1,3 +1,3 @@\n"
	for _, tc := range []struct {
		name string
		diff string
		want []string
	}{
		{"the expected change", header +
			"-\tgithub.com/knqyf263/go-plugin v0.9.0 // indirect\n" +
			"+\tgithub.com/nrinet/nrinet v0.0.0 // indirect\n" +
			" \tgithub.com/pkg/errors v0.9.1 // indirect\n" +
			"+\tgithub.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect\n" +
			"-\tgithub.com/tetratelabs/wazero v1.11.0 // indirect\n" +
			"+\n+replace github.com/containerd/nri => /src/compat/nri\n+\n+replace github.com/nrinet/nrinet => /src\n", nil},
		{"a moved requirement", header +
			"-\tgithub.com/containerd/ttrpc v1.2.9\n+\tgithub.com/containerd/ttrpc v1.2.10\n",
			[]string{"containerd's requirement github.com/containerd/ttrpc moved from v1.2.9 to v1.2.10"}},
		{"a requirement turned indirect keeps its version", header +
			"-\tgithub.com/containerd/ttrpc v1.2.9\n+\tgithub.com/containerd/ttrpc v1.2.9 // indirect\n", nil},
		{"the go directive", header + "-go 1.26.6\n+go 1.26.8\n", []string{"the go directive changed: +go 1.26.8", "the go directive changed: -go 1.26.6"}},
		{"a new module", header + "+\tgithub.com/BurntSushi/toml v1.6.0 // indirect\n", []string{"new requirement github.com/BurntSushi/toml v1.6.0"}},
		{"a dropped module", header + "-\tgithub.com/pkg/errors v0.9.1 // indirect\n", []string{"requirement github.com/pkg/errors v0.9.1 dropped"}},
		{"another replace", header + "+replace github.com/containerd/ttrpc => ../ttrpc\n", []string{"unexpected replace change: +replace github.com/containerd/ttrpc => ../ttrpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := GoModRules{
				Runtime: "containerd",
				Added:   map[string]string{"github.com/nrinet/nrinet": "nrinet", "github.com/planetscale/vtprotobuf": "helpers"},
				Dropped: map[string]string{"github.com/tetratelabs/wazero": "WASM", "github.com/knqyf263/go-plugin": "WASM"},
			}
			got := rules.Check(tc.diff)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
		})
	}
}
