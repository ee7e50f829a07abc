package kubee2e

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/nrinet/nrinet/internal/testutil"
)

// A hostTool is a program of this (Debian) machine that an e2e image
// carries where busybox has no applet for it or its applet behaves
// differently from the real image's program: the binary, and the shared
// libraries and dynamic loader it is linked with.
type hostTool struct {
	// name is the command's name in the image, e.g. "nc".
	name string
	// dir is the directory it goes to in the image, e.g. "usr/bin".
	dir string
	// host is the program on this machine, e.g. "/usr/bin/nc.openbsd".
	host string
	// pkg is the Debian package that installs host.
	pkg string
}

// The host tools the e2e images take from Debian, by image name. The real
// images install them from Alpine (agnhost: bind-tools, curl,
// netcat-openbsd, bash; the musl C library brings getent) or Debian
// (glibc-dns-testing: dnsutils, and bash and getent from the base image), or
// are the image's program (nginx).
var (
	toolCurl     = hostTool{"curl", "usr/bin", "/usr/bin/curl", "curl"}
	toolDig      = hostTool{"dig", "usr/bin", "/usr/bin/dig", "bind9-dnsutils"}
	toolNslookup = hostTool{"nslookup", "usr/bin", "/usr/bin/nslookup", "bind9-dnsutils"}
	toolHost     = hostTool{"host", "usr/bin", "/usr/bin/host", "bind9-dnsutils"}
	toolNc       = hostTool{"nc", "usr/bin", "/usr/bin/nc.openbsd", "netcat-openbsd"}
	toolGetent   = hostTool{"getent", "usr/bin", "/usr/bin/getent", "libc-bin"}
	toolBash     = hostTool{"bash", "bin", "/bin/bash", "bash"}
	toolIP       = hostTool{"ip", "sbin", "/usr/sbin/ip", "iproute2"}
	toolSs       = hostTool{"ss", "sbin", "/usr/bin/ss", "iproute2"}
	toolNginx    = hostTool{"nginx", "usr/sbin", "/usr/sbin/nginx", "nginx"}
	// toolWget is GNU wget: Debian's static busybox's wget applet dies of
	// SIGSEGV before it connects (even to an address, as the Services
	// specs give it), where Alpine's busybox in the real agnhost image
	// fetches.
	toolWget = hostTool{"wget", "usr/bin", "/usr/bin/wget", "wget"}
	// toolSh is Debian's dash as /bin/sh, in the images with Debian tools:
	// busybox-static is built to prefer its applets, so its sh runs
	// busybox's nc (which has no -u), nslookup and ip even where PATH has
	// the real ones first, as the published images' shells do not.
	toolSh = hostTool{"sh", "bin", "/bin/dash", "dash"}
	// toolBashSh is Debian's bash as /bin/sh, in the busybox image:
	// Debian's busybox 1.35 ash (and dash) drop the environment variables
	// whose names are not shell names (data-1, from a ConfigMap's keys),
	// which busybox 1.37's ash in the published image passes on to the
	// commands it runs, as bash does; four ConfigMap and Secret specs
	// run sh -c env and look for them.
	toolBashSh = hostTool{"sh", "bin", "/bin/bash", "bash"}
)

// e2eHostTools are all of them, for checkE2EImageTools.
var e2eHostTools = []hostTool{toolCurl, toolDig, toolNslookup, toolHost, toolNc, toolGetent, toolBash, toolIP, toolSs, toolNginx, toolSh, toolBashSh, toolWget}

// checkE2EImageTools reports what writeE2EImages needs from this machine
// and is missing, as one error naming the Debian packages to install
// (.ci/run installs them), or nil: a static busybox (busybox-static),
// ldd (libc-bin) and the host tools.
func checkE2EImageTools() error {
	var missing []string
	pkgs := map[string]bool{}
	need := func(what, pkg string) {
		missing = append(missing, what)
		pkgs[pkg] = true
	}
	if _, err := testutil.StaticBusybox(); err != nil {
		need("a static busybox", "busybox-static")
	}
	if _, err := exec.LookPath("ldd"); err != nil {
		need("ldd", "libc-bin")
	}
	for _, t := range e2eHostTools {
		if _, err := os.Stat(t.host); err != nil {
			need(t.host, t.pkg)
		}
	}
	if _, err := os.Stat(caBundle); err != nil {
		need(caBundle, "ca-certificates")
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	slices.Sort(names)
	return fmt.Errorf("the e2e images need %s from this machine: apt-get install %s",
		strings.Join(missing, ", "), strings.Join(names, " "))
}

// toolFiles returns the image files of tools: each binary at dir/name and,
// once each, the shared libraries they load and the dynamic loader, at
// the paths ldd resolves them to on this machine (so that the loader,
// which searches /lib/<triplet> and /usr/lib/<triplet> when there is no
// ld.so.cache, finds them in the image too). Symbolic links on the host
// are followed: the image gets each file's content under the name the
// program asks for.
func toolFiles(tools ...hostTool) ([]imageFile, error) {
	var files []imageFile
	seen := map[string]bool{}
	for _, t := range tools {
		data, err := os.ReadFile(t.host)
		if err != nil {
			return nil, fmt.Errorf("%s (Debian package %s): %w", t.host, t.pkg, err)
		}
		files = append(files, imageFile{path: path.Join(t.dir, t.name), mode: 0o755, data: data})
		libs, err := sharedLibraries(t.host)
		if err != nil {
			return nil, err
		}
		for _, lib := range libs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			data, err := os.ReadFile(lib)
			if err != nil {
				return nil, fmt.Errorf("%s, a library of %s: %w", lib, t.host, err)
			}
			files = append(files, imageFile{path: strings.TrimPrefix(lib, "/"), mode: 0o755, data: data})
		}
	}
	return files, nil
}

// sharedLibraries returns the absolute paths of the shared objects ldd
// says the program bin loads, its dynamic loader included, in ldd's
// order; none for a static program. A library ldd cannot find is an
// error.
func sharedLibraries(bin string) ([]string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	static := !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
	f.Close()
	if static {
		return nil, nil
	}
	var stderr bytes.Buffer
	cmd := exec.Command("ldd", bin)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %v: %s", bin, err, stderr.Bytes())
	}
	return parseLdd(bin, out)
}

// parseLdd reads ldd's output for bin, lines like
//
//	linux-vdso.so.1 (0x00007ffd...)
//	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f...)
//	/lib64/ld-linux-x86-64.so.2 (0x00007f...)
//
// and returns the paths: the vDSO (no file) is left out, and "not found"
// is an error.
func parseLdd(bin string, out []byte) ([]string, error) {
	var libs, notFound []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, target, arrow := strings.Cut(line, " => ")
		if !arrow {
			target = name
		}
		if strings.HasPrefix(target, "not found") {
			notFound = append(notFound, name)
			continue
		}
		p, _, _ := strings.Cut(target, " (")
		if !path.IsAbs(p) {
			if arrow {
				return nil, fmt.Errorf("ldd %s: cannot read %q", bin, line)
			}
			continue // the vDSO
		}
		libs = append(libs, path.Clean(p))
	}
	if len(notFound) > 0 {
		return nil, fmt.Errorf("ldd %s: libraries not found: %s", bin, strings.Join(notFound, ", "))
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("ldd %s: no library in %q", bin, out)
	}
	return libs, nil
}

// listBusyboxApplets returns the applets of the static busybox bin
// (`busybox --list`), except those in omit.
func listBusyboxApplets(bin string, omit ...string) ([]string, error) {
	out, err := exec.Command(bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", bin, err)
	}
	var applets []string
	for a := range strings.FieldsSeq(string(out)) {
		if a == "busybox" || slices.Contains(omit, a) || strings.Contains(a, "/") {
			continue
		}
		applets = append(applets, a)
	}
	if len(applets) == 0 {
		return nil, errors.New(bin + " --list printed no applet")
	}
	return applets, nil
}

// busyboxFiles returns bin/busybox and a symbolic link to it in bin for
// each of its applets but omit's, as the busybox image has them (there as
// hard links).
func busyboxFiles(bin string, omit ...string) ([]imageFile, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	applets, err := listBusyboxApplets(bin, omit...)
	if err != nil {
		return nil, err
	}
	files := []imageFile{{path: "bin/busybox", mode: 0o755, data: data}}
	for _, a := range applets {
		files = append(files, imageFile{path: "bin/" + a, mode: fs.ModeSymlink | 0o777, link: "busybox"})
	}
	return files, nil
}

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd3f5f0000)\n" +
		"\tlibcurl.so.4 => /lib/x86_64-linux-gnu/libcurl.so.4 (0x00007f0e1c2a0000)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e1c0b0000)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f0e1c3b0000)\n"
	libs, err := parseLdd("curl", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/lib/x86_64-linux-gnu/libcurl.so.4", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if !slices.Equal(libs, want) {
		t.Errorf("got %q, want %q", libs, want)
	}
	if _, err := parseLdd("dig", []byte(out+"\tlibisc.so => not found\n")); err == nil || !strings.Contains(err.Error(), "libisc.so") {
		t.Errorf("a library not found: got %v, want an error naming it", err)
	}
}
