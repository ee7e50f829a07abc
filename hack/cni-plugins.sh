#!/usr/bin/env bash
# hack/cni-plugins.sh: the CNI reference plugins the end-to-end suites run
# (bridge, host-local, loopback, portmap) at the version they expect,
# installed with `go install` from the Go module proxy into NRINET_CNI_BIN
# unless there already. Prints, on stdout and nothing else,
#   NRINET_CNI_BIN=<directory>
# so that `eval "$(hack/cni-plugins.sh)"` works. .ci/run and make
# conformance use it.
#
# Environment:
#   NRINET_CNI_BIN  the directory. Default: $TMPDIR/nrinet-cni-plugins-<version>
#                   (where test/containerd-e2e and test/kube-e2e look).
#   GO              the go command. Default: go.
set -euo pipefail

main() {
	# shellcheck source=../internal/pins/versions.env
	. "$(dirname "${BASH_SOURCE[0]}")/../internal/pins/versions.env"
	local version=$CNI_PLUGINS_VERSION
	local dir=${NRINET_CNI_BIN:-${TMPDIR:-/tmp}/nrinet-cni-plugins-$version}
	local GO=${GO:-go} p
	mkdir -p "$dir"
	for p in main/bridge ipam/host-local main/loopback meta/portmap; do
		[ -x "$dir/$(basename "$p")" ] ||
			GOBIN="$dir" GOWORK=off "$GO" install "github.com/containernetworking/plugins/plugins/$p@$version" >&2
	done
	echo "NRINET_CNI_BIN=$dir"
}

main "$@"
