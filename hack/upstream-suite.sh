#!/usr/bin/env bash
# Runs containerd/nri v0.12.5's own runtime-side tests (the external test
# files of pkg/adaptation) against compat/nri/pkg/adaptation, nrinet's
# implementation of that package. The test files are read from the Go
# module cache (downloaded through the proxy if missing) and laid next to
# the package with `go test -overlay`: nothing of upstream's is copied
# into this repository. compat/nri/pkg/adaptation/suite_helpers_test.go
# gives the two helpers upstream keeps in an internal test file.
#
# Every test must pass, except those listed in hack/upstream-suite.expected
# (one "TestName/sub/test<TAB>reason" per line; docs/compat.md explains
# each): an expected failure that passes, or an unexpected failure, fails
# the run. The pass/fail list is written to $OUT (default
# compat/nri/upstream-suite.txt is not kept; see docs/compat.md).
#
#   hack/upstream-suite.sh [go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# compat/nri is a module outside go.work (docs/dev/modules.md).
export GOWORK=off
# shellcheck source=../internal/pins/versions.env
. internal/pins/versions.env
version=$NRI_VERSION
dir=$(go mod download -json "github.com/containerd/nri@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$dir" ] || { echo "upstream-suite: cannot find github.com/containerd/nri@$version in the module cache" >&2; exit 1; }
pkg=$root/compat/nri/pkg/adaptation
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The external tests (package adaptation_test) of upstream's pkg/adaptation.
files=(suite_test.go adaptation_suite_test.go failure_policy_test.go)
{
	echo '{"Replace": {'
	sep=
	for f in "${files[@]}"; do
		printf '%s"%s": "%s"\n' "$sep" "$pkg/upstream_$f" "$dir/pkg/adaptation/$f"
		sep=,
	done
	echo '}}'
} >"$work/overlay.json"

expected=$root/hack/upstream-suite.expected
out=${OUT:-$work/results.txt}
cd "$root/compat/nri"
set +e
# Only upstream's tests: ours (TestNrinet_*, examples) run with make compat.
go test -overlay "$work/overlay.json" -count=1 -json -skip '^(TestNrinet_|Example)' "$@" ./pkg/adaptation >"$work/test.json"
set -e
# One line per test: PASS/FAIL/SKIP name.
go run ./internal/testsummary <"$work/test.json" >"$out"
go run ./internal/testsummary -check "$expected" <"$work/test.json"
