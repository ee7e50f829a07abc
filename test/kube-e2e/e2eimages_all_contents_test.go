package kubee2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nrinet/nrinet/internal/pins"
)

// wantAllImages is what TestConformanceAllImages expects of each of
// conformanceAllImages (wantImage).
var wantAllImages = map[string]wantImage{
	agnhostPrevImage: wantImages[agnhostImage],
	nautilusImage: {
		entrypoint: []string{"/agnhost"}, cmd: []string{"test-webserver"},
		files: []string{"agnhost", "nautilus.jpg", "data.json"},
		runs: []imageRun{
			// kubectl's Update Demo specs read data.json through the
			// apiserver's pod proxy and want the image's name in it.
			{[]string{"cat", "/data.json"}, `"image": "nautilus.jpg"`},
			{[]string{"/agnhost", "--help"}, "test-webserver"},
		},
	},
	nonewprivsImage: {
		cmd:   []string{"nnp"},
		files: []string{"usr/local/bin/nnp"},
		runs:  []imageRun{{[]string{"nnp"}, "Effective uid: 0"}},
	},
	sampleAPIServerImage: {
		entrypoint: []string{"/sample-apiserver"},
		files:      []string{"sample-apiserver"},
		// The Aggregator spec's arguments are flags of it.
		runs: []imageRun{{[]string{"/sample-apiserver", "--help"}, "--etcd-servers"}},
	},
	etcdImage: {
		files: []string{"usr/local/bin/etcd"},
		runs:  []imageRun{{[]string{"/usr/local/bin/etcd", "--version"}, "etcd Version: " + strings.TrimPrefix(pins.Etcd, "v")}},
	},
}

// TestConformanceAllImages builds the programs of conformanceAllImages
// (buildConformanceAllBins) and the images (writeImages), and checks each
// as TestE2EImages does its own (checkE2EImage); and that nnp, set-user-ID
// root in nonewprivs's layer, prints effective uid 0 when user 1000 runs
// it, which the specs without allowPrivilegeEscalation: false expect. It
// needs hack/kube.sh's etcd and Kubernetes' source.
func TestConformanceAllImages(t *testing.T) {
	skipUnlessEnabled(t)
	if env.kubeSrc == "" {
		t.Fatal("no Kubernetes source: hack/kube.sh prints NRINET_KUBE_SRC (set it with NRINET_KUBE_BIN)")
	}
	dir := t.TempDir()
	bins, err := buildConformanceAllBins(kubeImageBins(env.kubeBin, env.kubeSrc, ""), env.kubeBin, dir)
	if err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(dir, "images")
	if err := os.Mkdir(images, 0o755); err != nil {
		t.Fatal(err)
	}
	archives, err := writeImages(images, bins, conformanceAllImages)
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != len(wantAllImages) {
		t.Errorf("%d images written, %d expected", len(archives), len(wantAllImages))
	}
	for _, img := range conformanceAllImages {
		ref := img.ref
		want, ok := wantAllImages[ref]
		if !ok {
			t.Errorf("image %s is not checked", ref)
			continue
		}
		t.Run(ref[strings.LastIndex(ref, "/")+1:], func(t *testing.T) {
			checkE2EImage(t, archives[ref], ref, want)
		})
	}
	t.Run("nnp-setuid", func(t *testing.T) { checkNNPSetuid(t, archives[nonewprivsImage]) })
}

// checkNNPSetuid checks that nonewprivs's nnp is set-user-ID root in its
// layer and, unpacked with that mode, as a runtime unpacks it, prints
// effective uid 0 when user 1000 runs it.
func checkNNPSetuid(t *testing.T, archive string) {
	tag, err := name.NewTag(nonewprivsImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want one", len(layers), err)
	}
	root := t.TempDir()
	headers, err := unpackLayer(layers[0], root)
	if err != nil {
		t.Fatal(err)
	}
	h := headers["usr/local/bin/nnp"]
	if h == nil || h.Uid != 0 || h.Mode != 0o4755 {
		t.Fatalf("usr/local/bin/nnp: %+v, want mode 4755 owned by root", h)
	}
	nnp := filepath.Join(root, "usr", "local", "bin", "nnp")
	if err := os.Chmod(nnp, fs.FileMode(0o755)|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	// The unpacked tree is root's, but for the bits unpackLayer leaves
	// out: user 1000 must be able to reach nnp.
	for d := filepath.Dir(nnp); d != filepath.Dir(root); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("/usr/local/bin/nnp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 1000, Gid: 1000}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Effective uid: 0") {
		t.Errorf("nnp as user 1000: %v, %q; want effective uid 0", err, out)
	}
}
