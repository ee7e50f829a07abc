package deploytest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nrinet/nrinet/deploy/test/helmchart"
)

// chartDir is nrinet's Helm chart.
const chartDir = "../helm/nrinet"

// chartCase is a set of the chart's values and the kustomization that
// makes the same objects for the same settings.
type chartCase struct {
	name          string
	kustomization string // rendered with kustomize's library
	flags         helmchart.Flags
	// differ are the objects (kind namespace/name) that must differ from
	// the kustomization's: a case that shows that the comparison sees
	// what differs. Empty: every object is the same.
	differ []string
}

var chartCases = []chartCase{
	{name: "defaults", kustomization: "../overlays/nri-podnet"},
	{name: "nri-cni", kustomization: "../overlays/nri-cni", flags: set("mode=nri-cni")},
	{
		name: "docs example", kustomization: "testdata/my-cluster",
		flags: helmchart.Flags{Files: []string{"testdata/my-cluster/values.yaml"}},
	},
	{
		name: "no policy, every setting", kustomization: "testdata/no-policy",
		flags: helmchart.Flags{Files: []string{"testdata/no-policy/values.yaml"}},
	},
	{
		name: "nri-cni from a registry", kustomization: "testdata/nri-cni-registry",
		flags: helmchart.Flags{Files: []string{"testdata/nri-cni-registry/values.yaml"}},
	},
	{
		name: "docs example as flags", kustomization: "testdata/my-cluster",
		flags: helmchart.Flags{
			Set: []string{
				"image.repository=registry.example.com/nrinet/nri-podnet", "image.tag=v0.1.0",
				`clusterCIDR=10.42.0.0/16\,fd00:10:42::/56`,
			},
			SetString: []string{
				"extraEnv[0].name=KUBERNETES_SERVICE_HOST", "extraEnv[0].value=192.0.2.10",
				"extraEnv[1].name=KUBERNETES_SERVICE_PORT", "extraEnv[1].value=6443",
			},
		},
	},
	// The comparison sees a difference of one setting.
	{
		name: "networkPolicy=false is not the default", kustomization: "../overlays/nri-podnet",
		flags:  set("networkPolicy=false"),
		differ: []string{"ClusterRole /nri-podnet", "DaemonSet nrinet-system/nri-podnet"},
	},
	{
		name: "a tag is not latest", kustomization: "../overlays/nri-podnet",
		flags:  set("image.tag=v0.1.0"),
		differ: []string{"DaemonSet nrinet-system/nri-podnet"},
	},
	{
		name: "the cluster CIDRs are not the default", kustomization: "../overlays/nri-podnet",
		flags:  set("clusterCIDR=10.42.0.0/16"),
		differ: []string{"ConfigMap nrinet-system/nri-podnet-config"},
	},
	{
		name: "no opt-in label is not the default", kustomization: "../overlays/nri-podnet",
		flags:  set("podNetworkLabel="),
		differ: []string{"DaemonSet nrinet-system/nri-podnet"},
	},
}

// set is helm's --set of each assignment.
func set(assignments ...string) helmchart.Flags {
	return helmchart.Flags{Set: assignments}
}

// vals reads the case's values as helm's flags do.
func (c chartCase) vals(t *testing.T) map[string]any {
	t.Helper()
	v, err := helmchart.Values(c.flags)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// renderChart renders the chart with vals and decodes its objects as
// render decodes a kustomization's.
func renderChart(t *testing.T, vals map[string]any) objects {
	t.Helper()
	manifest, err := helmchart.Render(context.Background(), chartDir, vals)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, chartDir, splitYAML(manifest))
}

// TestChart_MatchesKustomize renders the chart with each case's values
// and the case's kustomization, and compares the objects, decoded
// strictly into their k8s.io/api types: the same objects, or exactly the
// case's differ.
func TestChart_MatchesKustomize(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			got := byName(t, renderChart(t, c.vals(t)))
			want := byName(t, render(t, c.kustomization))
			var differ []string
			for _, key := range slices.Sorted(keys(got, want)) {
				if d := cmp.Diff(want[key], got[key]); d != "" {
					differ = append(differ, key)
					if !slices.Contains(c.differ, key) {
						t.Errorf("%s: the chart's (+) differs from %s's (-):\n%s", key, c.kustomization, d)
					}
				}
			}
			for _, key := range c.differ {
				if !slices.Contains(differ, key) {
					t.Errorf("%s: the chart's is %s's, and it should differ", key, c.kustomization)
				}
			}
		})
	}
}

// TestChart_Lint lints the chart with each case's values as `helm lint
// --strict` does: no message but those this chart decided on.
func TestChart_Lint(t *testing.T) {
	// No icon: nrinet has none.
	accepted := []string{"[INFO] Chart.yaml: icon is recommended"}
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			msgs, err := helmchart.Lint(chartDir, c.vals(t))
			if err != nil && len(msgs) == 0 {
				t.Fatal(err) // the linter's own failure; else the messages say it
			}
			for _, m := range msgs {
				if !slices.Contains(accepted, m.Error()) {
					t.Errorf("lint: %v", m)
				}
			}
		})
	}
}

// byName returns every object, as the unstructured content of its typed
// decoding, by "kind namespace/name".
func byName(t *testing.T, o objects) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	addAll(t, m, "Namespace", o.namespaces)
	addAll(t, m, "ServiceAccount", o.serviceAccounts)
	addAll(t, m, "ConfigMap", o.configMaps)
	addAll(t, m, "ClusterRole", o.clusterRoles)
	addAll(t, m, "ClusterRoleBinding", o.clusterRoleBindings)
	addAll(t, m, "DaemonSet", o.daemonSets)
	return m
}

// addAll adds the objects xs of kind to m (byName).
func addAll[T any, P interface {
	*T
	metav1.Object
}](t *testing.T, m map[string]map[string]any, kind string, xs []T) {
	t.Helper()
	for i := range xs {
		x := P(&xs[i])
		key := kind + " " + x.GetNamespace() + "/" + x.GetName()
		if _, ok := m[key]; ok {
			t.Errorf("%s twice", key)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(x)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		m[key] = u
	}
}

// keys returns the keys of both maps.
func keys(a, b map[string]map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, ok := a[k]; !ok && !yield(k) {
				return
			}
		}
	}
}

// splitYAML splits a stream of YAML documents, as kubectl kustomize and
// helm template write them, into its documents; empty ones are left out.
func splitYAML(s string) [][]byte {
	var docs [][]byte
	for doc := range strings.SplitSeq("\n"+s, "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, []byte(doc))
		}
	}
	return docs
}
