package kubee2e

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// wantImage is what TestE2EImages expects of one image: the configuration
// the published image has (from its Dockerfile and base image), and
// commands to run in its file system, each with a string its output must
// contain.
type wantImage struct {
	entrypoint, cmd []string
	user, workDir   string
	stopSignal      string
	files           []string // paths that must be in the layer
	runs            []imageRun
}

type imageRun struct {
	argv []string
	want string
}

var wantImages = map[string]wantImage{
	agnhostImage: {
		entrypoint: []string{"/agnhost"}, cmd: []string{"pause"},
		files: []string{"agnhost", "agnhost-2", "coredns", "localhost.crt", "localhost.key", "uploads", "etc/nsswitch.conf"},
		runs: []imageRun{
			{[]string{"/agnhost", "--help"}, "netexec"},
			{[]string{"/agnhost-2", "--help"}, "porter"},
			{[]string{"/coredns", "-version"}, "CoreDNS-" + strings.TrimPrefix(pins.CoreDNS, "v")},
			{[]string{"curl", "--version"}, "curl "},
			{[]string{"dig", "-v"}, "DiG 9."},
			{[]string{"nslookup", "-version"}, "nslookup 9."},
			{[]string{"host", "-V"}, "host 9."},
			{[]string{"nc", "-h"}, "OpenBSD netcat"},
			{[]string{"getent", "passwd", "user-defined-in-image"}, "user-defined-in-image:x:1000:1000:"},
			{[]string{"getent", "group", "group-defined-in-image"}, "group-defined-in-image:x:50000:user-defined-in-image"},
			{[]string{"ip", "-V"}, "ip utility"},
			{[]string{"ss", "-V"}, "ss utility"},
			{[]string{"bash", "-c", "echo bash $BASH_VERSION"}, "bash 5."},
			{[]string{"sh", "-c", "seq 2 3; echo $((6*7))"}, "2\n3\n42"},
			// The Services specs fetch with wget from agnhost's exec pods
			// (wget -q -O - -T 1, wget -T 5 -qO-): it must fail as a program,
			// with a status, where nothing listens. Debian's static busybox's
			// wget dies of SIGSEGV (status 139) before connecting.
			{[]string{"sh", "-c", "wget -q -O - -T 1 http://127.0.0.1:9/; s=$?; [ $s -gt 0 ] && [ $s -lt 128 ] && echo wget failed with status; wget -T 5 -qO- http://127.0.0.1:9/; [ $? -lt 128 ] && echo again"}, "wget failed with status\nagain"},
			// The shell runs the programs of PATH, not busybox's applets
			// of the same names: nc is OpenBSD's, with -u.
			{[]string{"sh", "-c", "nc -h 2>&1 | head -n 1"}, "OpenBSD netcat"},
			{[]string{"sh", "-c", "nslookup -version 2>&1"}, "nslookup 9."},
			{[]string{"sh", "-c", "ip -V"}, "ip utility"},
		},
	},
	busyboxE2EImage: {
		cmd: []string{"sh"},
		runs: []imageRun{
			{[]string{"sh", "-c", "echo $((6*7)); nc --help 2>&1 | head -n 1; nslookup --help 2>&1 | head -n 1"}, "42\nBusyBox"},
			// A variable whose name is not a shell name reaches the
			// commands sh runs, as the ConfigMap and Secret environment
			// specs need.
			{[]string{"env", "data-1=value-1", "sh", "-c", "env"}, "data-1=value-1"},
		},
	},
	glibcDNSTestingImage: {
		cmd: []string{"bash"},
		runs: []imageRun{
			{[]string{"dig", "-v"}, "DiG 9."},
			{[]string{"nslookup", "-version"}, "nslookup 9."},
			{[]string{"host", "-V"}, "host 9."},
			{[]string{"getent", "passwd", "root"}, "root:x:0:0:"},
			{[]string{"bash", "-c", "echo bash $BASH_VERSION"}, "bash 5."},
			{[]string{"sh", "-c", "for i in `seq 1 2`; do test -n \"$i\" && echo OK$i; done"}, "OK1\nOK2"},
			{[]string{"sh", "-c", "nslookup -version 2>&1"}, "nslookup 9."},
		},
	},
	nginxImage: {
		entrypoint: []string{"/docker-entrypoint.sh"}, cmd: []string{"nginx", "-g", "daemon off;"},
		stopSignal: "SIGQUIT",
		files:      []string{"etc/nginx/nginx.conf", "usr/share/nginx/html/index.html"},
		runs: []imageRun{
			{[]string{"/docker-entrypoint.sh", "nginx", "-v"}, "nginx version: nginx/"},
			// nginx -t opens the logs (links to /dev/stdout and /dev/stderr,
			// so /proc), checks the configuration and the user nginx.
			{[]string{"sh", "-c", "mount -t proc proc /proc && nginx -t"}, "syntax is ok"},
		},
	},
	pauseImage: {
		entrypoint: []string{"/pause"}, user: "65535:65535",
		files: []string{"pause"},
	},
	corednsImage: {
		entrypoint: []string{"/coredns"}, user: "65532:65532", workDir: "/",
		files: []string{"coredns", "etc/ssl/certs/ca-certificates.crt"},
		runs: []imageRun{
			{[]string{"/coredns", "-version"}, "CoreDNS-" + strings.TrimPrefix(pins.CoreDNS, "v")},
		},
	},
}

// TestE2EImages builds the e2e images (writeE2EImages) and checks each:
// its reference and configuration are those of the published image, every
// dynamically linked program in it finds its loader and libraries in the
// image, and the programs the network specs run work, run in its file
// system (chroot, in a mount namespace of their own). Building them again
// into the same directory writes nothing. It needs CoreDNS, which
// hack/kube.sh builds with the e2e suite; without it, it skips.
func TestE2EImages(t *testing.T) {
	skipUnlessEnabled(t)
	if err := checkE2EImageTools(); err != nil {
		t.Fatal(err)
	}
	if env.kubeSrc == "" {
		t.Fatal("no Kubernetes source: hack/kube.sh prints NRINET_KUBE_SRC (set it with NRINET_KUBE_BIN)")
	}
	if _, err := os.Stat(filepath.Join(env.kubeBin, "coredns")); err != nil {
		t.Skipf("no CoreDNS in %s: hack/kube.sh builds it with the e2e suite (not with NRINET_KUBE_E2E_SUITE=0, as CI runs it)", env.kubeBin)
	}
	dir := t.TempDir()
	if err := testutil.GoBuild(".", dir, []string{"CGO_ENABLED=0"}, "./cmd/pause"); err != nil {
		t.Fatal(err)
	}
	bins := kubeImageBins(env.kubeBin, env.kubeSrc, filepath.Join(dir, "pause"))
	images := filepath.Join(dir, "images")
	if err := os.Mkdir(images, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	archives, err := writeE2EImages(images, bins)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d images in %v", len(archives), time.Since(start).Round(time.Millisecond))

	mtimes := map[string]time.Time{}
	for ref, archive := range archives {
		fi, err := os.Stat(archive)
		if err != nil {
			t.Fatal(err)
		}
		mtimes[ref] = fi.ModTime()
		t.Logf("%s: %s, %d MB", ref, filepath.Base(archive), fi.Size()>>20)
	}
	start = time.Now()
	again, err := writeE2EImages(images, bins)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the same images again, from the cache, in %v", time.Since(start).Round(time.Millisecond))
	for ref, archive := range archives {
		fi, err := os.Stat(again[ref])
		if again[ref] != archive || err != nil || !fi.ModTime().Equal(mtimes[ref]) {
			t.Errorf("%s: written again (%s, then %s)", ref, archive, again[ref])
		}
	}

	for _, img := range e2eImages {
		ref, want := img.ref, wantImages[img.ref]
		t.Run(ref[strings.LastIndex(ref, "/")+1:], func(t *testing.T) {
			archive, ok := archives[ref]
			if !ok {
				t.Fatalf("no archive of %s", ref)
			}
			checkE2EImage(t, archive, ref, want)
		})
	}
	for ref := range archives {
		if _, ok := wantImages[ref]; !ok {
			t.Errorf("image %s is not checked", ref)
		}
	}
	if len(archives) != len(wantImages) {
		t.Errorf("%d images written, %d expected", len(archives), len(wantImages))
	}
}

// checkE2EImage checks the image ref of archive against want.
func checkE2EImage(t *testing.T, archive, ref string, want wantImage) {
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatalf("%s has no image %s: %v", archive, ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	c := cf.Config
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"entrypoint", c.Entrypoint, want.entrypoint},
		{"cmd", c.Cmd, want.cmd},
		{"user", c.User, want.user},
		{"working directory", c.WorkingDir, want.workDir},
		{"stop signal", c.StopSignal, want.stopSignal},
	} {
		if fmt.Sprint(f.got) != fmt.Sprint(f.want) {
			t.Errorf("%s %q, want %q", f.what, f.got, f.want)
		}
	}
	if !slices.Contains(c.Env, defaultPath) {
		t.Errorf("environment %q lacks %s", c.Env, defaultPath)
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
	for _, f := range want.files {
		if _, ok := headers[f]; !ok {
			t.Errorf("%s is not in the image", f)
		}
	}
	if h := headers["coredns"]; h != nil && ref == corednsImage {
		if got := h.PAXRecords["SCHILY.xattr.security.capability"]; got != capNetBindService {
			t.Errorf("/coredns has file capabilities %q, want cap_net_bind_service=+ep", got)
		}
	}
	checkELFClosure(t, root, headers)
	logImageContents(t, headers)

	for _, r := range want.runs {
		out, err := runInImage(root, r.argv)
		if err != nil || !strings.Contains(out, r.want) {
			t.Errorf("%q in the image: %v; want output with %q, got:\n%s", r.argv, err, r.want, out)
		}
	}
	if ref == pauseImage {
		checkPauseRuns(t, root)
	}
}

// unpackLayer writes the files of layer into root (directories, regular
// files and symbolic links, nothing else) and returns their tar headers by
// path.
func unpackLayer(layer v1.Layer, root string) (map[string]*tar.Header, error) {
	rc, err := layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return headers, nil
		}
		if err != nil {
			return nil, err
		}
		p := path.Clean(h.Name)
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("layer entry %q is outside the root", h.Name)
		}
		headers[p] = h
		target := filepath.Join(root, p)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, target)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(target, data, os.FileMode(h.Mode).Perm())
			}
		default:
			err = fmt.Errorf("entry %q of type %q", h.Name, h.Typeflag)
		}
		if err != nil {
			return nil, err
		}
	}
}

// logImageContents logs how many entries and bytes the image has, its
// programs (regular files but libraries, certificates and configuration)
// and its libraries.
func logImageContents(t *testing.T, headers map[string]*tar.Header) {
	t.Helper()
	var size int64
	var programs []string
	libs := 0
	for p, h := range headers {
		size += h.Size
		switch {
		case h.Typeflag != tar.TypeReg:
		case strings.Contains(p, ".so"):
			libs++
		case h.Mode&0o111 != 0 && !strings.HasPrefix(p, "etc/"):
			programs = append(programs, "/"+p)
		}
	}
	slices.Sort(programs)
	t.Logf("%d entries, %.1f MB unpacked; %d shared libraries; programs: %s",
		len(headers), float64(size)/(1<<20), libs, strings.Join(programs, " "))
}

// checkELFClosure checks that every dynamically linked ELF file of the
// image finds its program interpreter and each library it needs in the
// image, in the directories a loader without ld.so.cache searches.
func checkELFClosure(t *testing.T, root string, headers map[string]*tar.Header) {
	t.Helper()
	triplet := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	libDirs := []string{"lib/" + triplet, "usr/lib/" + triplet, "lib64", "lib", "usr/lib"}
	for p, h := range headers {
		if h.Typeflag != tar.TypeReg {
			continue
		}
		f, err := elf.Open(filepath.Join(root, p))
		if err != nil {
			continue // not ELF
		}
		var interp string
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b, _ := io.ReadAll(prog.Open())
				interp = strings.TrimRight(string(b), "\x00")
			}
		}
		needed, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if interp != "" {
			if _, err := os.Stat(filepath.Join(root, interp)); err != nil {
				t.Errorf("%s: its loader %s is not in the image", p, interp)
			}
		}
		for _, lib := range needed {
			if !slices.ContainsFunc(libDirs, func(d string) bool {
				_, err := os.Stat(filepath.Join(root, d, lib))
				return err == nil
			}) {
				t.Errorf("%s: needs %s, not in the image", p, lib)
			}
		}
	}
}

// runInImage runs argv in the file system root (chroot) with the image's
// PATH, in a mount namespace of its own (what it mounts goes away with
// it), and returns its output, stdout and stderr together. A command name
// without a slash is looked up in the image's PATH. Before it runs, /dev
// gets the links a container runtime makes (stdin, stdout, stderr, fd).
func runInImage(root string, argv []string) (string, error) {
	for _, l := range []struct{ name, target string }{
		{"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"fd", "/proc/self/fd"},
	} {
		link := filepath.Join(root, "dev", l.name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				return "", err
			}
			if err := os.Symlink(l.target, link); err != nil {
				return "", err
			}
		}
	}
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		prog = ""
		for _, d := range strings.Split(strings.TrimPrefix(defaultPath, "PATH="), ":") {
			if _, err := os.Lstat(filepath.Join(root, d, argv[0])); err == nil {
				prog = path.Join(d, argv[0])
				break
			}
		}
		if prog == "" {
			return "", fmt.Errorf("%s is not in the image's PATH", argv[0])
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = "/"
	cmd.Env = []string{defaultPath, "HOME=/root"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Unshareflags: syscall.CLONE_NEWNS}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// checkPauseRuns runs /pause in the image as the image's user and checks
// it exits 0 on SIGTERM.
func checkPauseRuns(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command("/pause")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65535, Gid: 65535}}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		t.Fatalf("/pause: %v", err)
	}
	// Not a wait that Poll could replace: pause, a Go program, shows
	// nothing when it is ready for SIGTERM. The Go runtime catches the
	// signal from its start (/proc's SigCgt has it at once), and
	// signal.Notify, which turns it from a death by SIGTERM into an exit 0,
	// changes nothing the kernel shows. So the test gives it this long.
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("/pause: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("/pause on SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Error("/pause still runs 5 s after SIGTERM")
	}
}

// TestE2EImages_RefsMatchManifest checks the image references against
// Kubernetes' own: test/utils/image/manifest.go for the e2e images (those
// of conformanceAllImages too), and
// kubeadm's constants for the pause image's tag and CoreDNS's version, in
// the module cache (hack/kube.sh downloads the module there).
func TestE2EImages_RefsMatchManifest(t *testing.T) {
	kubeModule := "k8s.io/kubernetes@" + pins.Kubernetes
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), kubeModule)
	manifest, err := os.ReadFile(filepath.Join(dir, "test", "utils", "image", "manifest.go"))
	if err != nil {
		t.Skipf("%s is not in the module cache (hack/kube.sh downloads it): %v", kubeModule, err)
	}
	constants, err := os.ReadFile(filepath.Join(dir, "cmd", "kubeadm", "app", "constants", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	registries := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(\w+Registry):\s*"([^"]+)",`).FindAllStringSubmatch(string(manifest), -1) {
		registries[m[1]] = m[2]
	}
	refs := map[string]string{}
	for _, m := range regexp.MustCompile(`configs\[(\w+)\] = Config\{list\.(\w+), "([^"]+)", "([^"]+)"\}`).FindAllStringSubmatch(string(manifest), -1) {
		refs[m[1]] = registries[m[2]] + "/" + m[3] + ":" + m[4]
	}
	kubeadm := func(constant string) string {
		m := regexp.MustCompile(`\b` + constant + `\s*=\s*"([^"]+)"`).FindStringSubmatch(string(constants))
		if m == nil {
			t.Fatalf("no %s in kubeadm's constants", constant)
		}
		return m[1]
	}
	for _, c := range []struct{ got, want, from string }{
		{agnhostImage, refs["Agnhost"], "manifest.go Agnhost"},
		{busyboxE2EImage, refs["BusyBox"], "manifest.go BusyBox"},
		{glibcDNSTestingImage, refs["GlibcDnsTesting"], "manifest.go GlibcDnsTesting"},
		{nginxImage, refs["Nginx"], "manifest.go Nginx"},
		{pauseImage, refs["Pause"], "manifest.go Pause"},
		{pauseImage, "registry.k8s.io/pause:" + kubeadm("PauseVersion"), "kubeadm PauseVersion"},
		{corednsImage, "registry.k8s.io/coredns/coredns:" + kubeadm("CoreDNSVersion"), "kubeadm CoreDNSVersion"},
		{agnhostPrevImage, refs["AgnhostPrev"], "manifest.go AgnhostPrev"},
		{nautilusImage, refs["Nautilus"], "manifest.go Nautilus"},
		{nonewprivsImage, refs["Nonewprivs"], "manifest.go Nonewprivs"},
		{sampleAPIServerImage, refs["APIServer"], "manifest.go APIServer"},
		{etcdImage, refs["Etcd"], "manifest.go Etcd"},
	} {
		if c.got != c.want {
			t.Errorf("%s, want %s (%s of %s)", c.got, c.want, c.from, kubeModule)
		}
	}
}

func TestLayerFiles(t *testing.T) {
	files, err := layerFiles([]imageFile{
		{path: "usr/bin/dig", mode: 0o755},
		{path: "bin/sh", mode: fs.ModeSymlink | 0o777, link: "busybox"},
		{path: "usr", mode: fs.ModeDir | 0o700},
		{path: "bin/busybox", mode: 0o755},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, fmt.Sprintf("%s %v", f.path, f.mode))
	}
	want := []string{"bin drwxr-xr-x", "bin/busybox -rwxr-xr-x", "bin/sh Lrwxrwxrwx", "usr drwx------", "usr/bin drwxr-xr-x", "usr/bin/dig -rwxr-xr-x"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := layerFiles([]imageFile{{path: "a"}, {path: "a"}}); err == nil {
		t.Error("a path given twice: no error")
	}
}

// TestE2EImages_Deterministic writes the busybox image into two
// directories and checks the archives are the same bytes.
func TestE2EImages_Deterministic(t *testing.T) {
	busybox, err := testutil.StaticBusybox()
	if err != nil {
		t.Skip(err)
	}
	var archives [2][]byte
	for i := range archives {
		files, cfg, err := busyboxE2EFiles(e2eImageBins{Busybox: busybox})
		if err != nil {
			t.Fatal(err)
		}
		archive, err := writeCachedImage(t.TempDir(), busyboxE2EImage, files, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if archives[i], err = os.ReadFile(archive); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same image differ")
	}
}
