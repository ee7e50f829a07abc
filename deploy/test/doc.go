// Package deploytest checks the Kubernetes manifests under deploy/: it
// renders each overlay with kustomize's own library (krusty, as
// `kubectl apply -k` does), decodes every object strictly into the
// k8s.io/api types, and checks what docs/deploy.md promises: host network,
// nri-podnet not privileged with exactly the capabilities NET_ADMIN and
// SYS_ADMIN (nri-cni privileged, for the CNI plugins it runs), RBAC
// limited to reading Node objects, the images `make image`
// writes, probes on the health port, arguments made of the plugins' flags,
// and configuration files that name the mounted directories. (That the
// plugins accept those files, decoded strictly as they decode them, is
// checked by package deploy.)
//
// It checks the Helm chart deploy/helm/nrinet too (chart_test.go, with
// package helmchart, which renders and lints it with Helm v4's library):
// for the default values and other sets of values (testdata/*/values.yaml,
// beside the kustomization.yaml of the same settings) the chart's objects
// equal the kustomize overlay's, decoded the same way; and it lints
// clean. Its monitoring objects (chart_monitoring_test.go) equal
// deploy/monitoring's files, and decode strictly into the Prometheus
// Operator's types. cmd/manifest renders the chart into the one manifest
// `make manifest` writes; cmd/helm-release installs, upgrades and
// uninstalls it on a cluster with Helm's action package (test/kube-e2e's
// TestHelm runs it).
//
// It is part of the Go module deploy (outside go.work, so that Helm's
// and kustomize's requirements move none of the commands': see package
// deploy). `make deploy-test` runs it (`make helm-test`, the chart's
// tests only); no cluster and no network are needed (cmd/helm-release's
// tests run it against an address where no API server listens).
package deploytest
