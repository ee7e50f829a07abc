// Command release writes nrinet's release artifacts (`make release` runs it
// from the repository root):
//
//	go run ./hack/release -version V [-out _output/release] [-arch amd64,arm64] [-make make] [-cache DIR]
//
// For each architecture it runs `make install` and `make install-containerd`
// (INSTALL_CONFIG=0) into a staging directory with the default paths
// (PREFIX=/usr/local, SYSCONFDIR=/etc) and packs each staging directory
// into a tarball, so that a tarball holds exactly what those targets
// install and unpacks at the root (`tar -C / -xzf`):
//
//	nrinet-<v>-linux-<arch>.tar.gz                  nrinetd, nri-podnet, nri-cni, nrinetd.service, examples, LICENSE
//	containerd-2.4.2-nrinet.<v>-linux-<arch>.tar.gz containerd, containerd-shim-runc-v2, ctr, containerd.service,
//	                                                the conf.d drop-in, the stock config.toml, containerd's LICENSE and NOTICE
//
// <v> is the version without its leading v (containerd's own tarballs drop
// it too); containerd on nrinet reports v2.4.2+nrinet.<v>, and the tarball
// spells the + as - because + is awkward in URLs. Next to them:
// <tarball>.sha256sum for each, and SHA256SUMS for all, both in
// sha256sum's format (`sha256sum -c SHA256SUMS` checks them).
//
// The tarballs are reproducible: regular files only (no directory
// entries, so that unpacking changes no existing directory's mode or
// time), in name order, owned by root (0/0), mode 0755 for executables and
// 0644 otherwise, all dated at SOURCE_DATE_EPOCH, or else at the commit's
// time; gzip without a name or time. The binaries are built with -trimpath
// and without VCS stamping, the version given by the linker. The same
// commit, Go version and containerd cache give the same bytes.
//
// Before it returns, it checks what it wrote as `make release-test` does
// (the layout of each tarball, that every binary is a static ELF executable
// for its architecture, the checksums), and prints one line per artifact:
// its size and SHA-256.
package main
