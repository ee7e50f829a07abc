// Package containerde2e is the containerd end-to-end suite (make
// e2e-containerd): containerd v2.4.2, built by hack/containerd.sh stock or
// on nrinet's compat module, runs Kubernetes-style pods with runc, driven
// by the real crictl, with NRI plugins as separate processes on its NRI
// socket. Each scenario starts its own containerd with its own root, state,
// sockets, CRI and CNI configuration under one temporary directory, and
// checks afterwards that nothing of it is left on the host.
//
// The images are built offline at test time with go-containerregistry: a
// pause image from cmd/pause (a static Go program) and a busybox image
// from Debian's busybox-static, written as OCI image archives and imported
// with `ctr -n k8s.io images import`.
//
// TestContainerdIntegration (make containerd-integration) runs
// containerd's own NRI integration tests, its integration package's test
// binary, against stock containerd and containerd on nrinet in both
// network modes, each a containerd instance of this suite set up as
// containerd's CI sets it up, and compares the outcomes with stock's
// (testdata/integration-baseline.json). It runs only with
// NRINET_CONTAINERD_INTEGRATION=1 as well.
//
// The tests need root, runc, /bin/busybox (a static build), crictl and the
// CNI reference plugins, and run only with NRINET_CONTAINERD_E2E=1; without
// it they skip. docs/dev/containerd-suites.md ("End-to-end suite") describes the
// scenarios and how to run one.
package containerde2e
