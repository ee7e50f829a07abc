#!/usr/bin/env bash
# hack/kube.sh: build the Kubernetes binaries test/kube-e2e runs, and
# Kubernetes' own end-to-end suite, from the Go module proxy alone.
#
# Builds into <cache dir>/bin:
#   - etcd (through a small wrapper module generated in the cache directory:
#     `go install` refuses etcd's server module, whose go.mod has replace
#     lines);
#   - from a copy of k8s.io/kubernetes from the module cache, its ./staging
#     replace lines dropped and the published k8s.io/* modules of the same
#     release required instead (a module zip has no staging/ tree), in one
#     go build: kube-apiserver, kube-controller-manager, kube-scheduler,
#     kubelet, kubectl, kube-proxy, agnhost (test/images/agnhost, the e2e
#     suite's all-purpose test image's binary) and the ginkgo CLI at the
#     version Kubernetes' go.mod requires (as Kubernetes' own `make ginkgo`
#     builds it, from its module);
#   - e2e.test, `go test -c` of Kubernetes' test/e2e;
#   - CoreDNS (`go install` of github.com/coredns/coredns, whose go.mod has
#     no replace lines), the version kubeadm of this release deploys.
# The last two, "the e2e suite", only make conformance needs (and make
# e2e-kube's TestE2ESelection and TestE2EImages, which skip without them):
# NRINET_KUBE_E2E_SUITE=0 leaves them out, and a later run without it adds
# them to the same cache directory.
# All static (no cgo) and stamped with the release's version. Run it again
# with nothing changed and it returns in well under a second.
#
# On success it prints, on stdout and nothing else:
#   NRINET_KUBE_VERSION=<Kubernetes version>
#   NRINET_ETCD_VERSION=<etcd version>
#   NRINET_COREDNS_VERSION=<CoreDNS version>
#   NRINET_GINKGO_VERSION=<ginkgo version, as Kubernetes' go.mod requires it>
#   NRINET_KUBE_BIN=<directory holding the binaries>
#   NRINET_KUBE_SRC=<Kubernetes' source, go.mod edited (test/images/agnhost/porter's
#                   certificate goes into agnhost's image)>
# so that `eval "$(hack/kube.sh)"` works; progress goes to stderr.
# test/kube-e2e runs it; docs/kube-e2e.md describes both.
#
# Environment:
#   NRINET_KUBE_CACHE    where the cache directories go. Default: /var/cache/nrinet. CI keeps it
#                        fixed so that it can be kept between runs.
#   NRINET_KUBE_VERSION  the Kubernetes version. Default: KUBERNETES_VERSION of
#                        internal/pins/versions.env, where every pinned version is.
#   NRINET_ETCD_VERSION  the etcd version. Default: its ETCD_VERSION.
#   NRINET_COREDNS_VERSION  the CoreDNS version. Default: its COREDNS_VERSION (kubeadm's).
#   NRINET_KUBE_E2E_SUITE  1 (the default): build e2e.test and CoreDNS too; 0: the cluster's
#                        binaries only (etcd to ginkgo above), a third less CPU cold. CI
#                        (.ci/run) sets 0: it runs no conformance target.
#   NRINET_KUBE_BUILD_P  go build's -p (packages built in parallel). Default: go's (the number
#                        of CPUs). A cold build (empty module and build caches) takes tens of
#                        minutes on 2 cores shared with other work; run it under `nice` on a
#                        shared machine. docs/kube-e2e.md has the numbers.
#   GO                   the go command. Default: go.
#
# Layout of a cache directory, one per version pair and version of this script
# (<cache>/kubernetes-<version>-<key>, key a hash of the versions and this
# file):
#   etcd/         the wrapper module: go.mod and go.sum requiring etcd's server module
#   src/          Kubernetes' source, writable, go.mod edited (src/go.mod.orig as shipped)
#   go.mod.diff   what the edit changed in go.mod
#   bin/          etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
#                 kubectl, kube-proxy, agnhost, ginkgo; e2e.test, coredns (the e2e suite)
#   timings       seconds each step of the last builds took, "<step> <seconds>" a line
#   built         stamp of the cluster's binaries (their inputs, one per line)
#   built-e2e     stamp of the e2e suite's (the same inputs)
# A part is built again only when its stamp differs from what it would write
# now (a different Go, say); older cache directories beyond the newest two are
# removed.
#
# The whole script is one function, parsed before it runs, and the line that
# calls it ends it, so that editing this file while a (long) build runs
# cannot change what that build does.
set -euo pipefail

main() {
	local repo version etcd_version coredns_version cache_root GO
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
	# shellcheck source=../internal/pins/versions.env
	. "$repo/internal/pins/versions.env"
	version=${NRINET_KUBE_VERSION:-$KUBERNETES_VERSION}
	etcd_version=${NRINET_ETCD_VERSION:-$ETCD_VERSION}
	coredns_version=${NRINET_COREDNS_VERSION:-$COREDNS_VERSION}
	cache_root=${NRINET_KUBE_CACHE:-/var/cache/nrinet}
	GO=${GO:-go}

	local kube_mod=k8s.io/kubernetes
	local etcd_mod=go.etcd.io/etcd/server/v3
	local coredns_mod=github.com/coredns/coredns
	local ginkgo_mod=github.com/onsi/ginkgo/v2
	# The binaries: cmd/ directories of Kubernetes; packages built in the same
	# go build (agnhost from Kubernetes' module, the ginkgo CLI from a module
	# it requires); and the rest, each built on its own.
	local kube_cmds="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kube-proxy"
	local core_bins="etcd $kube_cmds agnhost ginkgo" e2e_bins="e2e.test coredns"
	local e2e_suite=${NRINET_KUBE_E2E_SUITE:-1}
	case $e2e_suite in
	0 | 1) ;;
	*) die "NRINET_KUBE_E2E_SUITE=$e2e_suite: want 0 or 1" ;;
	esac
	local all_bins=$core_bins
	[ "$e2e_suite" = 0 ] || all_bins+=" $e2e_bins"
	local keep_dirs=2

	# Go settings that must not come from the caller: no workspace (Kubernetes
	# ships a go.work, and one above the cache would take over too), no VCS
	# stamping (the copy is not a checkout), and the machine's own Go.
	export GOWORK=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local

	local self_hash key dir src bin
	self_hash=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
	key=$(printf 'kubernetes %s\netcd %s\ncoredns %s\nscript %s\n' "$version" "$etcd_version" "$coredns_version" "$self_hash" |
		sha256sum | cut -c1-12)
	dir=$cache_root/kubernetes-$version-$key
	src=$dir/src
	bin=$dir/bin
	mkdir -p "$cache_root"

	# One build per cache directory at a time: other checkouts on this machine
	# may build the same key. The lock file sits beside the directory, so that
	# pruning can remove the directory while holding its lock.
	exec 9>"$dir.lock"
	if ! flock -n 9; then
		log "waiting for another build of $dir"
		flock 9
	fi

	# Version stamps, as Kubernetes' hack/lib/version.sh sets them: kubectl
	# refuses to talk to a server reporting v0.0.0-master, and the kubelet
	# reports this version in its Node object.
	local major minor
	major=${version#v}
	major=${major%%.*}
	minor=${version#v*.}
	minor=${minor%%.*}
	local ldflags="-s -w"
	local pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	# Static binaries without cgo, as Kubernetes builds its release binaries;
	# -trimpath so that the Go build cache is shared between cache directories
	# (their paths differ).
	local build_flags="-mod=mod -trimpath"
	if [ -n "${NRINET_KUBE_BUILD_P:-}" ]; then
		build_flags+=" -p $NRINET_KUBE_BUILD_P"
	fi
	local go_version
	go_version=$("$GO" env GOVERSION)
	local built_stamp="kubernetes $version
etcd $etcd_version
coredns $coredns_version
script $self_hash
go $go_version
flags $build_flags
ldflags $ldflags
cgo 0"

	# Which parts are built: a part is when its stamp is current and its
	# binaries are there.
	local b core_built=1 e2e_built=1
	for b in $core_bins; do
		[ -x "$bin/$b" ] || core_built=0
	done
	stamp_is "$dir/built" "$built_stamp" && [ -f "$dir/ginkgo-version" ] || core_built=0
	for b in $e2e_bins; do
		[ -x "$bin/$b" ] || e2e_built=0
	done
	stamp_is "$dir/built-e2e" "$built_stamp" || e2e_built=0
	if [ $core_built = 1 ] && { [ "$e2e_suite" = 0 ] || [ $e2e_built = 1 ]; }; then
		log "up to date: $dir"
		print_result "$dir" "$bin" "$version" "$etcd_version" "$coredns_version" "$all_bins"
		exit 0
	fi
	[ $core_built = 1 ] || rm -f "$dir/built" "$dir/timings" "$dir/ginkgo-version"
	# Past this point the e2e suite's binaries are not current (not built,
	# or older than the cluster's binaries about to be built): they go with
	# their stamp, so that the tests never find a stale one.
	rm -f "$dir/built-e2e"
	for b in $e2e_bins; do rm -f "$bin/$b"; done
	mkdir -p "$dir"
	local total_start=$SECONDS
	local timings=$dir/timings

	# Step 1: etcd, through a wrapper module that requires etcd's server
	# module; its main package is built from there, the replace lines of its
	# go.mod (which only apply when it is the main module) ignored.
	if [ $core_built = 0 ]; then
		log "etcd $etcd_version: wrapper module in $dir/etcd"
		rm -rf "$dir/etcd"
		mkdir -p "$dir/etcd"
		printf 'module nrinet.invalid/kube-etcd\n\ngo 1.24\n' >"$dir/etcd/go.mod"
		(cd "$dir/etcd" && timed etcd-get "$GO" get "$etcd_mod@$etcd_version")
		(cd "$dir/etcd" && timed etcd-build env CGO_ENABLED=0 "$GO" build $build_flags -ldflags "-s -w" \
			-o "$bin/etcd" "$etcd_mod")
	fi

	# Step 2: Kubernetes' source. The module cache holds it read-only and
	# without staging/ (a nested module is not part of a module's zip), so it
	# is copied and made writable, and go.mod's replace lines pointing into
	# ./staging become requirements of the published modules of the same
	# release (v1.37.2 -> v0.37.2).
	if [ ! -f "$src/go.mod.orig" ]; then
		log "downloading $kube_mod@$version through the Go module proxy"
		local modjson moddir
		modjson=$(cd / && timed kube-download "$GO" mod download -json "$kube_mod@$version") ||
			die "go mod download $kube_mod@$version failed: $modjson"
		moddir=$(printf '%s\n' "$modjson" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
		[ -n "$moddir" ] && [ -f "$moddir/go.mod" ] || die "no module directory in: $modjson"
		rm -rf "$src" "$src.tmp"
		log "copying $moddir to $src"
		cp -R "$moddir" "$src.tmp"
		chmod -R u+w "$src.tmp"
		cp "$src.tmp/go.mod" "$src.tmp/go.mod.orig"
		cp "$src.tmp/go.sum" "$src.tmp/go.sum.orig"
		mv "$src.tmp" "$src"
	fi
	cp "$src/go.mod.orig" "$src/go.mod"
	cp "$src/go.sum.orig" "$src/go.sum"
	local staging_version="v0.${version#v1.}" edits=() mod
	# The staging replace lines, in the block or on their own:
	#   k8s.io/api => ./staging/src/k8s.io/api
	while read -r mod; do
		[ -n "$mod" ] || continue
		edits+=(-dropreplace "$mod" -require "$mod@$staging_version")
	done < <(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\./staging/.*#\2#p' "$src/go.mod.orig")
	[ ${#edits[@]} -gt 0 ] || die "no ./staging replace lines in $src/go.mod"
	log "go.mod: $((${#edits[@]} / 4)) staging replace lines become requirements of version $staging_version"
	(cd "$src" && "$GO" mod edit "${edits[@]}")
	diff -u "$src/go.mod.orig" "$src/go.mod" >"$dir/go.mod.diff" || true

	# Step 3: the Kubernetes binaries, agnhost and the ginkgo CLI, in one go
	# build so that the packages they share are compiled once. ginkgo is the
	# version Kubernetes' go.mod requires, built with its dependencies as
	# Kubernetes selects them (Kubernetes' `make ginkgo` does the same); the
	# CLI warns when it runs a suite built with another version.
	if [ $core_built = 0 ]; then
		local targets=() c ginkgo_version
		for c in $kube_cmds; do
			targets+=("./cmd/$c")
		done
		targets+=(./test/images/agnhost "$ginkgo_mod/ginkgo")
		ginkgo_version=$(cd "$src" && "$GO" list -mod=mod -m -f '{{.Version}}' "$ginkgo_mod") ||
			die "$ginkgo_mod is not a requirement of $kube_mod@$version"
		log "building $kube_cmds agnhost ginkgo (minutes when the Go build cache is cold)"
		(cd "$src" && timed kube-build env CGO_ENABLED=0 "$GO" build $build_flags \
			-ldflags "$ldflags" -o "$bin/" "${targets[@]}")
		"$bin/kubectl" version --client >&2 || die "$bin/kubectl does not run"
		"$bin/ginkgo" version >&2 || die "$bin/ginkgo does not run"
		for b in $core_bins; do
			is_static "$bin/$b" || die "$bin/$b is not linked statically"
		done
		printf '%s\n' "$ginkgo_version" >"$dir/ginkgo-version"
		printf '%s\n' "$built_stamp" >"$dir/built"
		log "the cluster's binaries built"
	fi
	if [ "$e2e_suite" = 1 ]; then
		# Step 4: e2e.test, Kubernetes' end-to-end suite
		# (test/e2e/e2e_test.go and the packages it imports), as a test
		# binary: most of what it imports step 3 compiled already. It
		# embeds its manifests (test/e2e/testing-manifests), so it needs no
		# file of the source tree at run time; with the version stamped it
		# reports this release.
		(cd "$src" && timed e2e-test-build env CGO_ENABLED=0 "$GO" test $build_flags \
			-ldflags "$ldflags" -c -o "$bin/e2e.test" ./test/e2e)

		# Step 5: CoreDNS, the cluster DNS kubeadm deploys. Its go.mod has
		# no replace lines, so `go install module@version` builds it in a
		# module of its own (its requirements as CoreDNS pins them), as its
		# own Makefile does: static, -s -w.
		(cd "$dir" && timed coredns-install env CGO_ENABLED=0 GOBIN="$bin" "$GO" install -trimpath \
			-ldflags "-s -w" "$coredns_mod@$coredns_version")

		"$bin/e2e.test" --version >&2 || die "$bin/e2e.test does not run"
		"$bin/coredns" -version >&2 || die "$bin/coredns does not run"
		for b in $e2e_bins; do
			is_static "$bin/$b" || die "$bin/$b is not linked statically"
		done
		printf '%s\n' "$built_stamp" >"$dir/built-e2e"
	fi
	printf 'total %s\n' "$((SECONDS - total_start))" >>"$timings"
	log "built in $((SECONDS - total_start)) s (e2e suite: NRINET_KUBE_E2E_SUITE=$e2e_suite); $(du -sh "$dir" | cut -f1) in $dir"

	prune "$cache_root" "$version" "$dir" "$keep_dirs"
	print_result "$dir" "$bin" "$version" "$etcd_version" "$coredns_version" "$all_bins"
}

log() { printf 'kube.sh: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# timed STEP CMD...: runs CMD, logging how long it took, and appending
# "STEP <seconds>" to the file $timings when set.
timed() {
	local name=$1 start=$SECONDS rc=0
	shift
	log "$name: $*"
	"$@" || rc=$?
	log "$name: $((SECONDS - start)) s"
	if [ -n "${timings:-}" ]; then
		printf '%s %s\n' "$name" "$((SECONDS - start))" >>"$timings"
	fi
	return $rc
}

# is_static FILE: whether the ELF file FILE has no program interpreter
# (PT_INTERP), i.e. was linked without cgo and runs in any image.
is_static() {
	# readelf is in binutils, which a Go build machine need not have: read the
	# ELF program headers with od instead. 64-bit little-endian only.
	local phoff phentsize phnum i type
	[ "$(od -An -tx1 -N6 "$1" | tr -d ' ')" = 7f454c460201 ] || return 1
	phoff=$(od -An -tu8 -j32 -N8 "$1" | tr -d ' ')
	phentsize=$(od -An -tu2 -j54 -N2 "$1" | tr -d ' ')
	phnum=$(od -An -tu2 -j56 -N2 "$1" | tr -d ' ')
	for ((i = 0; i < phnum; i++)); do
		type=$(od -An -tu4 -j$((phoff + i * phentsize)) -N4 "$1" | tr -d ' ')
		[ "$type" != 3 ] || return 1 # PT_INTERP
	done
}

# stamp_is FILE TEXT: whether FILE holds exactly TEXT.
stamp_is() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# print_result DIR BIN VERSION ETCD_VERSION COREDNS_VERSION BINARIES
print_result() {
	local b ginkgo_version
	touch "$1/built" # marks the directory as recently used, for pruning
	ginkgo_version=$(cat "$1/ginkgo-version")
	log "Kubernetes $3, etcd $4, CoreDNS $5 and ginkgo $ginkgo_version binaries in $2:"
	for b in $6; do log "  $2/$b"; done
	printf 'NRINET_KUBE_VERSION=%s\nNRINET_ETCD_VERSION=%s\nNRINET_COREDNS_VERSION=%s\nNRINET_GINKGO_VERSION=%s\nNRINET_KUBE_BIN=%s\nNRINET_KUBE_SRC=%s\n' \
		"$3" "$4" "$5" "$ginkgo_version" "$2" "$1/src"
}

# prune CACHE_ROOT VERSION KEEP_DIR KEEP: removes all but the newest KEEP
# kubernetes-* cache directories (and never KEEP_DIR); a directory whose lock
# another build holds is left alone.
prune() {
	local old old_dirs
	old_dirs=$(ls -1dt "$1/kubernetes-"*/built 2>/dev/null | sed 's|/built$||' |
		grep -vxF "$3" | tail -n +"$4") || true
	while read -r old; do
		[ -n "$old" ] || continue
		(
			flock -n 9 || exit 0
			log "removing the older cache directory $old"
			rm -rf "$old" "$old.lock"
		) 9>"$old.lock"
	done <<<"$old_dirs"
}

# One line, parsed whole before main runs: bash reads a script as it goes,
# so a separate `exit` line would be read from the file as it is when main
# returns (an edited file gave "unexpected EOF" here after a build).
main "$@"; exit
