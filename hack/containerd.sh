#!/usr/bin/env bash
# hack/containerd.sh: build containerd, stock or on nrinet.
#
# Downloads containerd's source through the Go module proxy, copies it into a
# cache directory, points its github.com/containerd/nri requirement at this
# checkout's compat/nri (unless building stock containerd), re-vendors, and
# builds containerd, containerd-shim-runc-v2 and ctr into <cache dir>/bin.
# Run it again with nothing changed and it returns in well under a second.
#
# On success it prints, on stdout and nothing else:
#   NRINET_CONTAINERD_VERSION=<containerd's version>
#   NRINET_CONTAINERD_NRI=<upstream or compat>
#   NRINET_CONTAINERD_SRC=<prepared source tree, vendored>
#   NRINET_CONTAINERD_BIN=<directory holding the three binaries>
# so that `eval "$(hack/containerd.sh)"` works; progress goes to stderr.
# test/containerd runs it and then containerd's NRI unit tests in the source
# tree; docs/dev/containerd-suites.md describes both.
#
# Environment:
#   NRINET_CONTAINERD_NRI      which github.com/containerd/nri containerd is built against:
#                                upstream  the version containerd's go.mod requires (stock containerd);
#                                compat    NRINET_CONTAINERD_NRI_DIR on this checkout's nrinet, through
#                                          two replace lines.
#                              Default: compat.
#   NRINET_CONTAINERD_NRI_DIR  the module replacing github.com/containerd/nri in compat mode; its
#                              go.mod must declare `module github.com/containerd/nri`.
#                              Default: <this checkout>/compat/nri.
#   NRINET_CONTAINERD_CACHE    where the cache directories go. Default: /var/cache/nrinet. CI keeps
#                              it fixed so that it can be cached between runs.
#   NRINET_CONTAINERD_VERSION  containerd's version. Default: CONTAINERD_VERSION of
#                              internal/pins/versions.env (test/containerd's baseline's).
#   NRINET_CONTAINERD_GOARCH   the architecture to build for (linux/<arch>). Default: go env GOARCH.
#   NRINET_CONTAINERD_STATIC   1: build every binary static, without cgo, stripped, as make release
#                              does (below). Default: 0, containerd's usual build: containerd and
#                              ctr with cgo, linked against the C library; the shim static.
#   NRINET_CONTAINERD_NRINET_VERSION
#                              nrinet's version (hack/version.sh). When set, containerd reports
#                              <containerd version>+nrinet.<it without the v>, e.g.
#                              <version>+nrinet.0.1.0 (semver build metadata: it orders as <version>).
#                              Default: unset; containerd reports its own version.
#   GO                         the go command. Default: go.
#
# The default build (this machine's architecture, not static) goes to bin/;
# any other to bin-<arch>/ or bin-static-<arch>/, with its own stamp
# (built-<arch>, built-static-<arch>) in the same cache directory: the
# prepared source tree is shared, and a release build never touches the bin/
# that tests use.
#
# A static build (NRINET_CONTAINERD_STATIC=1) is CGO_ENABLED=0 with the build
# tags urfave_cli_no_docs and no_btrfs (the shim also no_grpc, as always),
# -ldflags -s -w: pure Go, so it needs no C toolchain for any architecture
# and links no C library. containerd's own static release
# (containerd-static-*) uses cgo with -extldflags -static and the tags
# osusergo netgo static_build instead; without cgo two things are left out:
# the btrfs snapshotter (github.com/containerd/btrfs is cgo) and PKCS#11 keys
# for encrypted images (ocicrypt's pkcs11 helpers are cgo). overlayfs, the
# default snapshotter, and everything else containerd does are unchanged.
#
# Layout of a cache directory, one per containerd version and per what it is
# built against (<cache>/containerd-<version>-<key>, key "upstream" or a hash):
#   src/          containerd's source, writable, with go.mod edited and vendor/ filled in
#   src/go.mod.orig, src/go.sum.orig   go.mod and go.sum as containerd ships them
#   go.mod.diff   what the replace lines changed in go.mod (empty for upstream)
#   bin/          containerd, containerd-shim-runc-v2, ctr
#   bin-*/        the same, built for another architecture or static
#   prepared      stamp of the go.mod/vendor step (its inputs, one per line)
#   built         stamp of the build step (the prepared stamp plus the Go version and flags)
#   built-*       the same, for bin-*/
# A step runs again only when its stamp differs from what it would write now.
set -euo pipefail

# What github.com/containerd/nri is: compat (nrinet's compat/nri, the default) or
# upstream (stock containerd, for the baseline).
nri_mode=${NRINET_CONTAINERD_NRI:-compat}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=../internal/pins/versions.env
. "$repo/internal/pins/versions.env"
version=${NRINET_CONTAINERD_VERSION:-$CONTAINERD_VERSION}
static=${NRINET_CONTAINERD_STATIC:-0}
nrinet_version=${NRINET_CONTAINERD_NRINET_VERSION:-}
cache_root=${NRINET_CONTAINERD_CACHE:-/var/cache/nrinet}
nri_dir=${NRINET_CONTAINERD_NRI_DIR:-$repo/compat/nri}
# nrinet's patch series against containerd, applied in compat mode only: the
# CRI's network_mode "nri" (docs/dev/containerd-suites.md explains each patch).
patch_dir=$repo/hack/containerd-patches
GO=${GO:-go}

# Hashed compat directories kept besides the one in use (older ones are removed).
keep_compat_dirs=3

containerd_mod=github.com/containerd/containerd/v2
nri_mod=github.com/containerd/nri
nrinet_mod=github.com/nrinet/nrinet

# Go settings that must not come from the caller: no workspace (a go.work above
# the cache would take over), and no VCS stamping (the copy is not a checkout).
export GOWORK=off GOFLAGS=-buildvcs=false

log() { printf 'containerd.sh: %s\n' "$*" >&2; }

# compat_key (the hash of what a compat build depends on besides
# containerd, the name of its cache directory), cache_dir, reset_gomod,
# die, timed, stamp_is, fetch_source, record_gomod_diff and
# prune_compat_dirs.
. "$repo/hack/runtime-build.sh"

case $nri_mode in
upstream)
	key=upstream
	;;
compat)
	[ -f "$nri_dir/go.mod" ] || die "NRINET_CONTAINERD_NRI=compat, but $nri_dir/go.mod does not exist"
	nri_dir=$(cd "$nri_dir" && pwd -P)
	grep -Eq "^module[[:space:]]+\"?$nri_mod\"?[[:space:]]*$" "$nri_dir/go.mod" ||
		die "$nri_dir/go.mod must declare module $nri_mod (a replacement is only accepted under the path it replaces)"
	key=$(compat_key "$repo" "$nri_dir" "$patch_dir")
	;;
*)
	die "NRINET_CONTAINERD_NRI=$nri_mode: want upstream or compat"
	;;
esac

case $static in
0 | 1) ;;
*) die "NRINET_CONTAINERD_STATIC=$static: want 0 or 1" ;;
esac
goarch=${NRINET_CONTAINERD_GOARCH:-$("$GO" env GOARCH)}
host_goarch=$(GOARCH= "$GO" env GOARCH)
variant=
if [ "$static" = 1 ]; then
	variant=static-$goarch
elif [ "$goarch" != "$host_goarch" ]; then
	variant=$goarch
fi

# The cache directory, locked, and step 2's stamp (runtime-build.sh).
cache_dir containerd "$version" "$key" "$variant" "${BASH_SOURCE[0]}"
go_version=$("$GO" env GOVERSION)
reported_version=$version
if [ -n "$nrinet_version" ]; then
	# Build metadata may hold [0-9A-Za-z-] and dots only.
	[[ $nrinet_version =~ ^v?[0-9A-Za-z.-]+$ ]] ||
		die "NRINET_CONTAINERD_NRINET_VERSION=$nrinet_version: want a version such as v0.1.0 (hack/version.sh)"
	reported_version=$version+nrinet.${nrinet_version#v}
fi
ldflags="-X $containerd_mod/version.Version=$reported_version -X $containerd_mod/version.Revision=nri-$key -X $containerd_mod/version.Package=$containerd_mod"
# Build flags as containerd's Makefile sets them (tag urfave_cli_no_docs; the
# shim static, without cgo, with tag no_grpc), plus -trimpath so that the Go
# build cache is shared between cache directories (their paths differ) and
# with test/containerd's `go test -trimpath`. A static build drops cgo and
# the btrfs snapshotter, and strips, as containerd's release builds do.
build_flags="-mod=vendor -trimpath"
tags="urfave_cli_no_docs"
cgo=
if [ "$static" = 1 ]; then
	tags+=" no_btrfs"
	cgo=0
	ldflags="-s -w $ldflags"
fi
built_stamp="$prepared_stamp
go $go_version
goarch $goarch
static $static
flags $build_flags
tags $tags
ldflags $ldflags"

print_result() {
	touch "$dir/prepared" # marks the directory as recently used, for pruning
	log "containerd $reported_version ($nri_mode${variant:+, $variant}) binaries in $bin:"
	for b in containerd containerd-shim-runc-v2 ctr; do log "  $bin/$b"; done
	printf 'NRINET_CONTAINERD_VERSION=%s\nNRINET_CONTAINERD_NRI=%s\n' "$version" "$nri_mode"
	printf 'NRINET_CONTAINERD_SRC=%s\nNRINET_CONTAINERD_BIN=%s\n' "$src" "$bin"
}

if stamp_is "$built" "$built_stamp" && [ -x "$bin/containerd" ] &&
	[ -x "$bin/containerd-shim-runc-v2" ] && [ -x "$bin/ctr" ]; then
	log "up to date: $dir"
	print_result
	exit 0
fi

# Step 1: the source. The module cache holds it read-only and without vendor/
# (module zips leave vendor/ out), so it is copied and made writable. A copy
# is never edited except for go.mod, go.sum and vendor/, which step 2 resets,
# and, in compat mode, nrinet's patches, applied once here.
fetch_source "$GO" "$containerd_mod" "$version" "$dir" "$nri_mode" "$patch_dir"

# Step 2: go.mod and vendor/. containerd's repository vendors its
# dependencies; with vendor/ present, go builds with -mod=vendor, which
# requires vendor/modules.txt to match go.mod exactly. So after the replace
# lines go.mod must be brought up to date (the replacement's requirements,
# nrinet's among them, raise some versions: go.mod.diff shows which) and
# vendor/ regenerated. `go mod tidy` runs only when `go mod vendor` says it
# is needed ("updates to go.mod needed"); stock containerd never needs it.
if ! stamp_is "$dir/prepared" "$prepared_stamp" || [ ! -f "$src/vendor/modules.txt" ]; then
	reset_gomod
	rm -rf "$src/vendor"
	vendor_err=$dir/vendor.err
	start=$SECONDS
	if (cd "$src" && "$GO" mod vendor 2>"$vendor_err"); then
		log "go mod vendor: $((SECONDS - start)) s"
	else
		if grep -q 'go mod tidy' "$vendor_err"; then
			log "go mod vendor: go.mod needs updates; running go mod tidy"
			(cd "$src" && timed "go mod tidy" "$GO" mod tidy)
			(cd "$src" && timed "go mod vendor" "$GO" mod vendor)
		else
			cat "$vendor_err" >&2
			die "go mod vendor failed in $src"
		fi
	fi
	rm -f "$vendor_err"
	record_gomod_diff "$dir"
	printf '%s\n' "$prepared_stamp" >"$dir/prepared"
fi

# Step 3: the binaries.
rm -f "$built"
mkdir -p "$bin"
log "building containerd and ctr for linux/$goarch${variant:+ ($variant)}"
(cd "$src" && timed "go build containerd ctr" env GOOS=linux GOARCH="$goarch" ${cgo:+CGO_ENABLED=$cgo} \
	"$GO" build $build_flags -tags "$tags" -ldflags "$ldflags" -o "$bin/" ./cmd/containerd ./cmd/ctr)
log "building containerd-shim-runc-v2"
(cd "$src" && timed "go build containerd-shim-runc-v2" env GOOS=linux GOARCH="$goarch" CGO_ENABLED=0 \
	"$GO" build $build_flags -tags "$tags no_grpc" -ldflags "$ldflags -extldflags -static" \
	-o "$bin/" ./cmd/containerd-shim-runc-v2)
printf '%s\n' "$built_stamp" >"$built"

# Keep the newest few hashed compat directories of this version (by when a
# build last used them: print_result touches prepared); a directory whose
# lock another build holds is left alone.
[ "$nri_mode" != compat ] || prune_compat_dirs "$cache_root/containerd-$version" "$dir" "$keep_compat_dirs"

print_result
