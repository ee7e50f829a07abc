#!/usr/bin/env bash
# hack/promtool.sh: Prometheus's promtool, which make alerts-test runs over
# deploy/monitoring (promtool check rules, promtool test rules), built from
# the Go module proxy (module github.com/prometheus/prometheus, whose
# v0.3XX.Y is Prometheus v3.XX.Y) with `go install` into a cache directory
# named after the version, once: a second run finds it and returns at once.
# It is built with the tag remove_all_sd, which leaves out Prometheus's
# service discovery plugins (cloud SDKs, Kubernetes' client): rule checks
# and rule tests use none, and the build is a fraction of the whole.
# Prints, on stdout and nothing else,
#   NRINET_PROMTOOL=<path of the promtool binary>
# so that `eval "$(hack/promtool.sh)"` works; go's output goes to stderr.
#
# Environment:
#   NRINET_PROMTOOL_CACHE  where the cache directory goes. Default:
#                          /var/cache/nrinet (as hack/containerd.sh and
#                          hack/kube.sh), so that CI can keep it.
#   GO                     the go command. Default: go.
set -euo pipefail

main() {
	# shellcheck source=../internal/pins/versions.env
	. "$(dirname "${BASH_SOURCE[0]}")/../internal/pins/versions.env"
	local module=$PROMETHEUS_MODULE_VERSION
	# v0.316.0 -> 3.16.0, what promtool --version says.
	local release minor patch
	minor=${module#v0.3}
	minor=${minor%%.*}
	patch=${module##*.}
	release=3.$((10#$minor)).$patch
	local dir=${NRINET_PROMTOOL_CACHE:-/var/cache/nrinet}/promtool-$module-nosd
	local GO=${GO:-go}
	if [ ! -x "$dir/promtool" ]; then
		mkdir -p "$dir"
		local tmp
		tmp=$(mktemp -d "$dir/.build.XXXXXX")
		# shellcheck disable=SC2064 # $tmp now: it is local to main
		trap "rm -rf '$tmp'" EXIT
		echo "hack/promtool.sh: building promtool $release (github.com/prometheus/prometheus $module) into $dir" >&2
		GOBIN="$tmp" GOWORK=off CGO_ENABLED=0 "$GO" install -tags remove_all_sd \
			-ldflags "-s -w -X github.com/prometheus/common/version.Version=$release" \
			"github.com/prometheus/prometheus/cmd/promtool@$module" >&2
		mv -f "$tmp/promtool" "$dir/promtool"
	fi
	echo "NRINET_PROMTOOL=$dir/promtool"
}

main "$@"
