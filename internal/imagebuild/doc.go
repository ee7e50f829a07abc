// Package imagebuild writes container images as OCI image archives, offline
// and without Docker, with github.com/google/go-containerregistry: one layer
// built from a list of files, the image configuration (entrypoint, platform)
// and a tarred OCI image layout whose index names the image, the form
// `ctr -n k8s.io images import` takes.
//
// The output depends on the inputs only: every file of the layer and of the
// archive is owned by root and dated at the Unix epoch, and the archive's
// entries are in lexical order, so the same files give the same image digest
// and the same archive bytes.
//
// hack/image uses it to build the nri-podnet and nri-cni images that
// `make image` writes; Ref and LatestTag name those images, so that the
// manifests under deploy/ can be checked against them. The end-to-end
// suites of containerd and CRI-O build their pause and busybox images
// with it (Pause, Busybox), and serve them from a Registry on 127.0.0.1,
// since CRI-O can only pull.
package imagebuild
