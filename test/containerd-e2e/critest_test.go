package containerde2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/imagebuild"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// critestVariant is a containerd setup critest runs against.
type critestVariant struct {
	critest.Variant
	opts options
	// podnet starts nri-podnet, the pods' network in network mode nri.
	podnet bool
}

// critestVariants are the containerd setups critest runs against: stock
// containerd and containerd on nrinet (CNI mode, the bridge conflist with
// portmap) with containerd's default NRI request timeout (2 s, reported
// only), the same with critest.RequestTimeout (stock is the reference),
// and network mode nri with nri-podnet. podnet starts nri-podnet.
var critestVariants = []critestVariant{
	{Variant: critest.Variant{Name: "stock-2s"}, opts: options{nri: "upstream", network: networkCNI, portmap: true}},
	{Variant: critest.Variant{Name: "compat-2s"}, opts: options{nri: "compat", network: networkCNI, portmap: true}},
	{Variant: critest.Variant{Name: "stock"}, opts: options{nri: "upstream", network: networkCNI, portmap: true, nriRequestTimeout: critest.RequestTimeout}},
	{Variant: critest.Variant{Name: "compat", Strict: true, Reference: "stock"},
		opts: options{nri: "compat", network: networkCNI, portmap: true, nriRequestTimeout: critest.RequestTimeout}},
	{Variant: critest.Variant{Name: "compat-nri-podnet", Strict: true, Reference: "stock"}, podnet: true,
		opts: options{nri: "compat", network: networkNRI, requiredNetworkPlugins: []string{"podnet"}, nriRequestTimeout: critest.RequestTimeout}},
}

// critestFocus is make critest's default focus: critest's NRI specs and
// its networking specs (DNS configuration, hostname, port mapping with a
// container port and with a host port, which critest checks on
// 127.0.0.1:12000 from the node).
const critestFocus = "NRI|Networking"

// The web server image of critest's port mapping specs
// (webServerTestImage in -test-images-file): critestImage with busybox's
// httpd serving an index page on port 80 as its entrypoint, in place of
// registry.k8s.io/e2e-test-images/nginx:1.14-2, which only a real
// registry has. Its registry host, under the reserved top-level domain
// .test, is served by the suite's registry only.
const (
	critestWebServerHost = "nrinet.test"
	critestWebServerRepo = "critest/httpd"
	critestWebServerTag  = "busybox"
)

// TestCritest runs critest v1.37.0's specs that match NRINET_CRITEST_FOCUS
// (default critestFocus) against stock containerd and containerd on
// nrinet (CNI mode, and network mode nri with nri-podnet), each instance
// with a registry on 127.0.0.1 that serves critest's test image in place
// of registry.k8s.io and its web server image (containerd's hosts.toml),
// and reports each spec's outcome per runtime. A failure containerd's log
// explains as its own cleanup losing the race with the shim's exit is
// excused (markShimRaces). See docs/dev/containerd-suites.md, "critest".
func TestCritest(t *testing.T) {
	skipUnlessEnabled(t)
	var variants []critest.Variant
	for _, v := range critestVariants {
		variants = append(variants, v.Variant)
	}
	var img, web v1.Image
	critest.Suite(t, critest.Config{
		Version: pins.CRITools, Make: "critest", Variants: variants, Focus: critestFocus,
		Start: func(t *testing.T, v critest.Variant) critest.Target {
			if img == nil {
				img = critestImage(t)
				web = critestWebServerImage(t, img)
			}
			cv := critestVariantNamed(t, v.Name)
			reg := startRegistry(t, map[string]v1.Image{
				critest.TestImageRepo + ":" + critest.TestImageTag: img,
				critestWebServerRepo + ":" + critestWebServerTag:   web,
			})
			hosts := filepath.Join(t.TempDir(), "certs.d")
			reg.writeHosts(t, hosts, critest.TestImageHost, critestWebServerHost)
			opts := cv.opts
			opts.registryConfigPath = hosts
			if opts.portmap {
				removePortmapTablesAfter(t)
			}
			c := startContainerd(t, opts)
			if cv.podnet {
				podnetPlugin.start(c)
				c.waitNetworkReady(true)
			}
			images := filepath.Join(c.dir, "critest-images.yaml")
			c.writeFile(images, "webServerTestImage: "+critestWebServerHost+"/"+critestWebServerRepo+":"+critestWebServerTag+"\n")
			return critest.Target{
				Endpoint: "unix://" + c.sock, NRISocket: c.nriSock, CrictlConfig: c.crictlConfig,
				Dir:            c.dir, // critest looks for crictl.yaml beside itself and in its working directory too
				TestImagesFile: images,
				Excuse:         func(res []critest.Spec) { markShimRaces(res, c.log.String()) },
				Done: func(t *testing.T) {
					t.Logf("the registry answered %d manifest requests", reg.manifestRequests())
				},
			}
		},
	})
}

// critestWebServerImage is base with /www/index.html and busybox's httpd
// serving /www on port 80 in the foreground as its entrypoint.
func critestWebServerImage(t *testing.T, base v1.Image) v1.Image {
	t.Helper()
	b, err := imagebuild.Layer([]imagebuild.File{
		{Name: "www", Mode: fs.ModeDir | 0o755},
		{Name: "www/index.html", Mode: 0o644, Data: []byte("<html><body>critest's web server: busybox httpd</body></html>\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Entrypoint, cf.Config.Cmd = []string{"/bin/httpd", "-f", "-p", "80", "-h", "/www"}, nil
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// portmapTables are the nftables tables the CNI portmap plugin's nftables
// backend creates, and leaves when its last rule goes.
var portmapTables = [][2]string{{"ip", "cni_hostport"}, {"ip6", "cni_hostport"}}

// removePortmapTablesAfter deletes, when t ends (after the instance's
// cleanup, which removes the pods), those of portmapTables that the host
// did not have before, by exact name.
func removePortmapTablesAfter(t *testing.T) {
	t.Helper()
	var had []string
	for _, tb := range portmapTables {
		if exec.Command("nft", "list", "table", tb[0], tb[1]).Run() == nil {
			had = append(had, tb[0])
		}
	}
	t.Cleanup(func() {
		for _, tb := range portmapTables {
			if slices.Contains(had, tb[0]) || exec.Command("nft", "list", "table", tb[0], tb[1]).Run() != nil {
				continue
			}
			if out, err := exec.Command("nft", "delete", "table", tb[0], tb[1]).CombinedOutput(); err != nil {
				t.Errorf("nft delete table %s %s: %v\n%s", tb[0], tb[1], err, out)
			}
		}
	})
}

// critestVariantNamed returns the variant of that name.
func critestVariantNamed(t *testing.T, name string) critestVariant {
	for _, cv := range critestVariants {
		if cv.Name == name {
			return cv
		}
	}
	t.Fatalf("no critest variant %s", name)
	return critestVariant{}
}

// critestImage is critest's test image: busybox with every applet it has.
func critestImage(t *testing.T) v1.Image {
	t.Helper()
	busybox, err := testutil.StaticBusybox()
	if err != nil {
		t.Fatal(err)
	}
	applets, err := busyboxList(busybox)
	if err != nil {
		t.Fatal(err)
	}
	img, err := busyboxImage(busybox, applets)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// sandboxIDPattern matches a sandbox or container ID as containerd makes
// them (64 hex digits).
var sandboxIDPattern = regexp.MustCompile(`\b[0-9a-f]{64}\b`)

// markShimRaces sets ShimRace on each failed spec whose failure names a
// sandbox that containerd's log says it kept after losing the cleanup
// race with the shim's exit (shimRaceLeftSandbox, the rule scenario 2 of
// the end-to-end suite applies too): critest's "should fail RunPodSandbox
// and clean up when the NRI hook errors" then finds the failed sandbox
// still listed, on stock containerd as on nrinet.
func markShimRaces(res []critest.Spec, containerdLog string) {
	for i, r := range res {
		if r.State != "failed" {
			continue
		}
		for _, id := range sandboxIDPattern.FindAllString(r.Message, -1) {
			if shimRaceLeftSandbox(containerdLog, id) {
				res[i].Excused = shimRaceExcuse(id)
				break
			}
		}
	}
}

// shimRaceExcuse says why a failure markShimRaces found is not counted.
func shimRaceExcuse(id string) string {
	return "containerd kept sandbox " + id + " in state unknown after its shim exited during the cleanup (containerd's race, stock too)"
}

// busyboxList returns the applets the busybox binary has.
func busyboxList(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	return strings.Fields(string(out)), nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
