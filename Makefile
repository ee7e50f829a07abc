# nrinet developer targets. `make test` is what CI runs (see .ci/run). make
# build, install, install-containerd, install-crio and release are for
# operators: see "Build, install, release" below and docs/install.md.
GO ?= go

# Every version of outside software nrinet builds and tests against, in one
# place (internal/pins/versions.env, also sourced by hack/*.sh and read by
# Go code through internal/pins): KUBERNETES_VERSION, CONTAINERD_VERSION,
# CRIO_VERSION, CRI_TOOLS_VERSION, CNI_PLUGINS_VERSION, ...
include $(dir $(firstword $(MAKEFILE_LIST)))internal/pins/versions.env

.PHONY: deps test lint unit interop compat deploy-test image image-test upstream-suite generate bench fuzz demo soak chaos chaos-ci containerd containerd-test crio crio-test containerd-integration e2e-containerd e2e-crio critest-crio bench-containerd kube e2e-kube e2e-migration e2e-adversarial bench-kube bench-density bench-netpol-scale conformance-prepare conformance conformance-ci conformance-all conformance-mixed conformance-multinetwork

## [test] the tests CI runs (make test): deps, lint, unit, compat, deploy-test
test: deps lint unit compat deploy-test

# make help: every target, one line each, by group, from the
# "## [group] text" line right above each rule (hack/make-help.awk, which
# fails on a malformed one; internal/makehelp checks that no target is
# left out).
.PHONY: help
## [dev] this list
help:
	@awk -f $(dir $(firstword $(MAKEFILE_LIST)))hack/make-help.awk $(dir $(firstword $(MAKEFILE_LIST)))internal/pins/versions.env $(firstword $(MAKEFILE_LIST))

# What the tests need on the machine besides Go (internal/hostdeps, the one
# list make demo and .ci/run share): anything missing is installed with
# apt-get, saying what and why, before any build; without apt-get, one line
# names each missing package and make stops.
## [dev] install what the tests need on this machine with apt-get, or name what is missing (internal/hostdeps)
deps:
	@GOWORK=off $(GO) build -o _output/hostdeps ./internal/cmd/hostdeps && _output/hostdeps test
unit interop compat deploy-test: deps

# nrinet is several Go modules (docs/dev/modules.md): the root module holds
# the NRI libraries a runtime links, and nothing else, so that adopting
# them moves none of a runtime's requirements; the commands, plugins, CRI
# server, IPAM, tools and tests are modules of their own. go.work is the
# one list of the modules joined for development and tests: GO_MODULES is
# read from it (the directories of its use lines; it has no replace
# line), and the targets below take their modules from the
# variables derived here, never from a list of their own (internal/gomodules
# checks that together they name every module of the repository once).
# E2E_MODULES are the end-to-end suites, test/*-e2e: they need root and
# built runtimes, and run in targets of their own (make e2e-containerd,
# e2e-crio, e2e-kube, ...); make lint vets them, make unit leaves them out.
# OUTSIDE_MODULES are the repository's modules that go.work leaves out
# because they require other versions of modules the workspace shares
# (compat/nri, deploy): each builds alone (GOWORK=off), make lint vets it
# and a target of make test tests it (make compat, make deploy-test).
GO_MODULES := $(filter . ./%,$(shell $(GO) work edit -print go.work))
E2E_MODULES := $(filter ./test/%-e2e,$(GO_MODULES))
UNIT_MODULES := $(filter-out $(E2E_MODULES),$(GO_MODULES))
OUTSIDE_MODULES := $(filter-out $(GO_MODULES),$(patsubst %/go.mod,./%,$(shell git ls-files -- '*/go.mod')))
GO_PKGS := $(addsuffix /...,$(UNIT_MODULES))

# go vet compiles every package it checks and their dependencies, with
# its build flags: the workspace's packages are vetted as make build, make
# image and the tests' helper binaries (testutil.GoBuild) build them
# (CGO_ENABLED=0 -trimpath), so that on a fresh machine the dependency tree
# is compiled once for both, not once more for vet (nrinet has no cgo).
# The end-to-end suites are vetted as their go test builds them, and
# test/interop once more as its upstream build (-tags upstream) is. In the
# workspace each shared module is built at the highest version any module
# asks for: the root module is vetted alone too (GOWORK=off), at its own.
## [test] gofmt and go vet of every module: go.work's, the root module alone, and those outside go.work
lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath $(GO_PKGS)
	$(GO) vet $(addsuffix /...,$(E2E_MODULES))
	$(GO) vet -tags upstream ./test/interop/...
	GOWORK=off $(GO) vet ./...
	$(foreach m,$(OUTSIDE_MODULES),(cd $(m) && GOWORK=off $(GO) vet ./...) &&) true

# -p 4: two packages' tests per CPU. Many of them mostly wait (network
# namespaces, plugin processes, timeouts they prove), and two at a time
# left a third of the CPUs idle. hack/image's TestImages, which links every
# image's binary for two architectures, runs in make image-test instead.
# -timeout 30m: on a fresh machine, with an empty Go build cache, the
# dependency tree is compiled first (several minutes on 2 cores); with the
# cache kept the whole target takes about 4 minutes.
## [test] go test -race of every module of go.work but the end-to-end suites (test/*-e2e) and make image-test's
unit:
	$(GO) test -race -count=1 -p 4 -timeout 30m -skip '^TestImages$$' $(GO_PKGS)

# Every module's requirements into the module cache: go.work's, then each
# module outside it (.ci/run, before the tests).
.PHONY: mod-download
## [dev] download the requirements of every module: go.work's, then those outside it (GOWORK=off)
mod-download:
	$(GO) mod download
	$(foreach m,$(OUTSIDE_MODULES),(cd $(m) && GOWORK=off $(GO) mod download) &&) true

## [test] test/interop alone (part of make unit): nrinet against upstream containerd/nri, both directions
interop:
	cd test/interop && $(GO) test -race -count=1 ./...

# compat/nri, the module github.com/containerd/nri on nrinet (docs/compat.md).
## [test] compat/nri, github.com/containerd/nri on nrinet: vet and tests
compat:
	cd compat/nri && GOWORK=off $(GO) vet ./... && GOWORK=off $(GO) test -race -count=1 ./...

# The module deploy (outside go.work: Helm and kustomize require newer
# versions of modules the workspace shares): the configuration files of the
# manifests under deploy/ decoded as the plugins decode them, the manifests
# rendered with kustomize and checked (deploy/test), and helm-test's tests;
# no cluster needed.
## [test] the module deploy: the manifests' configuration, the manifests rendered with kustomize and checked, the Helm chart's tests
deploy-test:
	cd deploy && GOWORK=off $(GO) test -race -count=1 ./...

# The Helm chart deploy/helm/nrinet alone (docs/deploy.md, "Install with
# Helm"): linted and rendered with Helm v4's library, its objects compared
# with the kustomize overlays' for the same settings and its monitoring
# objects with deploy/monitoring's (deploy/test); cmd/helm-release's
# tests (make e2e-helm installs the chart on a cluster with it).
.PHONY: helm-test manifest
## [test] the Helm chart deploy/helm/nrinet alone: linted, rendered, equal to the kustomize overlays and deploy/monitoring
helm-test: deps
	cd deploy && GOWORK=off $(GO) test -race -count=1 ./test/helmchart/... ./test/cmd/manifest/... ./test/cmd/helm-release/... && \
		GOWORK=off $(GO) test -race -count=1 -run '^TestChart_' ./test

# The alerts of deploy/monitoring (docs/metrics.md, "Dashboard and
# alerts"): promtool check rules over rules.yaml, and promtool test rules
# over rules_test.yaml (every alert fires on its condition and stays
# silent otherwise). promtool v3.16.0 is built once from the Go module
# proxy by hack/promtool.sh into
# $(NRINET_PROMTOOL_CACHE)/promtool-$(PROMETHEUS_MODULE_VERSION)-nosd (default /var/cache/nrinet);
# a cold build is minutes, so this is not part of make test (CI runs it
# after). The dashboard and the PrometheusRule are checked in make test
# (deploy, TestMonitoring_*).
.PHONY: alerts-test
## [test] deploy/monitoring's alerts: promtool check rules and promtool test rules (builds promtool once)
alerts-test:
	eval "$$(GO=$(GO) hack/promtool.sh)" && cd deploy/monitoring && \
		"$$NRINET_PROMTOOL" check rules rules.yaml && "$$NRINET_PROMTOOL" test rules rules_test.yaml

# nrinet's version, stamped into every binary that make build, install,
# release and image produce (and containerd's, as $(CONTAINERD_VERSION)+nrinet.<it
# without the v>): hack/version.sh, i.e. git describe --tags of the last
# v* tag (v0.0.0-<commits>-g<hash> before the first), -dirty with changes.
# A release is an annotated tag: git tag -a vX.Y.Z (docs/install.md).
ifeq ($(origin VERSION),undefined)
VERSION := $(shell hack/version.sh)
endif

# The images of nri-podnet and nri-cni, each an OCI image index of one
# image per architecture in IMAGE_ARCHS, offline, no Docker:
# _output/images/<name>.tar, OCI archives named
# localhost/nrinet/<name>:VERSION and :latest (hack/image, docs/deploy.md).
# make image-push REGISTRY=host[:port]/path pushes the same indexes as
# REGISTRY/<name>:VERSION and :latest (a release: at its tag, or with
# VERSION=v0.1.0 as make release takes it) with go-containerregistry
# (credentials from ~/.docker/config.json; TLS, falling back to plain HTTP
# only for localhost:PORT, loopback and private IPv4 addresses).
IMAGE_ARCHS ?= amd64,arm64
.PHONY: image image-push
## [release] the nri-podnet and nri-cni OCI images for IMAGE_ARCHS into _output/images, offline
image:
	$(GO) run ./hack/image -arch $(IMAGE_ARCHS) $(if $(VERSION),-version $(VERSION))
## [release] push the images to REGISTRY=host[:port]/path as VERSION and latest
image-push:
	@test -n "$(REGISTRY)" || { echo 'make image-push: set REGISTRY=host[:port]/path' >&2; exit 2; }
	$(GO) run ./hack/image -arch $(IMAGE_ARCHS) $(if $(VERSION),-version $(VERSION)) -push $(REGISTRY)

# One manifest for a release, _output/nrinet.yaml: the Helm chart
# deploy/helm/nrinet rendered as helm template would (deploy/test's
# cmd/manifest, Helm's library; the same objects as
# deploy/overlays/nri-podnet, tested), with its default values but the
# image's tag, VERSION (the tag make image gives besides latest), and with
# REGISTRY the repository make image-push pushes to, REGISTRY/nri-podnet.
## [release] _output/nrinet.yaml: the Helm chart rendered with VERSION's image (and REGISTRY)
manifest:
	cd deploy && GOWORK=off $(GO) run ./test/cmd/manifest -chart helm/nrinet -o ../_output/nrinet.yaml \
		$(if $(VERSION),-set-string image.tag=$(VERSION)) $(if $(REGISTRY),-set-string image.repository=$(REGISTRY)/nri-podnet)

# ---- Build, install, release (docs/install.md) ----
#
# Where make install puts things, GNU style: DESTDIR is prepended to every
# path (staging; the paths inside the files stay without it). The release
# tarballs and packages hold exactly what make install, install-containerd
# and install-crio write with these defaults and INSTALL_CONFIG=0: all of it
# under /usr/local, nothing under SYSCONFDIR; the tarballs unpack with
# `tar -C /usr/local -xzf`, as containerd's own.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
DOCDIR ?= $(DATADIR)/doc
SYSCONFDIR ?= /etc
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DESTDIR ?=
INSTALL ?= install
# The architecture make build and the install targets build for (linux/GOARCH).
GOARCH ?= $(shell $(GO) env GOARCH)
# 1: make install-containerd and install-crio also write their drop-in
# under SYSCONFDIR (containerd/conf.d/nrinet-network-mode.toml,
# crio/crio.conf.d/nrinet-network-mode.conf: nrinet's own, replaced on
# every install), and make install-containerd
# $(SYSCONFDIR)/containerd/config.toml (contrib/containerd-config.toml)
# where there is none, never over one. 0: nothing under SYSCONFDIR, as
# the release: the drop-ins are under DATADIR/nrinet only.
INSTALL_CONFIG ?= 1
# Where make install-containerd, install-crio and release build containerd
# and CRI-O on nrinet (hack/containerd.sh, hack/crio.sh, static): apart
# from the cache the tests use, so that release builds and test builds
# never evict each other.
RELEASE_CACHE ?= $(or $(NRINET_CONTAINERD_CACHE),/var/cache/nrinet)/release

# nrinet's commands, static (CGO_ENABLED=0), stripped, reproducible
# (-trimpath, no VCS stamp: the version comes from VERSION), into
# _output/bin/linux-$(GOARCH).
COMMANDS := nrinetd nri-podnet nri-cni
BUILD_DIR = _output/bin/linux-$(GOARCH)
.PHONY: build install install-containerd install-crio uninstall uninstall-containerd uninstall-crio release release-test
## [build] nrinet's commands, static, into _output/bin/linux-GOARCH
build:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -trimpath -buildvcs=false \
		-ldflags '-s -w -X github.com/nrinet/nrinet/internal/version.version=$(VERSION)' \
		-o $(BUILD_DIR)/ $(addprefix ./cmd/,$(COMMANDS))

# The installed units and configuration files name the installed paths:
# contrib/ has the defaults (/usr/local/..., /etc/...), rewritten here for
# other values. containerd and nrinetd read /etc/... unless told otherwise,
# so another SYSCONFDIR is also passed on their command lines.
SED_PATHS = -e 's|/usr/local/bin|$(BINDIR)|g' -e 's|/usr/local/share/doc|$(DOCDIR)|g' \
	-e 's|/usr/local/share|$(DATADIR)|g' -e 's|/usr/local/lib/systemd/system|$(SYSTEMDUNITDIR)|g' \
	-e 's|/etc/containerd/|$(SYSCONFDIR)/containerd/|g' -e 's|/etc/nrinetd/|$(SYSCONFDIR)/nrinetd/|g' \
	-e 's|/etc/crio/|$(SYSCONFDIR)/crio/|g'
# CRI-O's main file (crio.conf) is optional, and --config would make it
# required: crio only gets the drop-in directory.
ifneq ($(SYSCONFDIR),/etc)
SED_PATHS += -e 's|^\(ExecStart=.*/containerd\)$$|\1 --config $(SYSCONFDIR)/containerd/config.toml|' \
	-e 's|^\(ExecStart=.*/nrinetd\)$$|\1 -config $(SYSCONFDIR)/nrinetd/config.toml|' \
	-e 's|^\(ExecStart=[^ ]*/crio\) |\1 --config-dir $(SYSCONFDIR)/crio/crio.conf.d |'
endif
# install_text SOURCE DEST: a text file, mode 0644, its paths rewritten.
define install_text
	@echo "install $(1) $(2)"
	@$(INSTALL) -d $(dir $(2))
	@sed $(SED_PATHS) $(1) > $(2).tmp && chmod 0644 $(2).tmp && mv -f $(2).tmp $(2)
endef

# nrinet's commands, nrinetd's systemd unit (Type=notify; not enabled:
# systemctl enable --now nrinetd), the example configurations
# (DATADIR/nrinet: nrinetd.toml for /etc/nrinetd/config.toml, which
# nrinetd reads when it exists; 10-podnet.conf for nri-podnet run from
# /opt/nri/plugins) and the license. Nothing under SYSCONFDIR.
## [build] nrinet's commands, nrinetd's systemd unit and the example configurations (PREFIX, DESTDIR, ...)
install: build
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(addprefix $(BUILD_DIR)/,$(COMMANDS)) $(DESTDIR)$(BINDIR)/
	$(call install_text,contrib/nrinetd.service,$(DESTDIR)$(SYSTEMDUNITDIR)/nrinetd.service)
	$(call install_text,contrib/nrinetd.toml,$(DESTDIR)$(DATADIR)/nrinet/nrinetd.toml)
	$(call install_text,contrib/10-podnet.conf,$(DESTDIR)$(DATADIR)/nrinet/10-podnet.conf)
	$(INSTALL) -D -m 0644 LICENSE $(DESTDIR)$(DOCDIR)/nrinet/LICENSE

# containerd $(CONTAINERD_VERSION) on nrinet (containerd, containerd-shim-runc-v2, ctr:
# static, built by hack/containerd.sh in RELEASE_CACHE, reporting
# $(CONTAINERD_VERSION)+nrinet.<VERSION without v>), containerd.service (not enabled), the
# drop-in nrinet-network-mode.toml (network mode nri, podnet required) in
# DATADIR/nrinet and, with INSTALL_CONFIG=1, SYSCONFDIR/containerd/conf.d,
# the stock config.toml that imports conf.d (DATADIR/nrinet/containerd-config.toml,
# and as SYSCONFDIR/containerd/config.toml when there is none and
# INSTALL_CONFIG=1), and containerd's LICENSE and NOTICE.
## [build] containerd $(CONTAINERD_VERSION) on nrinet, its systemd unit and the network mode nri drop-in
install-containerd:
	@set -e; built=$$(NRINET_CONTAINERD_CACHE='$(RELEASE_CACHE)' NRINET_CONTAINERD_NRI=compat \
		NRINET_CONTAINERD_GOARCH=$(GOARCH) NRINET_CONTAINERD_STATIC=1 \
		NRINET_CONTAINERD_NRINET_VERSION='$(VERSION)' GO='$(GO)' hack/containerd.sh); \
	eval "$$built"; set -x; \
	$(INSTALL) -d $(DESTDIR)$(BINDIR); \
	$(INSTALL) -m 0755 "$$NRINET_CONTAINERD_BIN/containerd" "$$NRINET_CONTAINERD_BIN/containerd-shim-runc-v2" \
		"$$NRINET_CONTAINERD_BIN/ctr" $(DESTDIR)$(BINDIR)/; \
	$(INSTALL) -D -m 0644 "$$NRINET_CONTAINERD_SRC/LICENSE" $(DESTDIR)$(DOCDIR)/containerd-nrinet/LICENSE; \
	$(INSTALL) -D -m 0644 "$$NRINET_CONTAINERD_SRC/NOTICE" $(DESTDIR)$(DOCDIR)/containerd-nrinet/NOTICE
	$(call install_text,contrib/containerd.service,$(DESTDIR)$(SYSTEMDUNITDIR)/containerd.service)
	$(call install_text,contrib/nrinet-network-mode.toml,$(DESTDIR)$(DATADIR)/nrinet/nrinet-network-mode.toml)
	$(call install_text,contrib/containerd-config.toml,$(DESTDIR)$(DATADIR)/nrinet/containerd-config.toml)
ifeq ($(INSTALL_CONFIG),1)
	$(call install_text,contrib/nrinet-network-mode.toml,$(DESTDIR)$(SYSCONFDIR)/containerd/conf.d/nrinet-network-mode.toml)
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/containerd/config.toml ]; then \
		echo "kept $(DESTDIR)$(SYSCONFDIR)/containerd/config.toml; it must import $(SYSCONFDIR)/containerd/conf.d/*.toml (docs/install.md)"; \
	else \
		set -x; $(INSTALL) -m 0644 $(DESTDIR)$(DATADIR)/nrinet/containerd-config.toml $(DESTDIR)$(SYSCONFDIR)/containerd/config.toml; \
	fi
endif

# CRI-O $(CRIO_VERSION) on nrinet (crio and pinns: static, built by hack/crio.sh
# in RELEASE_CACHE; crio without cgo, pinns with the C compiler for
# GOARCH, Debian's gcc-aarch64-linux-gnu for arm64; `crio version` says
# GitCommit nri-<key>+nrinet.<VERSION without v>), crio.service (not
# enabled), the drop-in nrinet-network-mode.conf (network mode nri, podnet
# required, NRI on) in DATADIR/nrinet and, with INSTALL_CONFIG=1,
# SYSCONFDIR/crio/crio.conf.d, and CRI-O's LICENSE. conmon, crun and
# /etc/containers/policy.json come from the distribution (docs/install.md).
## [build] CRI-O $(CRIO_VERSION) on nrinet, its systemd unit and the network mode nri drop-in
install-crio:
	@set -e; built=$$(NRINET_CRIO_CACHE='$(RELEASE_CACHE)' NRINET_CRIO_GOARCH=$(GOARCH) NRINET_CRIO_STATIC=1 \
		NRINET_CRIO_NRINET_VERSION='$(VERSION)' GO='$(GO)' hack/crio.sh); \
	eval "$$built"; set -x; \
	$(INSTALL) -d $(DESTDIR)$(BINDIR); \
	$(INSTALL) -m 0755 "$$NRINET_CRIO_BIN/crio" "$$NRINET_CRIO_BIN/pinns" $(DESTDIR)$(BINDIR)/; \
	$(INSTALL) -D -m 0644 "$$NRINET_CRIO_SRC/LICENSE" $(DESTDIR)$(DOCDIR)/cri-o-nrinet/LICENSE
	$(call install_text,contrib/crio.service,$(DESTDIR)$(SYSTEMDUNITDIR)/crio.service)
	$(call install_text,contrib/nrinet-network-mode.conf,$(DESTDIR)$(DATADIR)/nrinet/nrinet-network-mode.conf)
ifeq ($(INSTALL_CONFIG),1)
	$(call install_text,contrib/nrinet-network-mode.conf,$(DESTDIR)$(SYSCONFDIR)/crio/crio.conf.d/nrinet-network-mode.conf)
endif

# What make install, install-containerd and install-crio wrote, but
# configuration you may have edited: SYSCONFDIR/containerd/config.toml
# stays (the drop-ins go, so containerd and CRI-O are back in network mode
# cni at their next start), and so does SYSCONFDIR/nrinetd. Stop the
# services first.
## [build] remove what make install wrote
uninstall:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(COMMANDS)) $(DESTDIR)$(SYSTEMDUNITDIR)/nrinetd.service
	rm -f $(DESTDIR)$(DATADIR)/nrinet/nrinetd.toml $(DESTDIR)$(DATADIR)/nrinet/10-podnet.conf $(DESTDIR)$(DOCDIR)/nrinet/LICENSE
	rmdir $(DESTDIR)$(DATADIR)/nrinet $(DESTDIR)$(DOCDIR)/nrinet 2>/dev/null || true

## [build] remove what make install-containerd wrote but SYSCONFDIR/containerd/config.toml
uninstall-containerd:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,containerd containerd-shim-runc-v2 ctr) $(DESTDIR)$(SYSTEMDUNITDIR)/containerd.service
	rm -f $(DESTDIR)$(SYSCONFDIR)/containerd/conf.d/nrinet-network-mode.toml $(DESTDIR)$(DATADIR)/nrinet/containerd-config.toml
	rm -f $(DESTDIR)$(DATADIR)/nrinet/nrinet-network-mode.toml
	rm -f $(DESTDIR)$(DOCDIR)/containerd-nrinet/LICENSE $(DESTDIR)$(DOCDIR)/containerd-nrinet/NOTICE
	rmdir $(DESTDIR)$(DATADIR)/nrinet $(DESTDIR)$(DOCDIR)/containerd-nrinet 2>/dev/null || true

## [build] remove what make install-crio wrote
uninstall-crio:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,crio pinns) $(DESTDIR)$(SYSTEMDUNITDIR)/crio.service
	rm -f $(DESTDIR)$(SYSCONFDIR)/crio/crio.conf.d/nrinet-network-mode.conf $(DESTDIR)$(DATADIR)/nrinet/nrinet-network-mode.conf
	rm -f $(DESTDIR)$(DOCDIR)/cri-o-nrinet/LICENSE
	rmdir $(DESTDIR)$(DATADIR)/nrinet $(DESTDIR)$(DOCDIR)/cri-o-nrinet 2>/dev/null || true

# The release artifacts in _output/release (hack/release): for linux/amd64
# and linux/arm64, three products, each a tarball that unpacks under
# /usr/local, its CycloneDX SBOM (<base>.cdx.json, the modules of every
# binary from its Go build info) and a .deb and an .rpm of the same files
# (nfpm): nrinet-<v>-linux-<arch> (make install's files, package nrinet),
# containerd-2.4.2-nrinet.<v>-linux-<arch> (make install-containerd's,
# containerd-nrinet) and cri-o-1.36.3-nrinet.<v>-linux-<arch> (make
# install-crio's, cri-o-nrinet), <v> being VERSION without the v; a
# <tarball>.sha256sum for each tarball and SHA256SUMS for all (sha256sum
# -c). Every binary static; entries sorted, owned by root, dated at the
# commit (SOURCE_DATE_EPOCH if set). The artifacts are checked before it
# returns. VERSION=v0.1.0 builds the release of a tag before it exists.
# release-test checks them again, and runs this machine's binaries
# (-version, containerd config dump and crio config over the shipped
# drop-ins, dpkg install into a temporary root) and make install's paths.
RELEASE_DIR ?= _output/release
## [release] tarballs, SBOMs, .deb and .rpm for linux/amd64 and arm64 into RELEASE_DIR, checked
release:
	env -u GOARCH -u GOOS $(GO) run ./hack/release -version '$(VERSION)' -out '$(RELEASE_DIR)' -make '$(MAKE)' -cache '$(RELEASE_CACHE)'

## [release] check the release in RELEASE_DIR again and run this machine's binaries from it
release-test:
	env -u GOARCH -u GOOS NRINET_RELEASE_DIR='$(abspath $(RELEASE_DIR))' $(GO) test -count=1 -v -run '^TestRelease' ./hack/release

# Regenerate api/*.pb.go from api/api.proto with the generators pinned in go.mod.
## [dev] regenerate api/*.pb.go from api/api.proto
generate:
	$(GO) generate ./api

# nrinet against containerd/nri $(NRI_VERSION); results in test/interop/bench-results.
## [bench] nrinet against containerd/nri $(NRI_VERSION) (test/interop/bench.sh)
bench:
	cd test/interop && ./bench.sh

# The nri-podnet soak: NRINET_SOAK_CYCLES pod run/stop cycles (make test runs 200).
NRINET_SOAK_CYCLES ?= 10000
## [test] the nri-podnet soak: NRINET_SOAK_CYCLES pod run/stop cycles (10000)
soak:
	NRINET_SOAK_CYCLES=$(NRINET_SOAK_CYCLES) $(GO) test -race -count=1 -timeout 30m -run '^TestPodnet_Cycles$$' -v ./plugins/podnet

# The chaos test (test/chaos): nrinetd with nri-podnet and an external plugin,
# concurrent CRI workers, random kill -9 of all three and checks after each
# restart, for CHAOS_DURATION; nrinetd and nri-podnet are built with -race.
# chaos-ci runs it for 60 s (CI, after make test).
CHAOS_DURATION ?= 20m
CHAOS_TIMEOUT ?= 60m
## [test] the chaos test (root): random kill -9 of nrinetd and its plugins under load for CHAOS_DURATION (20m)
chaos:
	NRINET_CHAOS=$(CHAOS_DURATION) NRINET_CHAOS_RACE=1 $(GO) test -race -count=1 -timeout $(CHAOS_TIMEOUT) -run '^TestChaos$$' -v ./test/chaos

## [test] the chaos test for 60 s, as CI runs it
chaos-ci:
	$(MAKE) chaos CHAOS_DURATION=60s CHAOS_TIMEOUT=15m

# Every fuzz target of the repository, FUZZTIME each (hack/fuzz.sh).
# Crashers land in <package>/testdata/fuzz/<Target>/.
FUZZTIME ?= 10s
## [test] every fuzz target for FUZZTIME each (10s)
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh

## [dev] the demo (cmd/nrinet-demo)
demo:
	$(GO) run ./cmd/nrinet-demo

# containerd/nri $(NRI_VERSION)'s own adaptation tests, run against
# compat/nri/pkg/adaptation (hack/upstream-suite.sh; expected failures in
# hack/upstream-suite.expected, explained in docs/compat.md).
## [test] containerd/nri $(NRI_VERSION)'s own adaptation tests against compat/nri
upstream-suite:
	hack/upstream-suite.sh

# containerd $(CONTAINERD_VERSION) from the Go module proxy, built against the
# github.com/containerd/nri that NRINET_CONTAINERD_NRI selects (upstream or
# compat; hack/containerd.sh has the default) into
# $(NRINET_CONTAINERD_CACHE)/containerd-$(CONTAINERD_VERSION)-<key>/bin; a no-op when built.
# containerd-test runs containerd's unit tests of the packages that use NRI
# in that tree and compares them with stock containerd's baseline
# (test/containerd, docs/dev/containerd-suites.md).
## [build] containerd $(CONTAINERD_VERSION) on nrinet (NRINET_CONTAINERD_NRI=upstream: stock) into NRINET_CONTAINERD_CACHE
containerd:
	GO=$(GO) hack/containerd.sh

## [test] containerd's own unit tests of its NRI packages on nrinet, against stock's baseline (root)
containerd-test:
	GO=$(GO) NRINET_CONTAINERD_TEST=1 $(GO) test -count=1 -v -timeout 45m -run '^TestContainerdNRIPackages$$' ./test/containerd

# The images as make image-push builds them (hack/image): both
# architectures, pushed to a registry on 127.0.0.1 and read back, built
# twice byte for byte, and imported into containerd as docs/deploy.md
# says (with make containerd's build). Each build links every image's
# binary for both architectures, which is why make unit leaves it out.
# -timeout 30m: on a fresh machine the first build compiles every
# dependency for arm64 too (several minutes on 2 cores).
## [test] the images of make image-push: built for both architectures, pushed, reproducible, imported into containerd (root)
image-test:
	eval "$$(GO=$(GO) hack/containerd.sh)" && NRINET_CONTAINERD_BIN="$$NRINET_CONTAINERD_BIN" $(GO) test -count=1 -v -timeout 30m -run '^(TestImages|TestContainerdImport)$$' ./hack/image

# CRI-O $(CRIO_VERSION) from the Go module proxy, as make containerd: built
# against the github.com/containerd/nri that NRINET_CRIO_NRI selects
# (upstream or compat, the default) into
# $(NRINET_CONTAINERD_CACHE)/crio-$(CRIO_VERSION)-<key>/bin (crio and pinns); a
# no-op when built. crio-test runs CRI-O's unit tests of the packages that
# use NRI on CRI-O on nrinet (NRINET_CRIO_NRI=upstream: on stock CRI-O) and
# compares them with stock CRI-O's baseline, recorded with
# `go test ./test/crio -update` on stock (test/crio, docs/dev/crio-suites.md).
## [build] CRI-O $(CRIO_VERSION), stock and on nrinet, into NRINET_CONTAINERD_CACHE
crio:
	GO=$(GO) NRINET_CRIO_NRI=upstream hack/crio.sh >/dev/null
	GO=$(GO) hack/crio.sh

## [test] CRI-O's own unit tests of its NRI packages on nrinet, against stock's baseline (root)
crio-test:
	GO=$(GO) NRINET_CRIO_TEST=1 $(GO) test -count=1 -v -timeout 45m -run '^TestCrioNRIPackages$$' ./test/crio

# containerd's own NRI integration tests (integration/nri_test.go and
# nri_linux_test.go of containerd $(CONTAINERD_VERSION), NRI plugins on upstream's stub in
# the test process), run as containerd's CI runs them: its test binary
# (go test -c ./integration, cached beside each build) against a live
# containerd kept alive across the tests' restarts. Three runtimes: stock
# containerd (the anchor), containerd on nrinet with CNI, and containerd on
# nrinet in network_mode nri with nri-podnet; every test that passes on
# stock must pass on the other two (test/containerd-e2e,
# TestContainerdIntegration; docs/dev/containerd-suites.md, "containerd's NRI
# integration tests"). Not part of make test. Results, test output and
# containerd's logs in INTEGRATION_OUT.
INTEGRATION_OUT ?= $(CURDIR)/containerd-integration
## [cluster] containerd's NRI integration tests on stock containerd and containerd on nrinet
containerd-integration:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 NRINET_CONTAINERD_INTEGRATION=1 NRINET_CONTAINERD_INTEGRATION_OUT=$(INTEGRATION_OUT) $(GO) test -count=1 -v -timeout 60m -run '^TestContainerdIntegration$$' .

# The containerd end-to-end suite (test/containerd-e2e; docs/dev/containerd-suites.md,
# "End-to-end suite"): builds, or finds built, stock containerd and
# containerd on nrinet (hack/containerd.sh, both into NRINET_CONTAINERD_CACHE),
# then runs real pods with runc, driven by crictl, with NRI plugins as
# separate processes, and checks that nothing is left on the host. Needs
# root, runc and busybox-static (.ci/run installs them). E2E_RUN is go test's
# -run pattern, e.g. E2E_RUN='TestContainerd/^4-' for scenario 4 only.
E2E_RUN ?= .
## [cluster] pods on stock containerd and containerd on nrinet with NRI plugins, leak checks (E2E_RUN)
e2e-containerd:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '$(E2E_RUN)' .

# CRI-O end to end (test/crio-e2e): stock CRI-O with CNI beside CRI-O on
# nrinet with its patch series, in network_mode cni and nri (nri-podnet,
# nri-cni), with conmon and runc, images from a registry on 127.0.0.1.
## [cluster] pods on stock CRI-O and CRI-O on nrinet in network_mode cni and nri, leak checks
e2e-crio:
	NRINET_CRIO_NRI=upstream GO=$(GO) hack/crio.sh >/dev/null
	NRINET_CRIO_NRI=compat GO=$(GO) hack/crio.sh >/dev/null
	cd test/crio-e2e && NRINET_CRIO_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '$(E2E_RUN)' .

# critest $(CRI_TOOLS_VERSION) against stock CRI-O and CRI-O on nrinet in network_mode
# cni and nri (nri-podnet), its NRI specs unless CRITEST_FOCUS says other
# (test/crio-e2e, docs/dev/crio-suites.md, "critest").
## [cluster] critest against stock CRI-O and CRI-O on nrinet (CRITEST_FOCUS, CRITEST_OUT)
critest-crio:
	NRINET_CRIO_NRI=upstream GO=$(GO) hack/crio.sh >/dev/null
	NRINET_CRIO_NRI=compat GO=$(GO) hack/crio.sh >/dev/null
	cd test/crio-e2e && NRINET_CRIO_E2E=1 NRINET_CRITEST=1 NRINET_CRITEST_FOCUS='$(CRITEST_FOCUS)' NRINET_CRITEST_OUT='$(CRITEST_OUT)/crio' $(GO) test -count=1 -v -timeout 60m -run '^TestCritest$$' .

# critest $(CRI_TOOLS_VERSION) (cri-tools' CRI validation suite, built with go test -c
# into $TMPDIR/nrinet-critest-$(CRI_TOOLS_VERSION)) against stock containerd and
# containerd on nrinet (CNI mode with portmap, and network mode nri with
# nri-podnet), each with a registry on 127.0.0.1 that serves critest's
# busybox image as registry.k8s.io's and a busybox httpd as its web server
# image (docs/dev/containerd-suites.md, "critest"). CRITEST_FOCUS is critest's
# -ginkgo.focus; empty, each suite's default: 'NRI|Networking' (the NRI
# and the networking specs) for containerd, 'NRI' for CRI-O. '.' runs
# every spec, many of which need images only a real registry has.
# Per-spec results in CRITEST_OUT/results.md.
CRITEST_FOCUS ?=
CRITEST_OUT ?= $(CURDIR)/critest-results
.PHONY: critest
## [cluster] critest against stock containerd and containerd on nrinet (CRITEST_FOCUS, CRITEST_OUT)
critest:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 NRINET_CRITEST=1 NRINET_CRITEST_FOCUS='$(CRITEST_FOCUS)' NRINET_CRITEST_OUT='$(CRITEST_OUT)' $(GO) test -count=1 -v -timeout 40m -run '^TestCritest$$' .

# crictl runp until READY on stock containerd + CNI, containerd on nrinet
# with nri-cni and with nri-podnet, and nrinetd with nri-podnet: one pod
# per sample, BENCH_COUNT samples (docs/performance.md); raw results and
# benchstat's summary in BENCH_OUT.
BENCH_COUNT ?= 10
BENCH_PODS ?= 10
BENCH_OUT ?= $(CURDIR)/bench-containerd
## [bench] crictl runp until READY on stock containerd and on nrinet, BENCH_COUNT samples
bench-containerd:
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	mkdir -p $(BENCH_OUT)
	cd test/containerd-e2e && NRINET_CONTAINERD_E2E=1 $(GO) test -run '^$$' -bench RunPodSandbox -benchtime $(BENCH_PODS)x -count $(BENCH_COUNT) -timeout 30m . > $(BENCH_OUT)/runp.txt
	cd test/containerd-e2e && $(GO) tool benchstat $(BENCH_OUT)/runp.txt | tee $(BENCH_OUT)/benchstat.txt

# etcd $(ETCD_VERSION), Kubernetes $(KUBERNETES_VERSION) (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kubectl, kube-proxy), Kubernetes' e2e suite
# (e2e.test, agnhost, the ginkgo CLI it requires) and CoreDNS $(COREDNS_VERSION), all
# from the Go module proxy, built into
# $(NRINET_KUBE_CACHE)/kubernetes-$(KUBERNETES_VERSION)-<key>/bin (default cache
# /var/cache/nrinet); a no-op when built. A cold build took 49 minutes here
# on 2 cores under heavy load from other work (23 minutes of CPU): etcd a
# tenth of it, the Kubernetes binaries half, e2e.test and CoreDNS a third
# (docs/dev/kube-e2e.md has each step's time). NRINET_KUBE_E2E_SUITE=0 leaves
# out e2e.test and CoreDNS, which only the conformance targets need (CI).
## [build] etcd, Kubernetes $(KUBERNETES_VERSION), its e2e suite and CoreDNS into NRINET_KUBE_CACHE
kube:
	GO=$(GO) hack/kube.sh

# The Kubernetes end-to-end suite (test/kube-e2e, docs/dev/kube-e2e.md): builds,
# or finds built, the Kubernetes binaries (hack/kube.sh), containerd on
# nrinet and stock containerd (hack/containerd.sh) and the CNI plugins
# (hack/cni-plugins.sh), then runs a control plane, two nodes of nrinetd +
# nri-podnet and a real node (kubelet, containerd in network mode nri,
# nri-podnet) with pods, the migration of a two-node cluster from CNI to
# nrinet and back (e2e-migration), the Helm chart installed on a real node
# (e2e-helm), secondary networks claimed through DRA on two real nodes
# (e2e-multinetwork), and checks that nothing is left on the host.
# Needs root, iproute2, ping, runc and busybox-static, and for the images
# of Kubernetes' own e2e specs (TestE2EImages) curl, bind9-dnsutils,
# netcat-openbsd and nginx (.ci/run installs them). KUBE_E2E_RUN is go
# test's -run pattern, e.g. 'TestKube/^2-'.
KUBE_E2E_RUN ?= .
## [cluster] the Kubernetes end-to-end suite: a control plane, nodes of nrinetd and real kubelets (KUBE_E2E_RUN)
e2e-kube:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 20m -run '$(KUBE_E2E_RUN)' .

# The migration of a live cluster alone (test/kube-e2e TestMigration,
# which make e2e-kube runs too; docs/install.md, "Migrating a live
# cluster, node by node"): two real kubelet nodes on stock containerd with
# the CNI reference plugins, a Service requested every 100 ms from a
# client pod; the runbook moves node a, then b, to containerd on nrinet
# with nri-podnet's DaemonSet, and both back; no request fails outside a
# drain window, every pod keeps its addresses, nothing is left behind.
## [cluster] the migration of a live two-node cluster from CNI to nrinet and back alone (TestMigration)
e2e-migration:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 20m -run '^TestMigration' .

# The port security suite alone (test/kube-e2e TestAdversarial, which
# make e2e-kube runs too): two nodes of nrinetd with the real nri-podnet
# (-kube) under a control plane; a pod with raw sockets forges sources,
# VLAN tags, MACs, ARP, neighbour and router advertisements and redirects,
# asks for host ports on addresses not its node's, and a policy of 20,000
# excepts arrives; every attack is dropped, counted and unseen by its
# victim, and every legitimate flow works (docs/security.md).
## [cluster] the port security suite alone (TestAdversarial)
e2e-adversarial:
	GO=$(GO) hack/kube.sh >/dev/null
	cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '^TestAdversarial$$' .

# The Helm chart on a cluster alone (test/kube-e2e TestHelm, which make
# e2e-kube runs too; docs/dev/kube-e2e.md): a control plane and a real
# kubelet node with containerd on nrinet; deploy/test's cmd/helm-release
# (Helm v4's library) installs deploy/helm/nrinet with the suite's image,
# the pods get their network, helm upgrade with a changed value rolls the
# DaemonSet, helm uninstall removes every object of the chart, and the
# node is left as after the DaemonSet's uninstall.
.PHONY: e2e-helm
## [cluster] the Helm chart installed, upgraded and uninstalled on a real kubelet node alone (TestHelm)
e2e-helm:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '^TestHelm$$' .

# Multi-network through DRA alone (test/kube-e2e TestMultinetwork, which
# make e2e-kube runs too; docs/multinetwork.md, docs/dev/kube-e2e.md):
# two real kubelet nodes on containerd on nrinet with a second segment
# between them, nri-podnet's DaemonSet with -multinetwork; pods claim a
# bridged network across the nodes, a macvlan network and a host
# interface through ResourceClaimTemplates and reach each other over
# them, the claims' status carries their networkData, a kill of
# nri-podnet changes nothing, the bad claims fail with their reason, and
# nothing of the pods is left once they are gone.
.PHONY: e2e-multinetwork
## [cluster] secondary pod networks claimed through DRA on two real kubelet nodes alone (TestMultinetwork)
e2e-multinetwork:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -count=1 -v -timeout 15m -run '^TestMultinetwork$$' .

# Time from the creation of a 20-replica Deployment to all pods Running on
# a real kubelet node: stock containerd with the CNI bridge plugin vs
# containerd on nrinet with nri-podnet, one control plane, a fresh node per
# sample, BENCH_COUNT rounds with the two interleaved (docs/performance.md).
# go test names a repeated sub-benchmark name#NN; the suffix is stripped so
# that benchstat sees the rounds as samples. Raw results and benchstat's
# summary in BENCH_KUBE_OUT.
# BenchmarkNetpolScale (docs/performance.md): nri-podnet with a real
# kube-apiserver holding 1,000 Nodes, 10,000 pods and 1,000 policies.
BENCH_SCALE_OUT ?= $(CURDIR)/bench-netpol-scale
BENCH_SCALE_N ?= 30
## [bench] nri-podnet against a kube-apiserver with 1,000 Nodes, 10,000 pods and 1,000 policies
bench-netpol-scale:
	GO=$(GO) hack/kube.sh >/dev/null
	mkdir -p $(BENCH_SCALE_OUT)
	cd test/kube-e2e && NRINET_KUBE_E2E=1 $(GO) test -run '^$$' -bench NetpolScale -benchtime $(BENCH_SCALE_N)x -count 1 -timeout 60m -v . > $(BENCH_SCALE_OUT)/netpol-scale.txt; rc=$$?; grep -E '^(Benchmark|    scale_test)' $(BENCH_SCALE_OUT)/netpol-scale.txt; exit $$rc

BENCH_KUBE_OUT ?= $(CURDIR)/bench-kube
## [bench] a 20-replica Deployment's start, stock containerd with CNI against nrinet, BENCH_COUNT rounds
bench-kube:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	mkdir -p $(BENCH_KUBE_OUT)
	cd test/kube-e2e && NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=$(BENCH_COUNT) $(GO) test -run '^$$' -bench Deployment20 -benchtime 1x -count 1 -timeout 60m . > $(BENCH_KUBE_OUT)/deployment20.raw.txt
	sed -E 's/^(Benchmark[^ \t]*)#[0-9]+/\1/' $(BENCH_KUBE_OUT)/deployment20.raw.txt > $(BENCH_KUBE_OUT)/deployment20.txt
	cd test/kube-e2e && $(GO) tool benchstat -col /network $(BENCH_KUBE_OUT)/deployment20.txt | tee $(BENCH_KUBE_OUT)/benchstat.txt

# Pod start latency at density (docs/performance.md): a 100-replica
# Deployment on one real node (the kubelet's maxPods 110), stock containerd
# with the CNI bridge plugin vs containerd on nrinet with nri-podnet, as
# bench-kube, BENCH_DENSITY_ROUNDS rounds with the two interleaved; per pod
# start latency p50/p99/max as the test's watch saw it and the kubelet's
# SLI. Not in CI (some 2 to 3 minutes of cluster time per round here).
BENCH_DENSITY_OUT ?= $(CURDIR)/bench-density
BENCH_DENSITY_ROUNDS ?= 4
## [bench] pod start latency p50/p99 of a 100-replica Deployment on one node, stock containerd with CNI against nrinet, BENCH_DENSITY_ROUNDS rounds
bench-density:
	GO=$(GO) hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	mkdir -p $(BENCH_DENSITY_OUT)
	cd test/kube-e2e && NRINET_KUBE_E2E=1 NRINET_KUBE_BENCH_ROUNDS=$(BENCH_DENSITY_ROUNDS) $(GO) test -run '^$$' -bench 'Deployment100$$' -benchtime 1x -count 1 -timeout 60m -v . > $(BENCH_DENSITY_OUT)/deployment100.raw.txt; rc=$$?; grep -E '^(Benchmark|    bench_test)' $(BENCH_DENSITY_OUT)/deployment100.raw.txt; exit $$rc
	sed -E 's/^(Benchmark[^ \t]*)#[0-9]+/\1/' $(BENCH_DENSITY_OUT)/deployment100.raw.txt > $(BENCH_DENSITY_OUT)/deployment100.txt
	cd test/kube-e2e && $(GO) tool benchstat -col /network $(BENCH_DENSITY_OUT)/deployment100.txt | tee $(BENCH_DENSITY_OUT)/benchstat.txt

# Kubernetes' e2e network specs (e2e.test of $(KUBERNETES_VERSION)) against a conformance
# cluster (test/kube-e2e TestConformance, docs/results/conformance.md): a control
# plane, two real nodes with kube-proxy (nftables mode) and CoreDNS, first
# with the baseline network (stock containerd, CNI bridge + host-local +
# portmap), then with nrinet (containerd on nrinet, nri-podnet's
# DaemonSet), one cluster at a time. CONFORMANCE_FAMILY is the clusters' IP
# families: dual (the default: dual-stack), ipv4 or ipv6 (single-stack
# clusters, each with its own selection in test/kube-e2e/conformance/<family>/).
# Writes each cluster's log, JUnit report and TSV into
# CONFORMANCE_OUT/<network>/ (CONFORMANCE_OUT/<family>/<network>/ for ipv4 and
# ipv6) and the TSVs into test/kube-e2e/conformance/results/ (its <family>/
# for ipv4 and ipv6), and fails if a spec that passed on the baseline does
# not pass on nrinet. CONFORMANCE_PROCS is ginkgo's
# parallelism. conformance-ci runs the CI subset (Granular Checks, HostPort,
# one ClusterIP Service spec, one DNS spec) on nrinet alone, every spec
# passing.
CONFORMANCE_PROCS ?= 4
CONFORMANCE_FAMILY ?= dual
CONFORMANCE_OUT ?= $(CURDIR)/_output/conformance
CONFORMANCE_ENV = NRINET_KUBE_E2E=1 NRINET_CONFORMANCE_PROCS=$(CONFORMANCE_PROCS) NRINET_CONFORMANCE_FAMILY=$(CONFORMANCE_FAMILY) NRINET_CONFORMANCE_OUT=$(CONFORMANCE_OUT)
## [helper] build what the conformance targets need: Kubernetes with its e2e suite, containerd, CNI plugins
conformance-prepare:
	GO=$(GO) NRINET_KUBE_E2E_SUITE=1 hack/kube.sh >/dev/null
	NRINET_CONTAINERD_NRI=upstream GO=$(GO) hack/containerd.sh >/dev/null
	NRINET_CONTAINERD_NRI=compat GO=$(GO) hack/containerd.sh >/dev/null
	GO=$(GO) hack/cni-plugins.sh >/dev/null

## [cluster] Kubernetes' e2e network specs on a baseline cluster and on nrinet (hours; CONFORMANCE_FAMILY=dual|ipv4|ipv6)
conformance: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=full $(GO) test -count=1 -v -timeout 8h -run '^TestConformance$$' .

## [cluster] the CI subset of Kubernetes' e2e network specs on nrinet alone
conformance-ci: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=ci $(GO) test -count=1 -v -timeout 1h -run '^TestConformance$$' .

# Every [Conformance] spec of e2e.test $(KUBERNETES_VERSION), all SIGs (test/kube-e2e
# TestConformanceAll, docs/results/conformance.md): the clusters of make
# conformance, baseline then nrinet, with the selection of
# test/kube-e2e/conformance/all/ (every [Conformance] spec but those its
# skip.txt skips) and the images those specs run besides the network specs'
# (agnhost:2.55, nautilus, nonewprivs, sample-apiserver, etcd). Writes each
# cluster's log, JUnit report and TSV into CONFORMANCE_ALL_OUT/<network>/ and
# the TSVs into test/kube-e2e/conformance/all/results/, and fails if a spec
# that passed on the baseline does not pass on nrinet. Not in CI.
CONFORMANCE_ALL_OUT ?= $(CURDIR)/_output/conformance-all
## [cluster] every [Conformance] spec of all SIGs on a baseline cluster and on nrinet (hours; not in CI)
conformance-all: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE_OUT=$(CONFORMANCE_ALL_OUT) NRINET_CONFORMANCE=all $(GO) test -count=1 -v -timeout 10h -run '^TestConformanceAll$$' .

# The same selection on nrinet with nri-podnet's DRA driver running
# (docs/results/conformance.md, "With the DRA driver running"): the
# DaemonSet of deploy/overlays/nri-podnet-multinetwork, the multi-network
# stage's secondary networks published as ResourceSlices, no claim made.
# Writes test/kube-e2e/conformance/results/multinetwork.tsv and fails if a
# spec that passed on nrinet (the committed nrinet.tsv) does not pass here.
## [cluster] Kubernetes' e2e network specs on nrinet with nri-podnet's DRA driver running
conformance-multinetwork: conformance-prepare
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=full NRINET_CONFORMANCE_NETWORKS=multinetwork $(GO) test -count=1 -v -timeout 2h -run '^TestConformance$$' .

# The same selection on the mixed-runtime cluster (docs/results/conformance.md,
# "The mixed-runtime cluster"): node a runs containerd on nrinet, node b
# CRI-O on nrinet (hack/crio.sh), both in network mode nri, one nri-podnet
# DaemonSet serving both. Writes test/kube-e2e/conformance/results/mixed.tsv
# and fails if a spec that passed on the containerd-only nrinet cluster
# (the committed nrinet.tsv) does not pass here. NRINET_CONFORMANCE_FOCUS
# (a ginkgo focus) runs a few specs instead, without writing results.
## [cluster] Kubernetes' e2e network specs on a cluster of a containerd node and a CRI-O node, both on nrinet
conformance-mixed: conformance-prepare
	NRINET_CRIO_NRI=compat GO=$(GO) hack/crio.sh >/dev/null
	eval "$$(GO=$(GO) hack/cni-plugins.sh)" && export NRINET_CNI_BIN && cd test/kube-e2e && $(CONFORMANCE_ENV) NRINET_CONFORMANCE=full NRINET_CONFORMANCE_NETWORKS=mixed $(GO) test -count=1 -v -timeout 2h -run '^TestConformance$$' .
