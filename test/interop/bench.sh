#!/usr/bin/env bash
# Runs the nrinet-vs-upstream benchmarks of ./bench, both implementations
# interleaved run by run so that machine noise hits both alike, and compares
# them with benchstat (upstream = baseline, nrinet = new).
#
#   COUNT=6 BENCH='RunPodSandbox|CreateContainer' ./bench.sh [outdir]
set -euo pipefail
cd "$(dirname "$0")"
COUNT=${COUNT:-6}
BENCH=${BENCH:-.}
BENCHTIME=${BENCHTIME:-1s}
OUT=${1:-bench-results}
mkdir -p "$OUT"
go build -o "$OUT/benchstat" golang.org/x/perf/cmd/benchstat
go test -c -o "$OUT/nrinet.test" ./bench
go test -c -tags upstream -o "$OUT/upstream.test" ./bench
: >"$OUT/nrinet.txt"
: >"$OUT/upstream.txt"
for i in $(seq "$COUNT"); do
	for impl in upstream nrinet; do
		echo "run $i/$COUNT: $impl" >&2
		# RegisterSync iterations are slow; keep their count fixed.
		"$OUT/$impl.test" -test.run '^$' -test.bench "$BENCH" -test.benchtime "$BENCHTIME" \
			-test.count 1 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$OUT/$impl.txt"
	done
done
"$OUT/benchstat" -confidence 0.9 "$OUT/upstream.txt" "$OUT/nrinet.txt" | tee "$OUT/benchstat.txt"
