# hack/runtime-build.sh: what hack/containerd.sh and hack/crio.sh share,
# sourced by both after they define log (their prefix on stderr).
#
# compat_key REPO NRI_DIR PATCH_DIR prints a short hash of everything a
# runtime's build on nrinet depends on besides the runtime itself: every
# file of the replacement module (NRI_DIR) but its tests, the Go sources and
# go.mod/go.sum of nrinet's root module (the NRI libraries), and nrinet's
# patches to the runtime (PATCH_DIR/*.patch). The directories of nrinet's
# other modules (any with a go.mod of its own: the commands, plugins, tests
# and tools, and compat/, hashed as the replacement module) are left out,
# as are docs and contrib: no runtime builds them. The root module embeds
# no files (//go:embed); if it ever does, add them.
compat_key() {
	local repo=$1 nri_dir=$2 patch_dir=$3
	local prune=(-name .git -o -name testdata -o -path ./docs -o -path ./contrib)
	local d
	for d in $(cd "$repo" && find . -mindepth 2 -name go.mod -printf '%h\n' | LC_ALL=C sort); do
		prune+=(-o -path "$d")
	done
	{
		if [ -d "$patch_dir" ]; then
			(cd "$patch_dir" && find . -name '*.patch' -print | LC_ALL=C sort | xargs -r -d '\n' sha256sum)
		fi
		(cd "$nri_dir" && find . -name .git -prune -o -name testdata -prune -o \
			-type f ! -name '*_test.go' -print | LC_ALL=C sort | xargs -r -d '\n' sha256sum)
		(cd "$repo" && find . \( "${prune[@]}" \) -prune -o \
			-type f \( -name '*.go' ! -name '*_test.go' -o -name '*.s' -o -name '*.proto' \
			-o -name go.mod -o -name go.sum \) -print | LC_ALL=C sort | xargs -r -d '\n' sha256sum)
	} | sha256sum | cut -c1-12
}

die() {
	log "error: $*"
	exit 1
}

# timed NAME CMD...: runs CMD and logs how long it took.
timed() {
	local name=$1 start=$SECONDS rc=0
	shift
	"$@" || rc=$?
	log "$name: $((SECONDS - start)) s"
	return $rc
}

# stamp_is FILE TEXT: whether FILE holds exactly TEXT.
stamp_is() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# cache_dir NAME VERSION KEY VARIANT SCRIPT: the build's cache directory,
# $cache_root/NAME-VERSION-KEY: sets dir, src (the source), bin and built
# (the binaries and their stamp, of VARIANT: "" for the host's), takes the
# directory's lock on fd 9 (other checkouts on this machine may build the
# same key; the lock file sits beside the directory, so that pruning can
# remove the directory while holding its lock), and sets prepared_stamp,
# what step 2's go.mod depends on. The hash of SCRIPT and of this file is
# part of it, so that a changed flag or step there redoes both steps.
# Reads nri_mode, nri_mod, nri_dir, nrinet_mod and repo.
cache_dir() {
	local name=$1 version=$2 key=$3 variant=$4 script=$5 self_hash
	dir=$cache_root/$name-$version-$key
	src=$dir/src
	bin=$dir/bin${variant:+-$variant}
	built=$dir/built${variant:+-$variant}
	mkdir -p "$cache_root"
	exec 9>"$dir.lock"
	flock 9
	self_hash=$(cat "$script" "$repo/hack/runtime-build.sh" | sha256sum | cut -c1-12)
	prepared_stamp="$name $version
nri $nri_mode
script $self_hash"
	if [ "$nri_mode" = compat ]; then
		prepared_stamp+="
replace $nri_mod => $nri_dir
replace $nrinet_mod => $repo"
	fi
}

# reset_gomod: how step 2 starts, the stamps removed, go.mod and go.sum as
# the runtime's module has them, and in compat mode the NRI module and
# nrinet's replaced by nrinet's directories.
reset_gomod() {
	rm -f "$dir/prepared" "$dir/built" "$dir"/built-*
	cp "$src/go.mod.orig" "$src/go.mod"
	cp "$src/go.sum.orig" "$src/go.sum"
	if [ "$nri_mode" = compat ]; then
		log "replace $nri_mod => $nri_dir"
		log "replace $nrinet_mod => $repo"
		(cd "$src" && "$GO" mod edit -replace "$nri_mod=$nri_dir" -replace "$nrinet_mod=$repo")
	fi
}

# fetch_source GO MODULE VERSION DIR MODE PATCH_DIR: the runtime's source in
# DIR/src, copied writable from the module cache (which holds it read-only
# and without vendor/), with go.mod and go.sum kept as go.mod.orig and
# go.sum.orig; in compat MODE nrinet's patches (PATCH_DIR/*.patch, part of
# the key) are applied once here. Nothing is done when DIR/src is there.
fetch_source() {
	local go=$1 mod=$2 version=$3 dir=$4 mode=$5 patch_dir=$6
	local src=$dir/src modjson moddir p
	[ -f "$src/go.mod.orig" ] && return 0
	log "downloading $mod@$version through the Go module proxy"
	modjson=$(cd / && "$go" mod download -json "$mod@$version") ||
		die "go mod download $mod@$version failed: $modjson"
	moddir=$(printf '%s\n' "$modjson" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -n "$moddir" ] && [ -f "$moddir/go.mod" ] || die "no module directory in: $modjson"
	rm -rf "$dir"
	mkdir -p "$dir"
	log "copying $moddir to $src"
	cp -R "$moddir" "$src.tmp"
	chmod -R u+w "$src.tmp"
	cp "$src.tmp/go.mod" "$src.tmp/go.mod.orig"
	cp "$src.tmp/go.sum" "$src.tmp/go.sum.orig"
	if [ "$mode" = compat ]; then
		for p in "$patch_dir"/*.patch; do
			[ -e "$p" ] || continue
			log "applying $(basename "$p")"
			(cd "$src.tmp" && GIT_CEILING_DIRECTORIES=$dir git apply -p1 --whitespace=nowarn "$p") ||
				die "cannot apply $p to $mod $version"
		done
	fi
	mv "$src.tmp" "$src"
}

# record_gomod_diff DIR: DIR/go.mod.diff, what the replace lines (and go mod
# tidy) changed in DIR/src/go.mod, also logged.
record_gomod_diff() {
	local dir=$1
	diff -u "$dir/src/go.mod.orig" "$dir/src/go.mod" >"$dir/go.mod.diff" || true
	if [ -s "$dir/go.mod.diff" ]; then
		log "go.mod changes (also in $dir/go.mod.diff):"
		grep -E '^[-+][^-+]' "$dir/go.mod.diff" | sed 's/^/  /' >&2 || true
	fi
}

# prune_compat_dirs PREFIX DIR KEEP: keeps the KEEP newest hashed compat
# directories PREFIX-* besides DIR (by when a build last used them: each
# script touches DIR/prepared), removing the others; a directory whose lock
# another build holds is left alone.
prune_compat_dirs() {
	local prefix=$1 dir=$2 keep=$3 old old_dirs
	old_dirs=$(ls -1dt "$prefix-"*/prepared 2>/dev/null | sed 's|/prepared$||' |
		grep -v -e '-upstream$' | grep -vxF "$dir" | tail -n +$((keep + 1))) || true
	while read -r old; do
		[ -n "$old" ] || continue
		(
			flock -n 9 || exit 0
			log "removing the older cache directory $old"
			rm -rf "$old" "$old.lock"
		) 9>"$old.lock"
	done <<<"$old_dirs"
}
