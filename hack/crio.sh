#!/usr/bin/env bash
# hack/crio.sh: build CRI-O, stock or on nrinet.
#
# Downloads CRI-O's source through the Go module proxy, copies it into a
# cache directory, points its github.com/containerd/nri requirement at this
# checkout's compat/nri (unless building stock CRI-O), runs go mod tidy, and
# builds crio and pinns into <cache dir>/bin. Run it again with nothing
# changed and it returns in well under a second.
#
# On success it prints, on stdout and nothing else:
#   NRINET_CRIO_VERSION=<CRI-O's version>
#   NRINET_CRIO_NRI=<upstream or compat>
#   NRINET_CRIO_SRC=<prepared source tree>
#   NRINET_CRIO_BIN=<directory holding crio and pinns>
# so that `eval "$(hack/crio.sh)"` works; progress goes to stderr.
# test/crio runs it and then CRI-O's unit tests of the packages that use
# NRI in the source tree; docs/dev/crio-suites.md describes both.
#
# Environment:
#   NRINET_CRIO_NRI      which github.com/containerd/nri CRI-O is built against:
#                          upstream  the version CRI-O's go.mod requires (stock CRI-O);
#                          compat    this checkout's compat/nri on its nrinet, through two
#                                    replace lines.
#                        Default: compat.
#   NRINET_CRIO_CACHE    where the cache directories go. Default: NRINET_CONTAINERD_CACHE, else
#                        /var/cache/nrinet (CI keeps it between runs).
#   NRINET_CRIO_VERSION  CRI-O's version. Default: CRIO_VERSION of
#                        internal/pins/versions.env (test/crio's baseline's).
#   NRINET_CRIO_STATIC   1: build crio static, without cgo, stripped, for NRINET_CRIO_GOARCH, as
#                        make release and make install-crio do (below). Default: 0, the build
#                        the tests use.
#   NRINET_CRIO_GOARCH   the architecture of a static build (linux/<arch>). Default: go env
#                        GOARCH. The default build is for this machine only.
#   NRINET_CRIO_NRINET_VERSION
#                        nrinet's version (hack/version.sh). When set, crio's git commit
#                        (`crio version`: GitCommit) is nri-<key>+nrinet.<it without the v>;
#                        CRI-O's own version is a constant and stays that of its release.
#   CC                   the C compiler for pinns. Default: gcc for this machine's architecture,
#                        <triplet>-gcc for another (Debian: gcc-aarch64-linux-gnu for arm64).
#   GO                   the go command. Default: go.
#
# CRI-O is built as its Makefile builds it, with the build tags that need no
# C library beyond libc (BUILDTAGS below: no ostree, btrfs, GPGME, AppArmor
# or seccomp library), cgo on; pinns with CRI-O's own pinns/Makefile (static,
# gcc and libc's static archive).
#
# A static build (NRINET_CRIO_STATIC=1) is CGO_ENABLED=0 with the same
# tags, -ldflags -s -w, into bin-static-<arch>/, and pinns built by its
# Makefile in a copy of pinns/ of its own (pinns-static-<arch>/), with the
# compiler for that architecture. CRI-O's own static release is built with
# cgo and the C libraries for seccomp, AppArmor, SELinux and GPGME (its
# nix/ directory). Without cgo, besides what the tags above leave out
# (seccomp among them, as in the default build): kubensmnt (KUBENSMNT, a
# mount namespace shared with the kubelet), the SQLite blob info cache of
# containers/image (it falls back to memory), PKCS#11 keys for encrypted
# images, and rootless mode. Overlay storage, pods, images and NRI are as
# in the default build.
#
# Layout of a cache directory, one per CRI-O version and per what it is
# built against (<cache>/crio-<version>-<key>, key "upstream" or a hash of
# hack/runtime-build.sh):
#   src/          CRI-O's source, writable, with go.mod edited
#   src/go.mod.orig, src/go.sum.orig   go.mod and go.sum as CRI-O ships them
#   go.mod.diff   what the replace lines and go mod tidy changed in go.mod (empty for upstream)
#   bin/          crio, pinns
#   bin-static-<arch>/, pinns-static-<arch>/   a static build, and pinns' build tree for it
#   prepared      stamp of the go.mod step (its inputs, one per line)
#   built         stamp of the build step (the prepared stamp plus the Go version and flags)
#   built-static-<arch>   the same, for bin-static-<arch>/
# A step runs again only when its stamp differs from what it would write now.
set -euo pipefail

nri_mode=${NRINET_CRIO_NRI:-compat}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=../internal/pins/versions.env
. "$repo/internal/pins/versions.env"
version=${NRINET_CRIO_VERSION:-$CRIO_VERSION}
static=${NRINET_CRIO_STATIC:-0}
nrinet_version=${NRINET_CRIO_NRINET_VERSION:-}
cache_root=${NRINET_CRIO_CACHE:-${NRINET_CONTAINERD_CACHE:-/var/cache/nrinet}}
nri_dir=$repo/compat/nri
# nrinet's patch series against CRI-O, applied in compat mode only.
patch_dir=$repo/hack/crio-patches
GO=${GO:-go}
keep_compat_dirs=3

crio_mod=github.com/cri-o/cri-o
nri_mod=github.com/containerd/nri
nrinet_mod=github.com/nrinet/nrinet
# CRI-O's Makefile's BUILDTAGS on a machine without the optional C
# libraries: hack/{btrfs_installed_tag,btrfs_tag,libsubid_tag,...}.sh say
# what each one excludes.
buildtags="containers_image_ostree_stub exclude_graphdriver_btrfs btrfs_noversion containers_image_openpgp"

export GOWORK=off GOFLAGS=-buildvcs=false

log() { printf 'crio.sh: %s\n' "$*" >&2; }
# compat_key, cache_dir, reset_gomod, die, timed, stamp_is, fetch_source,
# record_gomod_diff and prune_compat_dirs.
. "$repo/hack/runtime-build.sh"

case $nri_mode in
upstream) key=upstream ;;
compat) key=$(compat_key "$repo" "$nri_dir" "$patch_dir") ;;
*) die "NRINET_CRIO_NRI=$nri_mode: want upstream or compat" ;;
esac
case $static in
0 | 1) ;;
*) die "NRINET_CRIO_STATIC=$static: want 0 or 1" ;;
esac
goarch=${NRINET_CRIO_GOARCH:-$("$GO" env GOARCH)}
host_goarch=$(GOARCH= "$GO" env GOARCH)
variant=
if [ "$static" = 1 ]; then
	variant=static-$goarch
elif [ "$goarch" != "$host_goarch" ]; then
	die "NRINET_CRIO_GOARCH=$goarch: only a static build (NRINET_CRIO_STATIC=1) is for another architecture than $host_goarch"
fi
# pinns' C compiler, and the strip that reads its output.
if [ "$goarch" = "$host_goarch" ]; then
	cc=${CC:-gcc}
	cc_package="gcc, libc6-dev"
else
	case $goarch in
	amd64) triplet=x86_64-linux-gnu ;;
	arm64) triplet=aarch64-linux-gnu ;;
	*) die "NRINET_CRIO_GOARCH=$goarch: no C cross compiler known for it (set CC)" ;;
	esac
	cc=${CC:-$triplet-gcc}
	cc_package="gcc-$triplet, libc6-dev-${goarch}-cross"
fi
strip=strip
case $cc in *gcc) strip=${cc%gcc}strip ;; esac
command -v "$cc" >/dev/null || die "pinns is C: install $cc (Debian: $cc_package)"

# The cache directory, locked, and step 2's stamp (runtime-build.sh).
cache_dir crio "$version" "$key" "$variant" "${BASH_SOURCE[0]}"
commit=nri-$key
if [ -n "$nrinet_version" ]; then
	# As semver build metadata: [0-9A-Za-z-] and dots only.
	[[ $nrinet_version =~ ^v?[0-9A-Za-z.-]+$ ]] ||
		die "NRINET_CRIO_NRINET_VERSION=$nrinet_version: want a version such as v0.1.0 (hack/version.sh)"
	commit+=+nrinet.${nrinet_version#v}
fi
ldflags="-X $crio_mod/internal/version.buildCommit=$commit"
cgo=
if [ "$static" = 1 ]; then
	cgo=0
	ldflags="-s -w $ldflags"
fi
built_stamp="$prepared_stamp
go $("$GO" env GOVERSION)
goarch $goarch
static $static
cc $cc
tags $buildtags
ldflags $ldflags"

print_result() {
	touch "$dir/prepared"
	log "CRI-O $version ($nri_mode${variant:+, $variant}) binaries in $bin: crio, pinns"
	printf 'NRINET_CRIO_VERSION=%s\nNRINET_CRIO_NRI=%s\n' "$version" "$nri_mode"
	printf 'NRINET_CRIO_SRC=%s\nNRINET_CRIO_BIN=%s\n' "$src" "$bin"
}

if stamp_is "$built" "$built_stamp" && [ -x "$bin/crio" ] && [ -x "$bin/pinns" ]; then
	log "up to date: $dir"
	print_result
	exit 0
fi

# Step 1: the source, copied writable from the module cache; in compat mode
# nrinet's patches are applied once here (they are part of the key).
fetch_source "$GO" "$crio_mod" "$version" "$dir" "$nri_mode" "$patch_dir"

# Step 2: go.mod. CRI-O does not vendor; after the replace lines go mod tidy
# brings go.mod and go.sum up to date, and go.mod.diff records what moved
# (test/crio allows nothing but nrinet's modules added and upstream's WASM
# modules dropped).
if ! stamp_is "$dir/prepared" "$prepared_stamp"; then
	reset_gomod
	[ "$nri_mode" != compat ] || (cd "$src" && timed "go mod tidy" "$GO" mod tidy)
	record_gomod_diff "$dir"
	printf '%s\n' "$prepared_stamp" >"$dir/prepared"
fi

# Step 3: the binaries. A static build makes pinns in a copy of pinns/ of
# its own, so that its objects (another architecture's, maybe) never meet
# the default build's.
rm -f "$built"
mkdir -p "$bin"
log "building crio for linux/$goarch${variant:+ ($variant)}"
(cd "$src" && timed "go build crio" env GOOS=linux GOARCH="$goarch" ${cgo:+CGO_ENABLED=$cgo} \
	"$GO" build -trimpath -tags "$buildtags" -ldflags "$ldflags" -o "$bin/crio" ./cmd/crio)
if [ "$static" = 1 ]; then
	pinns_dir=$dir/pinns-$variant
	rm -rf "$pinns_dir"
	mkdir -p "$pinns_dir"
	cp -R "$src/pinns" "$pinns_dir/pinns"
	timed "make pinns" make -s -C "$pinns_dir/pinns" CC="$cc" STRIP="$strip" >&2
	cp "$pinns_dir/bin/pinns" "$bin/pinns"
else
	(cd "$src" && timed "make pinns" make -s -C pinns CC="$cc" >&2)
	cp "$src/bin/pinns" "$bin/pinns"
fi
printf '%s\n' "$built_stamp" >"$built"

[ "$nri_mode" != compat ] || prune_compat_dirs "$cache_root/crio-$version" "$dir" "$keep_compat_dirs"

print_result
