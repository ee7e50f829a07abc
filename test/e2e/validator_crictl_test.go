package e2e

import (
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// TestCrictl_RequiredPluginsGatePods: with the default validator enabled,
// a pod that names a required plugin (annotation
// required-plugins.noderesource.dev/pod) which is not connected is refused
// before any plugin sets it up, naming the plugin; one whose required
// plugin is there runs.
func TestCrictl_RequiredPluginsGatePods(t *testing.T) {
	d := newDaemon(t, daemonConfig{podnet: true, extra: "\n[validator]\nenable = true\n"})
	before := testutil.NetNSNames("nrinet-*")

	pod := d.writePod("needs-audit", nil, false)
	d.annotatePod(pod, map[string]string{"required-plugins.noderesource.dev/pod": `["audit"]`})
	_, errOut, err := d.crictl("runp", pod)
	errOut = strings.ReplaceAll(errOut, `\"`, `"`)
	for _, want := range []string{"FailedPrecondition", `validator "00-default-validator" rejected pod`, `required plugin "audit"`, `required-plugins.noderesource.dev/pod`} {
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("crictl runp of a pod requiring a missing plugin: %v\n%s\nwant it to say %q", err, errOut, want)
		}
	}
	if got := d.pods(); len(got) != 0 {
		t.Errorf("crictl pods = %v after a refused runp", got)
	}
	if leaked := testutil.LeakedNetNS("nrinet-*", before, testutil.ForeignNetNSGrace); len(leaked) != 0 {
		t.Errorf("network namespaces leaked: %v", leaked)
	}

	ok := d.writePod("needs-podnet", nil, false)
	d.annotatePod(ok, map[string]string{"required-plugins.noderesource.dev/pod": `["10-podnet"]`})
	id := d.runp(ok)
	d.must("stopp", id)
	d.must("rmp", id)
}
