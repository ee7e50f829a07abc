package crioe2e

import (
	"testing"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/pins"
)

// critestVariant is a CRI-O setup critest runs against.
type critestVariant struct {
	critest.Variant
	opts crioOptions
	// podnet starts nri-podnet, the pods' network in network_mode nri.
	podnet bool
}

// critestVariants are the CRI-O setups critest runs against, by name:
// stock CRI-O (the reference), and CRI-O on nrinet in network_mode cni and
// nri (with nri-podnet), with nri_plugin_request_timeout raised
// (critest.RequestTimeout).
var critestVariants = []critestVariant{
	{Variant: critest.Variant{Name: "stock"}, opts: crioOptions{nri: "upstream", nriRequestTimeout: critest.RequestTimeout}},
	{Variant: critest.Variant{Name: "compat", Strict: true, Reference: "stock"},
		opts: crioOptions{nri: "compat", mode: "cni", nriRequestTimeout: critest.RequestTimeout}},
	{Variant: critest.Variant{Name: "compat-nri-podnet", Strict: true, Reference: "stock"}, podnet: true,
		opts: crioOptions{nri: "compat", mode: "nri", required: []string{"podnet"}, nriRequestTimeout: critest.RequestTimeout}},
}

// TestCritest runs critest v1.37.0's specs that match NRINET_CRITEST_FOCUS
// (default "NRI") against stock CRI-O and CRI-O on nrinet in network_mode
// cni and nri (with nri-podnet), all pulling critest's test image from the
// suite's registry in place of registry.k8s.io, and reports each spec's
// outcome per runtime. Every spec that passes on stock CRI-O must pass on
// nrinet, in both modes. See docs/dev/crio-suites.md, "critest".
func TestCritest(t *testing.T) {
	skipUnlessEnabled(t)
	var variants []critest.Variant
	for _, v := range critestVariants {
		variants = append(variants, v.Variant)
	}
	critest.Suite(t, critest.Config{
		Version: pins.CRITools, Make: "critest-crio", Prefix: "crio-", Variants: variants,
		Start: func(t *testing.T, v critest.Variant) critest.Target {
			for _, cv := range critestVariants {
				if cv.Name == v.Name {
					c := startCrio(t, cv.opts)
					if cv.podnet {
						c.startPodnet()
					}
					c.waitNetworkReady(true)
					return critest.Target{Endpoint: "unix://" + c.sock, NRISocket: c.nriSock, CrictlConfig: c.cri.Config, Dir: c.dir}
				}
			}
			t.Fatalf("no critest variant %s", v.Name)
			return critest.Target{}
		},
	})
}
