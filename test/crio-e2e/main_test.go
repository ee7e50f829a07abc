package crioe2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/critest"
	"github.com/nrinet/nrinet/internal/gobin"
	"github.com/nrinet/nrinet/internal/imagebuild"
	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// gateEnv turns the suite on.
const gateEnv = "NRINET_CRIO_E2E"

// The images, as the registry names them (without its host).
const (
	pauseRepo   = "nrinet-e2e/pause:1"
	busyboxRepo = "nrinet-e2e/busybox:1"
)

// suiteEnv is what TestMain prepares for every test.
type suiteEnv struct {
	dir                  string
	podnet, nriCNI       string
	crictl, cniBin       string
	conmon, runc         string
	registry             *imagebuild.Registry
	pauseRef, busyboxRef string

	mu     sync.Mutex // guards builds
	builds map[string]*crioBuild
}

var env suiteEnv

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == testutil.RuncWrapperName {
		os.Exit(testutil.RuncWrapperMain(os.Args[1:]))
	}
	os.Exit(testutil.GatedMain(m, gateEnv, "crio-e2e", setup, func() {
		if env.registry != nil {
			env.registry.Close()
		}
	}))
}

// setup builds the plugins and the images, starts the registry and finds
// the tools.
func setup(dir string) error {
	start := time.Now()
	env = suiteEnv{dir: dir, builds: map[string]*crioBuild{}}
	for tool, pkg := range map[string]string{"runc": "runc", "conmon": "conmon", "ip": "iproute2"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			return fmt.Errorf("%s not found: the suite needs it (Debian package %s)", tool, pkg)
		}
		switch tool {
		case "runc":
			env.runc = p
		case "conmon":
			env.conmon = p
		}
	}
	if err := testutil.GoBuild(filepath.Join("..", ".."), dir, nil, "./cmd/nri-podnet", "./cmd/nri-cni"); err != nil {
		return err
	}
	if err := testutil.GoBuild(filepath.Join("..", "containerd-e2e"), dir, []string{"CGO_ENABLED=0"}, "./cmd/pause"); err != nil {
		return err
	}
	env.podnet, env.nriCNI = filepath.Join(dir, "nri-podnet"), filepath.Join(dir, "nri-cni")

	busybox, err := testutil.StaticBusybox()
	if err != nil {
		return err
	}
	pause, err := imagebuild.Pause(filepath.Join(dir, "pause"), runtime.GOARCH)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	bb, err := imagebuild.Busybox(busybox, runtime.GOARCH, []string{"sh", "cat", "ip", "ping", "ping6", "sleep", "true"})
	if err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}
	// critest's test image: busybox with every applet it has.
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	critestImg, err := imagebuild.Busybox(busybox, runtime.GOARCH, strings.Fields(string(out)))
	if err != nil {
		return fmt.Errorf("critest's busybox image: %w", err)
	}
	env.registry, err = imagebuild.StartRegistry(context.Background(), map[string]v1.Image{
		pauseRepo: pause, busyboxRepo: bb, critest.TestImageRepo + ":" + critest.TestImageTag: critestImg,
	})
	if err != nil {
		return err
	}
	env.pauseRef, env.busyboxRef = env.registry.Addr()+"/"+pauseRepo, env.registry.Addr()+"/"+busyboxRepo

	env.crictl = os.Getenv("NRINET_CRICTL")
	if env.crictl == "" {
		if env.crictl, err = gobin.Install(gobin.Dir("nrinet-crictl", pins.CRITools), "sigs.k8s.io/cri-tools/cmd/crictl", pins.CRITools); err != nil {
			return err
		}
	}
	env.cniBin = cmp.Or(os.Getenv("NRINET_CNI_BIN"), gobin.Dir("nrinet-cni-plugins", pins.CNIPlugins))
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(env.cniBin, p)); err != nil {
			return fmt.Errorf("CNI plugin %s not in %s (set NRINET_CNI_BIN, or run .ci/run once): %v", p, env.cniBin, err)
		}
	}
	fmt.Fprintf(os.Stderr, "crio-e2e: plugins, images and registry ready in %v\n", time.Since(start).Round(10*time.Millisecond))
	return nil
}

// crioBuild is CRI-O as hack/crio.sh built it.
type crioBuild struct {
	nri      string // upstream or compat
	bin, src string
	version  string
}

// crioBinaries returns CRI-O built against nri (upstream: stock; compat:
// on nrinet with its patch series), building it on first use.
func crioBinaries(t testing.TB, nri string) *crioBuild {
	t.Helper()
	env.mu.Lock()
	defer env.mu.Unlock()
	if b, ok := env.builds[nri]; ok {
		return b
	}
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("..", "..", "hack", "crio.sh"))
	cmd.Env = append(os.Environ(), "NRINET_CRIO_NRI="+nri)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/crio.sh (NRINET_CRIO_NRI=%s): %v\n%s", nri, err, stderr.String())
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	b := &crioBuild{nri: nri, bin: vars["NRINET_CRIO_BIN"], src: vars["NRINET_CRIO_SRC"], version: vars["NRINET_CRIO_VERSION"]}
	if b.bin == "" {
		t.Fatalf("hack/crio.sh printed no NRINET_CRIO_BIN:\n%s", stdout.String())
	}
	t.Logf("CRI-O %s (%s) ready in %v", b.version, nri, time.Since(start).Round(time.Second))
	env.builds[nri] = b
	return b
}
