// Package deploy holds nrinet's Kubernetes manifests, for kustomize:
// base/, overlays/nri-podnet and overlays/nri-cni, and the Helm chart
// helm/nrinet, which makes the same objects (docs/deploy.md). It has no
// code. Its tests check that the configuration files the ConfigMaps carry
// are ones the plugins accept, decoded as they decode them, and that the
// chart's values schema takes exactly the keys of nri-podnet's
// configuration it leaves to the values; the manifests as a whole are
// rendered and checked by deploy/test, a module of its own.
package deploy
