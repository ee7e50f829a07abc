# nrinet developer targets. `make test` is what CI runs (see .ci/run).
GO ?= go

.PHONY: test lint unit interop compat deploy-test image upstream-suite generate bench fuzz demo soak chaos chaos-ci containerd containerd-test e2e-containerd bench-containerd kube e2e-kube bench-kube conformance-prepare conformance conformance-ci

test: lint unit interop compat deploy-test

lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd test/interop && $(GO) vet ./... && $(GO) vet -tags upstream ./...
	cd test/containerd-e2e && $(GO) vet ./...
	cd deploy/test && $(GO) vet ./...
	cd test/kube-e2e && $(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

interop:
	cd test/interop && $(GO) test -race -count=1 ./...

# compat/nri, the module github.com/containerd/nri on nrinet (docs/compat.md).
compat:
	cd compat/nri && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# The manifests under deploy/, rendered with kustomize and checked
# (deploy/test, a module of its own; no cluster needed).
deploy-test:
	cd deploy/test && $(GO) test -race -count=1 ./...

# The images of nri-podnet and nri-cni as OCI image archives, offline, no
# Docker: _output/images/<name>.tar, named localhost/nrinet/<name>:VERSION
# and :latest (hack/image, docs/deploy.md). VERSION defaults to
# `git describe --always --dirty`.
VERSION ?=
image:
	$(GO) run ./hack/image $(if $(VERSION),-version $(VERSION))

# Regenerate api/*.pb.go from api/api.proto with the generators pinned in go.mod.
generate:
	$(GO) generate ./api

# nrinet against containerd/nri v0.12.5; results in test/interop/bench-results.
bench:
	cd test/interop && ./bench.sh

# The nri-podnet soak: NRINET_SOAK_CYCLES pod run/stop cycles (make test runs 200).
NRINET_SOAK_CYCLES ?= 10000
soak:
	NRINET_SOAK_CYCLES=$(NRINET_SOAK_CYCLES) $(GO) test -race -count=1 -timeout 30m -run '^TestPodnet_Cycles$$' -v ./plugins/podnet

# The chaos test (test/chaos): nrinetd with nri-podnet and an external plugin,
# concurrent CRI workers, random kill -9 of all three and checks after each
# restart, for CHAOS_DURATION; nrinetd and nri-podnet are built with -race.
# chaos-ci runs it for 60 s (CI, after make test).
CHAOS_DURATION ?= 20m
CHAOS_TIMEOUT ?= 60m
chaos:
	NRINET_CHAOS=$(CHAOS_DURATION) NRINET_CHAOS_RACE=1 $(GO) test -race -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' -v ./test/chaos

chaos-ci:
	$(MAKE) chaos CHAOS_DURATION=60s CHAOS_TIMEOUT=15m

# Every fuzz target of the repository, FUZZTIME each (hack/fuzz.sh).
# Crashers land in <package>/testdata/fuzz/<Target>/.
FUZZTIME ?= 10s
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh

demo:
	$(GO) run ./cmd/nrinet-demo

# containerd/nri v0.12.5's own adaptation tests, run against
# compat/nri/pkg/adaptation (hack/upstream-suite.sh; expected failures in
# hack/upstream-suite.expected, explained in docs/compat.md).
upstream-suite:
	hack/upstream-suite.sh

# containerd v2.4.2 from the Go module proxy, built against the
# github.com/containerd/nri that NRINET_CONTAINERD_NRI selects (upstream or
# compat; hack/containerd.sh has the default) into
# $(NRINET_CONTAINERD_CACHE)/containerd-v2.4.2-<key>/bin; a no-op when built.
# containerd-test runs containerd's unit tests of the packages that use NRI
# in that tree and compares them with stock containerd's baseline
# (test/containerd, docs/containerd.md).
containerd:
	GO=$(GO) hack/containerd.sh

containerd-test:
	GO=$(GO) NRINET_CONTAINERD_TEST=1 $(GO) test -count=1 -v -timeout 45m -run '^TestContainerdNRIPackages$$' ./test/containerd

# The containerd end-to-end suite (test/containerd-e2e; docs/containerd.md,
# "End-to-end suite"): builds, or finds built, stock containerd and
# containerd on nrinet (hack/containerd.sh, both into NRINET_CONTAINERD_CACHE),
# then runs real pods with runc, driven by crictl, with NRI plugins as
# separate processes, and checks that nothing is left on the host. Needs
# root, runc and busybox-static (.ci/run installs them). E2E_RUN is go test's
# -run pattern, e.g. E2E_RUN='TestContainerd/^4-' for scenario 4 only.
E2E_RUN ?= .
e2e-containerd:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '$(E2E_RUN)' .

# crictl runp until READY on stock containerd + CNI, containerd on nrinet
# with nri-cni and with nri-podnet, and nrinetd with nri-podnet: one pod
# per sample, BENCH_COUNT samples (docs/performance.md); raw results and
# benchstat's summary in BENCH_OUT.
BENCH_COUNT ?= 10
BENCH_PODS ?= 10
BENCH_OUT ?= $(CURDIR)/bench-containerd
bench-containerd:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	mkdir -p $(BENCH_OUT)
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 $(GO) test -run '^$$' -bench RunPodSandbox -benchtime $(BENCH_PODS)x -count $(BENCH_COUNT) -timeout 30m . > $(BENCH_OUT)/runp.txt
	cd test/containerd-e2e && $(GO) tool benchstat $(BENCH_OUT)/runp.txt | tee $(BENCH_OUT)/benchstat.txt

# etcd v3.6.16, Kubernetes v1.34.4 (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl, kube-proxy), Kubernetes' e2e suite
# (e2e.test, agnhost, the ginkgo CLI it requires) and CoreDNS v1.12.1, all
# from the Go module proxy, built into
# $(NRINET_KUBE_CACHE)/kubernetes-v1.34.4-<key>/bin (default cache
# /var/cache/nrinet); a no-op when built. A cold build took 49 minutes here
# on 2 cores under heavy load from other work (23 minutes of CPU): etcd a
# tenth of it, the Kubernetes binaries half, e2e.test and CoreDNS a third
# (docs/kube-e2e.md has each step's time).
kube:
	GO=$(GO) hack/kube.sh

# The Kubernetes end-to-end suite (test/kube-e2e, docs/kube-e2e.md): builds,
# or finds built, the Kubernetes binaries (hack/kube.sh) and containerd on
# nrinet (hack/containerd.sh), then runs a control plane, two nodes of
# nrinetd + nri-podnet and a real node (kubelet, containerd in network mode
# nri, nri-podnet) with pods, and checks that nothing is left on the host.
# Needs root, iproute2, ping, runc and busybox-static, and for the images
# of Kubernetes' own e2e specs (TestE2EImages) curl, bind9-dnsutils,
# netcat-openbsd and nginx (.ci/run installs them). KUBE_E2E_RUN is go
# test's -run pattern, e.g. 'TestKube/^2-'.
KUBE_E2E_RUN ?= .
e2e-kube:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 20m -run '$(KUBE_E2E_RUN)' .

# Time from the creation of a 20-replica Deployment to all pods Running on
# a real kubelet node: stock containerd with the CNI bridge plugin vs
# containerd on nrinet with nri-podnet, one control plane, a fresh node per
# sample, BENCH_COUNT rounds with the two interleaved (docs/performance.md).
# go test names a repeated sub-benchmark name#NN; the suffix is stripped so
# that benchstat sees the rounds as samples. Raw results and benchstat's
# summary in BENCH_KUBE_OUT.
BENCH_KUBE_OUT ?= $(CURDIR)/bench-kube
bench-kube:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	mkdir -p $(BENCH_KUBE_OUT)
	cd test/kube-e2e && NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=$(BENCH_COUNT) $(GO) test -run '^$$' -bench Deployment20 -benchtime 1x -count 1 -timeout 60m . > $(BENCH_KUBE_OUT)/deployment20.raw.txt
	sed -E 's/^(Benchmark[^ \t]*)#[0-9]+/\1/' $(BENCH_KUBE_OUT)/deployment20.raw.txt > $(BENCH_KUBE_OUT)/deployment20.txt
	cd test/kube-e2e && $(GO) tool benchstat -col /network $(BENCH_KUBE_OUT)/deployment20.txt | tee $(BENCH_KUBE_OUT)/benchstat.txt

# Kubernetes' e2e network specs (e2e.test of v1.34.4) against a conformance
# cluster (test/kube-e2e TestConformance, docs/conformance.md): a control
# plane, two real nodes with kube-proxy (nftables mode) and CoreDNS, first
# with the baseline network (stock containerd, CNI bridge + host-local +
# portmap), then with nrinet (containerd on nrinet, nri-podnet's
# DaemonSet), one cluster at a time. Writes each cluster's log, JUnit report
# and TSV into CONFORMANCE_OUT/<network>/ and the TSVs into
# test/kube-e2e/conformance/results/, and fails if a spec that passed on the
# baseline does not pass on nrinet. CONFORMANCE_PROCS is ginkgo's
# parallelism. conformance-ci runs the CI subset (Granular Checks, HostPort,
# one ClusterIP Service spec, one DNS spec) on nrinet alone, every spec
# passing.
CONFORMANCE_PROCS ?= 4
CONFORMANCE_OUT ?= $(CURDIR)/_output/conformance
CONFORMANCE_ENV = NRINET_KUBE_E2E=1 NRINET_CONFORMANCE_PROCS=$(CONFORMANCE_PROCS) NRINET_CONFORMANCE_OUT=$(CONFORMANCE_OUT)
conformance-prepare:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	GO=$(GO) hack/cni-plugins.sh >/dev/null

conformance: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=full $(GO) test -count=1 -v -timeout 8h -run '^TestConformance$$' .

conformance-ci: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=ci $(GO) test -count=1 -v -timeout 1h -run '^TestConformance$$' .
