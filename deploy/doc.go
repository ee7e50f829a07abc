// Package deploy holds nrinet's Kubernetes manifests, for kustomize:
// base/, overlays/nri-podnet and overlays/nri-cni (docs/deploy.md). It has
// no code. Its test checks that the configuration files the ConfigMaps
// carry are ones the plugins accept, decoded as they decode them; the
// manifests as a whole are rendered and checked by deploy/test, a module
// of its own.
package deploy
