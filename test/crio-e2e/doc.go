// Package crioe2e is nrinet's end-to-end suite for CRI-O (make e2e-crio):
// stock CRI-O v1.36.3 and CRI-O built on nrinet with nrinet's patch
// series (hack/crio.sh), each started as a separate process with conmon
// and runc, driven by crictl, pulling images the suite builds offline from
// a registry on 127.0.0.1. It checks stock CRI-O with CNI (the baseline),
// CRI-O on nrinet in network_mode "cni" (the same pod shape), and
// network_mode "nri" with nri-podnet and with nri-cni, the same binaries
// as for containerd; nri-podnet refusing stock CRI-O; CRI-O and the plugin
// killed with pods running; and that nothing is left behind.
//
// The suite runs as root with NRINET_CRIO_E2E=1 and skips otherwise.
package crioe2e
