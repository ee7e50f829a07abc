// Command release writes nrinet's release artifacts (`make release` runs it
// from the repository root):
//
//	go run ./hack/release -version V [-out _output/release] [-arch amd64,arm64] [-make make] [-cache DIR]
//
// For each architecture it runs `make install`, `make install-containerd`
// and `make install-crio` (INSTALL_CONFIG=0) into a staging directory with
// the default paths (PREFIX=/usr/local), which must hold nothing outside
// /usr/local, and writes for each of the three products:
//
//	nrinet-<v>-linux-<arch>                 nrinetd, nri-podnet, nri-cni, nrinetd.service, examples, LICENSE
//	containerd-2.4.2-nrinet.<v>-linux-<arch> containerd, containerd-shim-runc-v2, ctr, containerd.service,
//	                                        the conf.d drop-in and config.toml (examples), LICENSE and NOTICE
//	cri-o-1.36.3-nrinet.<v>-linux-<arch>     crio, pinns, crio.service, the crio.conf.d drop-in (example), LICENSE
//
// each as <base>.tar.gz, a tarball that unpacks under /usr/local
// (`tar -C /usr/local -xzf`, as containerd's own); <base>.cdx.json, its
// SBOM in CycloneDX JSON, from the Go build info of its binaries
// (sbom.go); and a .deb and an .rpm of the same files, named as each
// format names its packages (nrinet, containerd-nrinet, cri-o-nrinet),
// written with nFPM as a library (packages.go). <v> is the version
// without its leading v (containerd's own tarballs drop it too);
// containerd on nrinet reports v2.4.2+nrinet.<v>, and the tarball spells
// the + as - because + is awkward in URLs. Next to them:
// <tarball>.sha256sum for each tarball, and SHA256SUMS for every artifact,
// both in sha256sum's format (`sha256sum -c SHA256SUMS` checks them).
//
// The artifacts are reproducible: the tarballs hold regular files only
// (no directory entries, so that unpacking changes no existing
// directory's mode or time), in name order, owned by root (0/0), mode 0755
// for executables and 0644 otherwise, all dated at SOURCE_DATE_EPOCH, or
// else at the commit's time; gzip without a name or time. The packages
// and SBOMs are dated the same, with a fixed build host and a serial
// number derived from the tarball. The binaries are built with -trimpath
// and without VCS stamping, the version given by the linker. The same
// commit, Go version and runtime caches give the same bytes.
//
// Before it returns, it checks what it wrote as `make release-test` does
// (the layout of each tarball, that every binary is a static ELF
// executable for its architecture, each SBOM against the tarball's
// binaries, each package read back against its tarball, the checksums),
// and prints one line per artifact: its size and SHA-256.
package main
