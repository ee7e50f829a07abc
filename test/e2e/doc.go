// Package e2e runs the built nrinetd and nri-podnet binaries as root and
// drives them with the real crictl, as an operator would: pods created,
// inspected, listed, stopped and removed over the CRI socket, the daemon
// killed and restarted, a required network plugin missing; and their
// /metrics against docs/metrics.md (TestMetrics_Documented, with nri-cni).
//
// The tests skip unless they run as root (in CI, CI=true, they fail
// instead). TestMain builds nrinetd, nri-podnet and nri-cni, and crictl
// (sigs.k8s.io/cri-tools v1.37.0, through the module proxy) once into
// os.TempDir()/nrinet-crictl-v1.37.0, shared by later runs; NRINET_CRICTL
// names a crictl binary to use instead.
//
// Pods get addresses from 198.18.211.0/24 and fd00:198:18:211::/64 on a
// bridge named nrdb<8 hex digits>; every bridge and namespace a test
// creates is deleted by exact name when it ends.
package e2e
