package main

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"

	// The two packagers, registered with nfpm by their init.
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

// packageFormats are the package formats of a release, as nfpm names its
// packagers.
var packageFormats = []string{"deb", "rpm"}

// Package metadata shared by every package of a release.
const (
	// maintainer is a placeholder until the project has a contact address
	// (example.org is reserved for examples).
	maintainer = "nrinet <nrinet@example.org>"
	vendor     = "nrinet"
	homepage   = "https://github.com/nrinet/nrinet"
	license    = "Apache-2.0"
	// packageRelease is the packages' own revision of a version: the
	// Debian revision and the RPM release.
	packageRelease = "1"
	// buildHost is the RPM's build host, fixed so that the same inputs
	// give the same bytes on any machine.
	buildHost = "nrinet-release"
)

// packageMeta is what a product's packages say of themselves besides
// their files. Dependencies name each distribution's own packages, so
// they are given per format.
type packageMeta struct {
	name        string
	summary     string
	description string
	depends     map[string][]string // by format
	suggests    []string            // deb only: RPM's weak dependencies are not read by every rpm
}

var (
	nrinetPackage = packageMeta{
		name:    "nrinet",
		summary: "nrinet's network plugins for NRI (nri-podnet, nri-cni) and nrinetd",
		description: "nri-podnet and nri-cni set up pods' networks as NRI plugins of containerd or CRI-O on nrinet, " +
			"in network mode nri; nrinetd is nrinet's own pod-sandbox CRI runtime. Installed under /usr/local, " +
			"with example configurations in /usr/local/share/nrinet; no unit is enabled.",
	}
	containerdPackage = packageMeta{
		name:    "containerd-nrinet",
		summary: "containerd " + containerdVersion + " on nrinet: NRI plugins own the pod network",
		description: "containerd " + containerdVersion + ", its runc shim and ctr, built on nrinet's NRI with nrinet's patch series " +
			"(network mode nri), static. Installed under /usr/local beside a distribution's containerd, whose unit " +
			"/usr/local/lib/systemd/system/containerd.service overrides; network mode nri is a drop-in to copy from " +
			"/usr/local/share/nrinet (docs/install.md at " + homepage + "). Removing the package brings the " +
			"distribution's containerd back.",
		depends:  map[string][]string{"deb": {"runc"}, "rpm": {"runc"}},
		suggests: []string{"nrinet"},
	}
	crioPackage = packageMeta{
		name:    "cri-o-nrinet",
		summary: "CRI-O " + crioVersion + " on nrinet: NRI plugins own the pod network",
		description: "CRI-O " + crioVersion + " (crio and pinns), built on nrinet's NRI with nrinet's patch series " +
			"(network mode nri), static. Installed under /usr/local beside a distribution's CRI-O, whose unit " +
			"/usr/local/lib/systemd/system/crio.service overrides; network mode nri is a drop-in to copy from " +
			"/usr/local/share/nrinet (docs/install.md at " + homepage + "). Removing the package brings the " +
			"distribution's CRI-O back.",
		// conmon monitors containers, crun is CRI-O's default OCI runtime,
		// and containers-common holds /etc/containers/policy.json, without
		// which no image is pulled.
		depends: map[string][]string{
			"deb": {"conmon", "crun", "golang-github-containers-common"},
			"rpm": {"conmon", "crun", "containers-common"},
		},
		suggests: []string{"nrinet"},
	}
)

// describeRE matches what git describe adds after a tag: the commits since
// it and the abbreviated commit.
var describeRE = regexp.MustCompile(`^(.+)-([0-9]+)-g([0-9a-f]+)$`)

// packageVersion is the version of a release's packages, the same string
// for dpkg and rpm, ordered by both as the versions hack/version.sh prints
// are meant: a tag vX.Y.Z is X.Y.Z; a pre-release tag's suffix follows a
// tilde, so that it sorts before the release (v1.0.0-rc.1: 1.0.0~rc.1); a
// commit after a tag follows a plus, so that it sorts after the tag
// (v0.1.0-3-g0123456789ab: 0.1.0+3.g0123456789ab); -dirty becomes
// .dirty, after the tag itself +0.dirty, so that it sorts after the
// commit and before the next. Hyphens, which dpkg reads as the start of
// the revision and rpm refuses, become dots.
func packageVersion(version string) string {
	v := strings.TrimPrefix(version, "v")
	var after []string
	if rest, ok := strings.CutSuffix(v, "-dirty"); ok {
		v, after = rest, []string{"dirty"}
	}
	if m := describeRE.FindStringSubmatch(v); m != nil {
		v, after = m[1], append([]string{m[2], "g" + m[3]}, after...)
	} else if len(after) > 0 {
		after = append([]string{"0"}, after...)
	}
	if core, pre, ok := strings.Cut(v, "-"); ok {
		v = core + "~" + strings.ReplaceAll(pre, "-", ".")
	}
	if len(after) > 0 {
		v += "+" + strings.Join(after, ".")
	}
	return v
}

// packageInfo is nfpm's description of p's package for version, goarch
// and format, holding files (relative to prefix) dated mtime.
func packageInfo(p product, version, goarch, format string, fs []file, mtime time.Time) *nfpm.Info {
	info := &nfpm.Info{
		Name:          p.pkg.name,
		Arch:          goarch,
		Platform:      "linux",
		Version:       packageVersion(version),
		VersionSchema: "none",
		Release:       packageRelease,
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    maintainer,
		Description:   wrap(p.pkg.description, 72),
		Vendor:        vendor,
		Homepage:      homepage,
		License:       license,
		MTime:         mtime,
		Overridables: nfpm.Overridables{
			Depends: p.pkg.depends[format],
			RPM: nfpm.RPM{
				Summary:     p.pkg.summary,
				Group:       "System Environment/Daemons",
				BuildHost:   buildHost,
				Packager:    maintainer,
				Compression: "gzip",
			},
			Deb: nfpm.Deb{Compression: "gzip"},
		},
	}
	if format == "deb" {
		// The first line of a Debian description is its synopsis.
		info.Description = p.pkg.summary + "\n" + info.Description
		info.Suggests = p.pkg.suggests
	}
	for _, f := range fs {
		info.Contents = append(info.Contents, &files.Content{
			Source:      f.path,
			Destination: path.Join(prefix, f.name),
			FileInfo: &files.ContentFileInfo{
				Owner: "root",
				Group: "root",
				Mode:  os.FileMode(f.mode),
				MTime: mtime,
			},
		})
	}
	return nfpm.WithDefaults(info)
}

// wrap breaks text into lines of at most width columns, at spaces.
func wrap(text string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines, line = append(lines, line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}

// packageFileName is the file name of p's package in format for version
// and goarch, as the format's conventions name it
// (<name>_<version>-<revision>_<arch>.deb, <name>-<version>-<release>.<arch>.rpm).
func packageFileName(p product, version, goarch, format string) string {
	packager, err := nfpm.Get(format)
	if err != nil {
		panic(err)
	}
	return packager.ConventionalFileName(packageInfo(p, version, goarch, format, nil, time.Time{}))
}

// writePackage writes p's package in format for version and goarch,
// holding files dated mtime, into dir, and returns its name.
func writePackage(dir string, p product, version, goarch, format string, fs []file, mtime time.Time) (name string, err error) {
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info := packageInfo(p, version, goarch, format, fs, mtime)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", fmt.Errorf("%s %s: %w", p.pkg.name, format, err)
	}
	name = packager.ConventionalFileName(info)
	out := filepath.Join(dir, name)
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriter(f)
	if err := packager.Package(info, w); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return name, os.Rename(tmp, out)
}
