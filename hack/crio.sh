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
# NRI in the source tree; docs/crio.md describes both.
#
# Environment:
#   NRINET_CRIO_NRI      which github.com/containerd/nri CRI-O is built against:
#                          upstream  the version CRI-O's go.mod requires (stock CRI-O);
#                          compat    this checkout's compat/nri on its nrinet, through two
#                                    replace lines.
#                        Default: compat.
#   NRINET_CRIO_CACHE    where the cache directories go. Default: NRINET_CONTAINERD_CACHE, else
#                        /var/cache/nrinet (CI keeps it between runs).
#   NRINET_CRIO_VERSION  CRI-O's version. Default: v1.36.3 (the one test/crio's baseline was
#                        recorded with).
#   GO                   the go command. Default: go.
#
# CRI-O is built as its Makefile builds it, with the build tags that need no
# C library beyond libc (BUILDTAGS below: no ostree, btrfs, GPGME, AppArmor
# or seccomp library), cgo on; pinns with CRI-O's own pinns/Makefile (static,
# gcc and libc's static archive).
#
# Layout of a cache directory, one per CRI-O version and per what it is
# built against (<cache>/crio-<version>-<key>, key "upstream" or a hash of
# hack/runtime-build.sh):
#   src/          CRI-O's source, writable, with go.mod edited
#   src/go.mod.orig, src/go.sum.orig   go.mod and go.sum as CRI-O ships them
#   go.mod.diff   what the replace lines and go mod tidy changed in go.mod (empty for upstream)
#   bin/          crio, pinns
#   prepared      stamp of the go.mod step (its inputs, one per line)
#   built         stamp of the build step (the prepared stamp plus the Go version and flags)
# A step runs again only when its stamp differs from what it would write now.
set -euo pipefail

nri_mode=${NRINET_CRIO_NRI:-compat}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
version=${NRINET_CRIO_VERSION:-v1.36.3}
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
# compat_key, die, timed, stamp_is, fetch_source, record_gomod_diff and
# prune_compat_dirs.
. "$repo/hack/runtime-build.sh"

case $nri_mode in
upstream) key=upstream ;;
compat) key=$(compat_key "$repo" "$nri_dir" "$patch_dir") ;;
*) die "NRINET_CRIO_NRI=$nri_mode: want upstream or compat" ;;
esac
command -v "${CC:-gcc}" >/dev/null || die "pinns is C: install gcc (Debian: gcc, libc6-dev)"

dir=$cache_root/crio-$version-$key
src=$dir/src
bin=$dir/bin
mkdir -p "$cache_root"
exec 9>"$dir.lock"
flock 9

self_hash=$(cat "${BASH_SOURCE[0]}" "$repo/hack/runtime-build.sh" | sha256sum | cut -c1-12)
prepared_stamp="crio $version
nri $nri_mode
script $self_hash"
if [ "$nri_mode" = compat ]; then
	prepared_stamp+="
replace $nri_mod => $nri_dir
replace $nrinet_mod => $repo"
fi
ldflags="-X $crio_mod/internal/version.buildCommit=nri-$key"
built_stamp="$prepared_stamp
go $("$GO" env GOVERSION)
tags $buildtags
ldflags $ldflags"

print_result() {
	touch "$dir/prepared"
	log "CRI-O $version ($nri_mode) binaries in $bin: crio, pinns"
	printf 'NRINET_CRIO_VERSION=%s\nNRINET_CRIO_NRI=%s\n' "$version" "$nri_mode"
	printf 'NRINET_CRIO_SRC=%s\nNRINET_CRIO_BIN=%s\n' "$src" "$bin"
}

if stamp_is "$dir/built" "$built_stamp" && [ -x "$bin/crio" ] && [ -x "$bin/pinns" ]; then
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
	rm -f "$dir/prepared" "$dir/built"
	cp "$src/go.mod.orig" "$src/go.mod"
	cp "$src/go.sum.orig" "$src/go.sum"
	if [ "$nri_mode" = compat ]; then
		log "replace $nri_mod => $nri_dir"
		log "replace $nrinet_mod => $repo"
		(cd "$src" && "$GO" mod edit -replace "$nri_mod=$nri_dir" -replace "$nrinet_mod=$repo")
		(cd "$src" && timed "go mod tidy" "$GO" mod tidy)
	fi
	record_gomod_diff "$dir"
	printf '%s\n' "$prepared_stamp" >"$dir/prepared"
fi

# Step 3: the binaries.
rm -f "$dir/built"
mkdir -p "$bin"
(cd "$src" && timed "go build crio" "$GO" build -trimpath -tags "$buildtags" -ldflags "$ldflags" -o "$bin/crio" ./cmd/crio)
(cd "$src" && timed "make pinns" make -s -C pinns >&2)
cp "$src/bin/pinns" "$bin/pinns"
printf '%s\n' "$built_stamp" >"$dir/built"

[ "$nri_mode" != compat ] || prune_compat_dirs "$cache_root/crio-$version" "$dir" "$keep_compat_dirs"

print_result
