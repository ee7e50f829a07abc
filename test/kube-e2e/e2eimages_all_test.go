package kubee2e

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// The images the [Conformance] specs of every SIG run (make
// conformance-all: conformance/all/selected-specs.txt) besides e2eImages,
// under the names and tags of Kubernetes' test/utils/image/manifest.go
// (TestConformanceAllImages_RefsMatchManifest checks them against it):
// agnhost's previous tag (AgnhostPrev: the Deployment, DaemonSet,
// StatefulSet, Pods and kubectl diff specs roll from it to agnhost),
// nautilus (kubectl's Update Demo specs), nonewprivs (the
// allowPrivilegeEscalation specs), and sample-apiserver with etcd (the
// Aggregator spec). writeImages builds them offline as it does
// e2eImages; docs/dev/kube-e2e.md says what each holds and how it differs
// from the published image.
const (
	agnhostPrevImage     = e2eRegistry + "/agnhost:2.55"
	nautilusImage        = e2eRegistry + "/nautilus:1.8"
	nonewprivsImage      = e2eRegistry + "/nonewprivs:1.4"
	sampleAPIServerImage = e2eRegistry + "/sample-apiserver:1.29.2"
)

// etcdImage holds the etcd hack/kube.sh builds (internal/pins), under the
// reference Kubernetes' e2e manifest gives it (TestE2EImages_RefsMatchManifest
// checks that the two agree).
var etcdImage = "registry.k8s.io/etcd:" + strings.TrimPrefix(pins.Etcd, "v") + "-0"

// conformanceAllImages are the images TestConformanceAll writes besides
// e2eImages, in order.
var conformanceAllImages = []e2eImage{
	{agnhostPrevImage, agnhostFiles},
	{nautilusImage, nautilusFiles},
	{nonewprivsImage, nonewprivsFiles},
	{sampleAPIServerImage, sampleAPIServerFiles},
	{etcdImage, etcdFiles},
}

// buildConformanceAllBins builds the programs of conformanceAllImages
// that hack/kube.sh does not (test/images/nonewprivs and
// k8s.io/sample-apiserver of Kubernetes' module in kubeSrc, static, as
// hack/kube.sh builds agnhost there: no workspace, -mod=mod, so that the
// module cache of that build serves it) into outDir, and returns bins with
// them and hack/kube.sh's etcd of kubeBin.
func buildConformanceAllBins(bins e2eImageBins, kubeBin, outDir string) (e2eImageBins, error) {
	env := []string{"GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false", "GOTOOLCHAIN=local"}
	if err := testutil.GoBuild(bins.KubeSrc, outDir, env, "./test/images/nonewprivs", "k8s.io/sample-apiserver"); err != nil {
		return bins, fmt.Errorf("the programs of the conformance-all images: %w", err)
	}
	bins.Nonewprivs = filepath.Join(outDir, "nonewprivs")
	bins.SampleAPIServer = filepath.Join(outDir, "sample-apiserver")
	bins.Etcd = filepath.Join(kubeBin, "etcd")
	return bins, nil
}

// alpinePasswd and alpineGroup are /etc/passwd and /etc/group of the
// images on Alpine (the users the specs name: root and nobody).
const (
	alpinePasswd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n"
	alpineGroup  = "root:x:0:root\nnogroup:x:65534:\n"
)

// nautilusFiles is nautilus's image (test/images/nautilus: agnhost's
// image with html/nautilus.jpg and html/data.json of Kubernetes' source in
// /, which agnhost's test-webserver serves): agnhostFiles with those two
// files. CMD ["test-webserver"], ENTRYPOINT agnhost's.
func nautilusFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, cfg, err := agnhostFiles(bins)
	if err != nil {
		return nil, v1.Config{}, err
	}
	html := filepath.Join(bins.KubeSrc, "test", "images", "nautilus", "html")
	more, err := readFiles(map[string]string{
		"nautilus.jpg": filepath.Join(html, "nautilus.jpg"),
		"data.json":    filepath.Join(html, "data.json"),
	})
	if err != nil {
		return nil, v1.Config{}, err
	}
	for i := range more {
		more[i].mode = 0o644
	}
	cfg.Cmd = []string{"test-webserver"}
	return append(files, more...), cfg, nil
}

// nonewprivsFiles is nonewprivs's image (test/images/nonewprivs: Alpine
// with nnp, which prints its effective uid, set-user-ID root): busybox's
// applets and test/images/nonewprivs built from Kubernetes' source as
// /usr/local/bin/nnp, mode 4755. CMD ["nnp"].
func nonewprivsFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	if bins.Nonewprivs == "" {
		return nil, v1.Config{}, fmt.Errorf("no nnp program (buildConformanceAllBins builds it)")
	}
	files, err := busyboxFiles(bins.Busybox)
	if err != nil {
		return nil, v1.Config{}, err
	}
	nnp, err := readFiles(map[string]string{"usr/local/bin/nnp": bins.Nonewprivs})
	if err != nil {
		return nil, v1.Config{}, err
	}
	nnp[0].mode |= fs.ModeSetuid
	files = append(files, nnp...)
	files = append(files, baseFiles(alpinePasswd, alpineGroup)...)
	return files, v1.Config{Cmd: []string{"nnp"}, Env: []string{defaultPath}}, nil
}

// sampleAPIServerFiles is sample-apiserver's image
// (test/images/sample-apiserver: Alpine with /sample-apiserver, which the
// published 1.29.2 builds from k8s.io/sample-apiserver v0.29.2): busybox's
// applets and k8s.io/sample-apiserver v0.37.2 (the module Kubernetes
// v1.37.2 requires) as /sample-apiserver. ENTRYPOINT
// ["/sample-apiserver"].
func sampleAPIServerFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	if bins.SampleAPIServer == "" {
		return nil, v1.Config{}, fmt.Errorf("no sample-apiserver program (buildConformanceAllBins builds it)")
	}
	files, err := busyboxFiles(bins.Busybox)
	if err != nil {
		return nil, v1.Config{}, err
	}
	more, err := readFiles(map[string]string{"sample-apiserver": bins.SampleAPIServer})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files, more...)
	files = append(files, baseFiles(alpinePasswd, alpineGroup)...)
	return files, v1.Config{Entrypoint: []string{"/sample-apiserver"}, Env: []string{defaultPath}}, nil
}

// etcdFiles is etcd's image (registry.k8s.io/etcd: etcd with etcdctl,
// etcdutl and the migration tools in /usr/local/bin, on distroless):
// hack/kube.sh's etcd (v3.7.0, the version of the tag) as
// /usr/local/bin/etcd and nothing else, no shell: the Aggregator spec runs
// /usr/local/bin/etcd, with its own command.
func etcdFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	if bins.Etcd == "" {
		return nil, v1.Config{}, fmt.Errorf("no etcd program (buildConformanceAllBins sets it)")
	}
	files, err := readFiles(map[string]string{"usr/local/bin/etcd": bins.Etcd})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files, baseFiles("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
		"root:x:0:\nnobody:x:65534:\n")...)
	return files, v1.Config{Env: []string{defaultPath}}, nil
}
