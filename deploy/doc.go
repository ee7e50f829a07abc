// Package deploy holds nrinet's Kubernetes manifests, for kustomize:
// base/, overlays/nri-podnet and overlays/nri-cni, and the Helm chart
// helm/nrinet, which makes the same objects (docs/deploy.md). It has no
// code. Its tests check that the configuration files the ConfigMaps carry
// are ones the plugins accept, decoded as they decode them, and that the
// chart's values schema takes exactly the keys of nri-podnet's
// configuration it leaves to the values; the manifests as a whole are
// rendered and checked by deploy/test.
//
// deploy is a Go module, outside go.work: Helm v4 and kustomize, which
// deploy/test uses, require newer versions of modules the commands link
// (gRPC, bbolt, logrus, x/net, kube-openapi, ...), and in the workspace
// they would move those of make build. Alone (GOWORK=off) they move only
// this module's tests: the plugins' decoders are built here at Helm's
// versions, which decode the same configuration. `make deploy-test` runs
// the module's tests (docs/dev/modules.md).
package deploy
