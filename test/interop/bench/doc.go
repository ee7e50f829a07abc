// Package bench measures nrinet against containerd/nri v0.12.5 on the same
// workloads. The same benchmark source is compiled twice: on nrinet by
// default and on upstream NRI with the build tag "upstream"; bench.sh runs
// both, interleaved, and compares them with benchstat. Plugins run
// in-process (goroutines of the benchmark binary) or as separate
// processes (the benchmark binary re-executed).
package bench
