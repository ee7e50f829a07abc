package kubee2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nrinet/nrinet/internal/pins"
	"github.com/nrinet/nrinet/internal/testutil"
)

// The images Kubernetes' e2e suite (e2e.test of v1.37.2) runs in the
// selected network specs (conformance/selected-specs.txt: agnhost,
// glibc-dns-testing, nginx and pause), and busybox, the framework's default
// test image, which no selected spec runs; under the names and tags of
// its test/utils/image/manifest.go (TestE2EImages_RefsMatchManifest checks
// them against it). And the cluster's own: the pause image (kubeadm's
// PauseVersion, the same tag as manifest.go's; containerd's sandbox image)
// and CoreDNS (kubeadm's CoreDNSVersion). writeE2EImages builds them
// offline; docs/dev/kube-e2e.md says what each holds and how it differs from
// the published image.
const (
	e2eRegistry          = "registry.k8s.io/e2e-test-images"
	agnhostImage         = e2eRegistry + "/agnhost:2.66.1"
	busyboxE2EImage      = e2eRegistry + "/busybox:1.37.0-2"
	glibcDNSTestingImage = e2eRegistry + "/glibc-dns-testing:2.1.1"
	nginxImage           = e2eRegistry + "/nginx:1.27.0-2"
	pauseImage           = "registry.k8s.io/pause:3.10.2"
)

// corednsImage is CoreDNS's image, at the version hack/kube.sh builds
// (internal/pins).
var corednsImage = "registry.k8s.io/coredns/coredns:" + pins.CoreDNS

// e2eImageBins are the programs the e2e images are made of, besides this
// machine's tools (e2etools_test.go).
type e2eImageBins struct {
	// Agnhost and CoreDNS are hack/kube.sh's bin/agnhost and bin/coredns.
	Agnhost, CoreDNS string
	// KubeSrc is Kubernetes' source (hack/kube.sh's NRINET_KUBE_SRC):
	// agnhost's image has porter's TLS certificate and key from
	// test/images/agnhost/porter.
	KubeSrc string
	// Pause is a static pause binary (./cmd/pause of this module, built
	// with CGO_ENABLED=0).
	Pause string
	// Busybox is a static busybox; empty means findBusybox's.
	Busybox string
	// Nonewprivs, SampleAPIServer and Etcd are the programs of the
	// images only conformance-all needs (conformanceAllImages,
	// buildConformanceAllBins): test/images/nonewprivs and
	// k8s.io/sample-apiserver built from KubeSrc, and hack/kube.sh's
	// bin/etcd.
	Nonewprivs, SampleAPIServer, Etcd string
}

// kubeImageBins returns the e2eImageBins of hack/kube.sh's output: the
// binaries in kubeBin (NRINET_KUBE_BIN), the source in kubeSrc
// (NRINET_KUBE_SRC), and pause.
func kubeImageBins(kubeBin, kubeSrc, pause string) e2eImageBins {
	return e2eImageBins{
		Agnhost: filepath.Join(kubeBin, "agnhost"),
		CoreDNS: filepath.Join(kubeBin, "coredns"),
		KubeSrc: kubeSrc,
		Pause:   pause,
	}
}

// writeE2EImages writes every e2e image as an image archive (docker save
// format, one layer, for `ctr -n k8s.io images import`) in dir, and
// returns the archive of each image reference. It first checks this
// machine's tools (checkE2EImageTools), so that a missing one is reported
// at once, by its Debian package.
//
// Images are deterministic (files in lexical order, owned by root, dated at
// the epoch) and cached by content: an archive's name carries a hash of its
// layer and configuration, and an archive already in dir is not written
// again, so that a harness can call it once per run, or once per node,
// with the same dir.
func writeE2EImages(dir string, bins e2eImageBins) (map[string]string, error) {
	return writeImages(dir, bins, e2eImages)
}

// writeImages is writeE2EImages for the images given, in order.
func writeImages(dir string, bins e2eImageBins, images []e2eImage) (map[string]string, error) {
	if err := checkE2EImageTools(); err != nil {
		return nil, err
	}
	if bins.Busybox == "" {
		var err error
		if bins.Busybox, err = testutil.StaticBusybox(); err != nil {
			return nil, err
		}
	}
	archives := map[string]string{}
	for _, img := range images {
		files, cfg, err := img.build(bins)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", img.ref, err)
		}
		archive, err := writeCachedImage(dir, img.ref, files, cfg)
		if err != nil {
			return nil, err
		}
		archives[img.ref] = archive
	}
	return archives, nil
}

// An e2eImage is one image: its reference and how to build its files and
// configuration.
type e2eImage struct {
	ref   string
	build func(bins e2eImageBins) ([]imageFile, v1.Config, error)
}

// e2eImages are the images writeE2EImages writes, in order.
var e2eImages = []e2eImage{
	{agnhostImage, agnhostFiles},
	{busyboxE2EImage, busyboxE2EFiles},
	{glibcDNSTestingImage, glibcDNSTestingFiles},
	{nginxImage, nginxFiles},
	{pauseImage, pauseFiles},
	{corednsImage, corednsFiles},
}

// defaultPath is the PATH of every image (Alpine's, Debian's, busybox's and
// distroless's alike).
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// nsswitch is /etc/nsswitch.conf of the images with glibc programs
// (getent, dig, curl): files first, then DNS, as Debian's.
const nsswitch = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n"

// agnhostFiles is agnhost's image (test/images/agnhost/Dockerfile: Alpine
// with bind-tools, curl, netcat-openbsd, iproute2 and bash; CoreDNS; porter's
// certificate; /agnhost and its link agnhost-2; a user and group for the
// supplemental groups specs): busybox's applets, the Debian programs the
// specs run in it (curl, dig, nslookup, host, nc, getent, ip, ss, bash,
// and wget: toolWget says why) with their libraries, dash as /bin/sh
// (toolSh says why), and CoreDNS from hack/kube.sh (v1.14.6; the image has
// v1.6.2). ENTRYPOINT ["/agnhost"], CMD ["pause"].
func agnhostFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	tools := []hostTool{toolSh, toolCurl, toolDig, toolNslookup, toolHost, toolNc, toolGetent, toolIP, toolSs, toolBash, toolWget}
	files, err := busyboxAndTools(bins.Busybox, tools)
	if err != nil {
		return nil, v1.Config{}, err
	}
	more, err := readFiles(map[string]string{
		"agnhost":       bins.Agnhost,
		"coredns":       bins.CoreDNS,
		"localhost.crt": filepath.Join(bins.KubeSrc, "test", "images", "agnhost", "porter", "localhost.crt"),
		"localhost.key": filepath.Join(bins.KubeSrc, "test", "images", "agnhost", "porter", "localhost.key"),
	})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files, more...)
	files = append(files,
		imageFile{path: "agnhost-2", mode: fs.ModeSymlink | 0o777, link: "agnhost"},
		imageFile{path: "uploads", mode: fs.ModeDir | 0o755},
		imageFile{path: "home/user-defined-in-image", mode: fs.ModeDir | 0o755},
		imageFile{path: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
	)
	files = append(files, baseFiles(
		"root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n",
		"root:x:0:root\nuser-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\nnogroup:x:65534:\n",
	)...)
	return files, v1.Config{
		Entrypoint:   []string{"/agnhost"},
		Cmd:          []string{"pause"},
		Env:          []string{defaultPath},
		ExposedPorts: tcpPorts(80, 8080, 8081, 9376, 5000),
	}, nil
}

// busyboxE2EFiles is the busybox image (test/images/busybox: Docker Hub's
// busybox 1.37.0): every applet of Debian's busybox-static (1.35) in /bin
// but sh, which is Debian's bash (toolBashSh says why). CMD ["sh"].
func busyboxE2EFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, err := busyboxAndTools(bins.Busybox, []hostTool{toolBashSh})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files, baseFiles(
		"root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/usr/sbin:/bin/false\nnobody:x:65534:65534:nobody:/home:/bin/false\n",
		"root:x:0:\ndaemon:x:1:\nnogroup:x:65534:\n",
	)...)
	return files, v1.Config{Cmd: []string{"sh"}, Env: []string{defaultPath}}, nil
}

// glibcDNSTestingFiles is glibc-dns-testing's image
// (test/images/glibc-dns-testing, jessie-dnsutils' successor: Debian
// bookworm with dnsutils, and CoreDNS 1.5.0, which no network spec
// runs): busybox's applets, and Debian's dash as /bin/sh (as Debian's),
// dig, nslookup, host, getent and bash with their libraries. CMD ["bash"],
// Debian's.
func glibcDNSTestingFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, err := busyboxAndTools(bins.Busybox, []hostTool{toolSh, toolDig, toolNslookup, toolHost, toolGetent, toolBash})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files, imageFile{path: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)})
	files = append(files, baseFiles("root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"root:x:0:\nnogroup:x:65534:\n")...)
	return files, v1.Config{Cmd: []string{"bash"}, Env: []string{defaultPath}}, nil
}

// nginxFiles is nginx's image (test/images/nginx: Docker Hub's
// nginx:1.27-alpine): Debian's nginx (1.22) with its libraries, serving
// /usr/share/nginx/html on port 80 of both families as the published
// image's default server does, logging to the container's stdout and
// stderr, as user nginx (101); busybox's applets; and an entrypoint script
// of our own in place of the image's (which runs the scripts of
// /docker-entrypoint.d, none of which a network spec needs, then the
// command). ENTRYPOINT ["/docker-entrypoint.sh"], CMD ["nginx", "-g",
// "daemon off;"], STOPSIGNAL SIGQUIT. The nginx configuration is ours too.
func nginxFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, err := busyboxAndTools(bins.Busybox, []hostTool{toolNginx})
	if err != nil {
		return nil, v1.Config{}, err
	}
	files = append(files,
		imageFile{path: "docker-entrypoint.sh", mode: 0o755, data: []byte(nginxEntrypoint)},
		imageFile{path: "docker-entrypoint.d", mode: fs.ModeDir | 0o755},
		imageFile{path: "etc/nginx/nginx.conf", mode: 0o644, data: []byte(nginxConf)},
		imageFile{path: "etc/nginx/mime.types", mode: 0o644, data: []byte(nginxMimeTypes)},
		imageFile{path: "usr/share/nginx/html/index.html", mode: 0o644, data: []byte(nginxIndex)},
		imageFile{path: "var/log/nginx/access.log", mode: fs.ModeSymlink | 0o777, link: "/dev/stdout"},
		imageFile{path: "var/log/nginx/error.log", mode: fs.ModeSymlink | 0o777, link: "/dev/stderr"},
		imageFile{path: "var/lib/nginx", mode: fs.ModeDir | 0o755},
		imageFile{path: "var/cache/nginx", mode: fs.ModeDir | 0o755},
		imageFile{path: "run", mode: fs.ModeDir | 0o755},
		imageFile{path: "etc/nsswitch.conf", mode: 0o644, data: []byte(nsswitch)},
	)
	files = append(files, baseFiles("root:x:0:0:root:/root:/bin/sh\nnginx:x:101:101:nginx:/var/cache/nginx:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n",
		"root:x:0:\nnginx:x:101:nginx\nnogroup:x:65534:\n")...)
	return files, v1.Config{
		Entrypoint:   []string{"/docker-entrypoint.sh"},
		Cmd:          []string{"nginx", "-g", "daemon off;"},
		Env:          []string{defaultPath},
		ExposedPorts: tcpPorts(80),
		StopSignal:   "SIGQUIT",
	}, nil
}

// The files of nginx's image that are ours.
const (
	nginxEntrypoint = `#!/bin/sh
# The nginx image's entrypoint, as nrinet's e2e images have it: run the
# command.
set -e
exec "$@"
`
	nginxConf = `user nginx;
worker_processes 1;
pid /run/nginx.pid;

events {
	worker_connections 1024;
}

http {
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	access_log /var/log/nginx/access.log;

	server {
		listen 80;
		listen [::]:80;
		server_name localhost;
		root /usr/share/nginx/html;
		index index.html;
	}
}
`
	nginxMimeTypes = "types {\n\ttext/html html htm;\n\ttext/plain txt;\n}\n"
	nginxIndex     = "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1></body></html>\n"
)

// pauseFiles is the pause image (build/pause/Dockerfile): /pause, run as
// 65535:65535, and the PATH BuildKit gives an image without one.
// ENTRYPOINT ["/pause"].
func pauseFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, err := readFiles(map[string]string{"pause": bins.Pause})
	if err != nil {
		return nil, v1.Config{}, err
	}
	return files, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535", Env: []string{defaultPath}}, nil
}

// corednsFiles is CoreDNS's image (its Dockerfile: distroless static,
// nonroot): /coredns with the file capability cap_net_bind_service=+ep (so
// that it binds port 53 as a user), the CA bundle, run as 65532:65532 in /.
// ENTRYPOINT ["/coredns"].
func corednsFiles(bins e2eImageBins) ([]imageFile, v1.Config, error) {
	files, err := readFiles(map[string]string{
		"coredns":                           bins.CoreDNS,
		"etc/ssl/certs/ca-certificates.crt": caBundle,
	})
	if err != nil {
		return nil, v1.Config{}, err
	}
	for i := range files {
		if files[i].path == "coredns" {
			files[i].xattrs = map[string]string{"security.capability": capNetBindService}
		}
	}
	files = append(files, imageFile{path: "home/nonroot", mode: fs.ModeDir | 0o700})
	files = append(files, baseFiles("root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")...)
	return files, v1.Config{
		Entrypoint:   []string{"/coredns"},
		User:         "65532:65532",
		WorkingDir:   "/",
		Env:          []string{defaultPath, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"53/tcp": {}, "53/udp": {}},
	}, nil
}

// caBundle is Debian's CA bundle (package ca-certificates), the file
// CoreDNS's image copies from Debian too.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// capNetBindService is the value of the security.capability extended
// attribute for cap_net_bind_service=+ep (setcap's): struct
// vfs_cap_data, revision 2 with the effective flag, permitted bit 10.
const capNetBindService = "\x01\x00\x00\x02" + "\x00\x04\x00\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// busyboxAndTools returns busybox with its applets, but those that tools
// replace, and tools with their libraries.
func busyboxAndTools(busybox string, tools []hostTool) ([]imageFile, error) {
	var names []string
	for _, t := range tools {
		names = append(names, t.name)
	}
	files, err := busyboxFiles(busybox, names...)
	if err != nil {
		return nil, err
	}
	more, err := toolFiles(tools...)
	if err != nil {
		return nil, err
	}
	return append(files, more...), nil
}

// baseFiles are the files and directories every image with a shell has:
// /etc/passwd and /etc/group, root's home, a /tmp for everyone, and the
// mount points the runtime mounts over.
func baseFiles(passwd, group string) []imageFile {
	return []imageFile{
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "root", mode: fs.ModeDir | 0o700},
		{path: "tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{path: "dev", mode: fs.ModeDir | 0o755},
		{path: "proc", mode: fs.ModeDir | 0o755},
		{path: "sys", mode: fs.ModeDir | 0o755},
	}
}

// readFiles returns the files of this machine, by their path in the image,
// as executables (0755) but for certificates and keys (0644).
func readFiles(byImagePath map[string]string) ([]imageFile, error) {
	var files []imageFile
	for imgPath, host := range byImagePath {
		data, err := os.ReadFile(host)
		if err != nil {
			return nil, err
		}
		mode := fs.FileMode(0o755)
		if ext := path.Ext(imgPath); ext == ".crt" || ext == ".key" {
			mode = 0o644
		}
		files = append(files, imageFile{path: imgPath, mode: mode, data: data})
	}
	return files, nil
}

// tcpPorts returns ExposedPorts for TCP ports.
func tcpPorts(ports ...int) map[string]struct{} {
	m := map[string]struct{}{}
	for _, p := range ports {
		m[fmt.Sprintf("%d/tcp", p)] = struct{}{}
	}
	return m
}

// layerFiles returns files sorted by path, each directory leading to a
// file added (0755) where files has none, so that the layer's entries come
// in one order whatever order they were gathered in. A path given twice is
// an error.
func layerFiles(files []imageFile) ([]imageFile, error) {
	byPath := map[string]imageFile{}
	for _, f := range files {
		if _, dup := byPath[f.path]; dup {
			return nil, fmt.Errorf("%s is in the image twice", f.path)
		}
		byPath[f.path] = f
	}
	for _, f := range files {
		for d := path.Dir(f.path); d != "."; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = imageFile{path: d, mode: fs.ModeDir | 0o755}
			}
		}
	}
	out := make([]imageFile, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b imageFile) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// writeCachedImage writes the image of files and cfg tagged ref into dir,
// named after the image and a hash of ref, its layer and configuration,
// unless that archive is there already; it returns the archive's path.
func writeCachedImage(dir, ref string, files []imageFile, cfg v1.Config) (string, error) {
	files, err := layerFiles(files)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	layer, err := layerTar(files)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", ref, err)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, b := range [][]byte{[]byte(ref), cfgJSON, layer} {
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	base := ref[strings.LastIndex(ref, "/")+1:] // "agnhost:2.66.1"
	base = strings.ReplaceAll(base, ":", "-")
	archive := filepath.Join(dir, base+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".tar")
	if _, err := os.Stat(archive); err == nil {
		return archive, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp-%d", archive, os.Getpid())
	if err := writeLayerImage(tmp, ref, layer, cfg); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return archive, os.Rename(tmp, archive)
}
