#!/bin/bash
cd /tmp/floorb
: > nrinet.txt; : > upstream.txt; : > floor.txt
for i in $(seq ${COUNT:-8}); do
  ./upstream.test -test.run '^$' -test.bench 'RunPodSandbox/plugins=1/' -test.benchtime 1s 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> upstream.txt
  ./nrinet.test -test.run '^$' -test.bench 'RunPodSandbox/plugins=1/' -test.benchtime 1s 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> nrinet.txt
  ./nrinet.test -test.run '^$' -test.bench 'Floor' -test.benchtime 1s 2>/dev/null | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> floor.txt
done
echo done
