// Command image builds the container images of nrinet's NRI plugins,
// nri-podnet and nri-cni, as OCI image archives, offline and without Docker
// (`make image` runs it from the repository root):
//
//	go run ./hack/image [-version V] [-out _output/images] [-arch GOARCH] [component...]
//
// For each component (default: all) it builds the static binary
// (CGO_ENABLED=0 go build -trimpath, the version stamped into
// internal/version) of ./cmd/<component> for linux/<arch> and writes
// <out>/<component>.tar: one layer holding the binary at
// /usr/local/bin/<component>, which is the entrypoint, every file owned by
// root and dated at the Unix epoch (package internal/imagebuild). The
// archive names the image twice, localhost/nrinet/<component>:<version>
// and localhost/nrinet/<component>:latest, the tag the manifests under
// deploy/ run. Import it into a node's containerd with
//
//	ctr -n k8s.io images import _output/images/nri-podnet.tar
//
// The version defaults to `git describe --always --dirty`, or "devel"
// outside a git checkout. The same sources and version give the same
// archives, byte for byte.
//
// The images hold the plugin binary only. nri-cni's does not carry the CNI
// reference plugins: its DaemonSet (deploy/overlays/nri-cni) mounts the
// node's /opt/cni/bin and /etc/cni/net.d, so the pods of the node keep the
// plugins and configuration the node already has (docs/deploy.md).
package main
