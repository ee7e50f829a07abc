// Package helmchart renders and lints nrinet's Helm chart
// (deploy/helm/nrinet) with Helm v4 as a library, as `helm template`
// (`helm install --dry-run=client`) and `helm lint --strict` do, without a
// cluster and without the helm command.
//
// [Render] returns the chart's manifest for some values, the objects in
// Helm's install order (the Namespace first); [Values] reads values as
// helm's -f and --set flags do; [Lint] returns the linter's messages.
// deploy/test compares the rendered objects with the kustomize overlays'
// and `make manifest` (cmd/manifest) writes the release's manifest with
// Render.
package helmchart
