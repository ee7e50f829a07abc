package kubee2e

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// gateEnv must be set for the suite to run: it builds Kubernetes (about 11
// minutes the first time) and runs a control plane and nodes.
const gateEnv = "NRINET_KUBE_E2E"

// suiteEnv holds what TestMain prepared once for every test. It is written
// by TestMain only, before any test runs.
type suiteEnv struct {
	// dir holds the binaries the suite built; TestMain removes it.
	dir string
	// kubeBin holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kubelet and kubectl (hack/kube.sh).
	kubeBin string
	// kubeVersion and etcdVersion are what hack/kube.sh built.
	kubeVersion, etcdVersion string
	// kubeSrc is Kubernetes' source hack/kube.sh built from
	// (NRINET_KUBE_SRC); with NRINET_KUBE_BIN set, the environment's
	// NRINET_KUBE_SRC, maybe empty.
	kubeSrc string
	// nrinetd and podnet are cmd/nrinetd and cmd/nri-podnet of this
	// checkout.
	nrinetd, podnet string
	// registry is the suite's image registry (imageRegistry), which
	// holds nri-podnet's image index built from this checkout and pushed
	// by hack/image -push (make image-push) twice: as podnetTag (its
	// version, unique per run), which the DaemonSet runs, and as
	// podnetUpgradeTag, the new version stage 3 upgrades to.
	// podnetDigests are the indexes' digests by tag.
	registry                    *imageRegistry
	podnetTag, podnetUpgradeTag string
	podnetDigests               map[string]string
	// crictl is the crictl binary.
	crictl string
}

var env suiteEnv

func TestMain(m *testing.M) {
	// A CRI-O node's OCI runtime (startCrio).
	if filepath.Base(os.Args[0]) == testutil.RuncWrapperName {
		os.Exit(testutil.RuncWrapperMain(os.Args[1:]))
	}
	os.Exit(testutil.GatedMain(m, gateEnv, "kube-e2e", setup, func() {
		if env.registry != nil {
			env.registry.stop()
		}
	}))
}

// setup finds or builds the Kubernetes binaries (hack/kube.sh, or
// NRINET_KUBE_BIN), builds nrinetd and nri-podnet into dir and
// nri-podnet's image (hack/image) into dir/images, and finds the tools.
func setup(dir string) error {
	start := time.Now()
	env = suiteEnv{dir: dir}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: the suite needs it (Debian package %s)", tool,
				map[string]string{"ip": "iproute2", "ping": "iputils-ping"}[tool])
		}
	}
	if err := findKube(); err != nil {
		return err
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl"} {
		if _, err := os.Stat(filepath.Join(env.kubeBin, b)); err != nil {
			return fmt.Errorf("%s not in %s (hack/kube.sh builds it): %v", b, env.kubeBin, err)
		}
	}
	// nrinet's commands, from the root module.
	if err := testutil.GoBuild(filepath.Join("..", ".."), dir, nil, "./cmd/nri-podnet", "./cmd/nrinetd"); err != nil {
		return err
	}
	env.nrinetd, env.podnet = filepath.Join(dir, "nrinetd"), filepath.Join(dir, "nri-podnet")
	// nri-podnet's image index (amd64 and arm64), as make image-push
	// builds and pushes it, for the DaemonSet: a tag of its own, so that
	// it is this checkout's binary the node runs, and a second version
	// for stage 3's upgrade.
	var err error
	if env.registry, err = startImageRegistry(); err != nil {
		return err
	}
	env.podnetTag = "kube-e2e-" + randHex(4)
	env.podnetUpgradeTag = env.podnetTag + "-upgrade"
	env.podnetDigests = map[string]string{}
	for _, tag := range []string{env.podnetTag, env.podnetUpgradeTag} {
		out, err := goRunOutput(filepath.Join("..", ".."), "./hack/image", "-version", tag, "-out", filepath.Join(dir, "images", tag), "-push", env.registry.repository(), "nri-podnet")
		if err != nil {
			return err
		}
		ref := podnetImageRef(tag)
		for l := range strings.Lines(out) {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "pushed" && f[1] == ref {
				env.podnetDigests[tag] = f[2]
			}
		}
		if env.podnetDigests[tag] == "" {
			return fmt.Errorf("hack/image -push did not say it pushed %s:\n%s", ref, out)
		}
	}

	env.crictl = os.Getenv("NRINET_CRICTL")
	if env.crictl == "" {
		var err error
		if env.crictl, err = goInstall(filepath.Join(os.TempDir(), "nrinet-crictl-"+pins.CRITools), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "kube-e2e: Kubernetes %s, etcd %s in %s; nri-podnet image %s; helpers ready in %v\n",
		env.kubeVersion, env.etcdVersion, env.kubeBin, env.podnetTag, time.Since(start).Round(10*time.Millisecond))
	return nil
}

// findKube sets env.kubeBin: NRINET_KUBE_BIN if set (the versions are then
// what the binaries say), else what hack/kube.sh prints, which builds the
// binaries the first time (make e2e-kube runs it first, so that the build
// is not part of go test's timeout).
func findKube() error {
	if bin := os.Getenv("NRINET_KUBE_BIN"); bin != "" {
		env.kubeBin = bin
		env.kubeVersion, env.etcdVersion = "(NRINET_KUBE_BIN)", "(NRINET_KUBE_BIN)"
		env.kubeSrc = os.Getenv("NRINET_KUBE_SRC")
		return nil
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "kube.sh"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/kube.sh: %v\n%s", err, stderr.String())
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	env.kubeBin, env.kubeVersion, env.etcdVersion = vars["NRINET_KUBE_BIN"], vars["NRINET_KUBE_VERSION"], vars["NRINET_ETCD_VERSION"]
	env.kubeSrc = vars["NRINET_KUBE_SRC"]
	if env.kubeBin == "" || env.kubeVersion == "" || env.etcdVersion == "" {
		return fmt.Errorf("hack/kube.sh printed %q; want NRINET_KUBE_{BIN,VERSION} and NRINET_ETCD_VERSION", stdout.String())
	}
	return nil
}

// goRunOutput runs go run pkg args... in dir and returns its standard
// output.
func goRunOutput(dir, pkg string, args ...string) (string, error) {
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), append([]string{"run", pkg}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go run %s %s (in %s): %v\n%s%s", pkg, strings.Join(args, " "), dir, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String(), nil
}

// podnetImageRef is the reference of nri-podnet's image with tag in the
// suite's registry.
func podnetImageRef(tag string) string {
	return env.registry.repository() + "/nri-podnet:" + tag
}

// goInstall runs `go install pkg@version` with GOBIN=dir unless dir
// already holds the binary, and returns the binary's path. The directory
// is shared with the other suites (internal/gobin does the same there),
// and processes installing into it at once take turns on a lock file.
func goInstall(dir, pkg, version string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // installed by another process meanwhile
	}
	cmd := exec.Command(cmp.Or(os.Getenv("GO"), "go"), "install", pkg+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("installing %s@%s: %v\n%s", pkg, version, err, out)
	}
	return bin, nil
}

// skipUnlessEnabled skips a test unless the suite runs (root and
// NRINET_KUBE_E2E set); in CI (CI=true) missing root fails.
func skipUnlessEnabled(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test needs root, and CI runs as root")
		}
		t.Skip("needs root")
	}
	if os.Getenv(gateEnv) == "" {
		t.Skipf("set %s=1 (make e2e-kube) to build Kubernetes and run the suite", gateEnv)
	}
}
