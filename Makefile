# Jobsight top-level targets. `make test` is the README's test command and
# what .ci/run runs. Integration tests need root, Slurm, Prometheus and the
# ZincSearch binary; with CI=true a missing prerequisite fails instead of
# skipping (see test/stack.Require).

GO ?= go
BIN ?= bin
# The version of every binary (`version`, and agent_version in every
# document) and package: the VERSION file's, with +git<commits>.<commit>
# between releases (docs/packages.md, "Versions"; cmd/jobsight-packages).
VERSION ?= $(shell $(GO) run ./cmd/jobsight-packages --print-version)
BUILD_VERSION = $(or $(VERSION),$(error no version: cmd/jobsight-packages --print-version failed, see above))
AGENT_LDFLAGS = -s -w -X github.com/jobsight/jobsight/agent/jobagent.Version=$(BUILD_VERSION)
SITE_LDFLAGS = -s -w -X main.version=$(BUILD_VERSION)
GOTEST_TIMEOUT ?= 20m

.PHONY: release arm64-test v2node-test all build agent agent-static site spank packages install-packages backend frontend plugin-archive plugin-check test gotest series-store-test grafana-test slurm22-test real-grafana-test pilot-test frontend-test bench clean

all: build

build: agent spank site

# The agent, with cgo: its GPU backends load NVML and AMD SMI at run time
# (dlopen), so one binary serves GPU and CPU nodes and needs no GPU library
# to start. agent-static builds without cgo for CPU-only sites (GPU
# support then reports itself unavailable).
agent:
	@mkdir -p $(BIN)
	CGO_ENABLED=1 $(GO) build -trimpath -ldflags="$(AGENT_LDFLAGS)" -o $(BIN)/jobsight-agent ./cmd/jobsight-agent

agent-static:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="$(AGENT_LDFLAGS)" -o $(BIN)/jobsight-agent ./cmd/jobsight-agent

# The site command (admin or login node): reports, mail, history, export.
site:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags="$(SITE_LDFLAGS)" -o $(BIN)/jobsight ./cmd/jobsight

spank:
	@mkdir -p $(BIN)
	$(MAKE) -C agent/spank OUT=$(CURDIR)/$(BIN)  # SLURM_PREFIX=<your Slurm> passes through

# The Debian and RPM packages a site installs (docs/packages.md):
# jobsight-agent and jobsight, both formats, into PKG_OUT. The version is
# VERSION's (+git<commits>.<commit> between releases; PKG_VERSION overrides
# it); PKG_ARCH=arm64 needs a C cross compiler (the binaries are always
# built with cgo).
PKG_OUT ?= $(BIN)/packages
PKG_ARCH ?= $(shell $(GO) env GOARCH)
packages:
	rm -rf $(PKG_OUT)
	$(GO) run ./cmd/jobsight-packages --out $(PKG_OUT) --arch $(PKG_ARCH) $(if $(PKG_VERSION),--version $(PKG_VERSION))

# Installs the packages on THIS machine (dpkg -i / rpm -U, as root) and
# checks them: what CI does before grafana-test runs its jobs through them.
install-packages: packages
	scripts/install-packages.sh $(PKG_OUT)

backend:
	$(GO) run github.com/magefile/mage -v

frontend:
	@if [ -f package.json ]; then npm run build; fi

# The plugin as a Grafana admin installs it: dist/ built afresh (frontend,
# then the backend for linux/amd64 and linux/arm64) and packed as
# bin/plugin/<id>-<version>.zip (one directory named by the plugin id),
# one archive per platform, and their SHA-256 sums (docs/grafana-install.md).
PLUGIN_ID = jobsight-slurm-datasource
PLUGIN_VERSION = $(shell sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' package.json | head -n 1)
PLUGIN_ARCHIVE = bin/plugin/$(PLUGIN_ID)-$(PLUGIN_VERSION).zip
plugin-archive:
	rm -rf dist bin/plugin
	npm run build
	$(GO) run github.com/magefile/mage -v archive

# A release (docs/packages.md, "Releases"): every artefact of VERSION's
# release into RELEASE_DIR (both node packages as .deb and .rpm for
# RELEASE_ARCH, the plugin archives), each checked to say VERSION inside,
# with SHA256SUMS and RELEASE_NOTES.md (VERSION's CHANGELOG.md section).
# Refuses before building when VERSION, package.json, package-lock.json,
# plugin.json and CHANGELOG.md disagree (cmd/jobsight-release).
RELEASE_DIR ?= $(BIN)/release
RELEASE_ARCH ?= amd64,arm64
release:
	$(GO) run ./cmd/jobsight-release check
	rm -rf $(RELEASE_DIR)
	$(GO) run ./cmd/jobsight-packages --release --out $(RELEASE_DIR) --arch $(RELEASE_ARCH)
	$(MAKE) plugin-archive
	cp $(PLUGIN_ARCHIVE) bin/plugin/$(PLUGIN_ID)-$(PLUGIN_VERSION).linux_*.zip $(RELEASE_DIR)/
	$(GO) run ./cmd/jobsight-release finish --arch $(RELEASE_ARCH) $(RELEASE_DIR)
	JOBSIGHT_RELEASE_DIR=$(abspath $(RELEASE_DIR)) JOBSIGHT_RELEASE_ARCH=$(RELEASE_ARCH) $(GO) test -count=1 -run TestReleaseArtefacts ./cmd/jobsight-release

# Grafana's plugin validator on the archive (errors fail; warnings and
# skipped analyzers are explained in docs/grafana-install.md).
plugin-check: plugin-archive
	scripts/validate-plugin.sh $(PLUGIN_ARCHIVE)

# The frontend first: the Grafana-side tests check what it emits. The
# real-cluster suites run on the Slurm release JOBSIGHT_SLURM names (default
# 26.05, built from ../shared/slurm by scripts/build-slurm.sh); slurm22-test
# then runs the smaller second round on Debian's 22.05.
test: frontend-test plugin-check gotest arm64-test series-store-test grafana-test slurm22-test v2node-test

# -count=1: never reuse cached results. The end-to-end tests build the agent
# and the SPANK plugin at run time, which Go's test cache does not see.
# The Grafana-side suites run on their own afterwards (grafana-test): each
# end-to-end package runs a Slurm cluster and servers, or a browser, and
# the machine has two cores.
GRAFANA_PKGS = ./test/grafana ./test/editors
gotest:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/test/grafana$$' -e '/test/editors$$' -e '/test/thanos$$' -e '/test/cgroupv2$$' -e '/test/arm64$$')

# arm64 nodes (docs/packages.md, "arm64"): the agent's unit tests built for
# arm64 (cgo, cross compiled) and run under user-mode emulation
# (qemu-aarch64-static, the arm64 C library under /usr/aarch64-linux-gnu),
# then the arm64 agent itself: `version` and `run` of a real command
# (test/arm64). Left out: ./agent/deliver, which starts Prometheus and the
# Elasticsearch-API server to test HTTP delivery (the same code on every
# architecture), and the tests that start the test binary again as a
# helper process (without binfmt the kernel cannot start an arm64 program).
ARM64_ENV = GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
ARM64_PKGS = $$($(GO) list ./agent/... | grep -v '/agent/deliver$$')
ARM64_SKIP = TestNodeAgentSurvivesRunningOutOfFiles
arm64-test:
	$(ARM64_ENV) $(GO) test -count=1 -timeout 10m -exec qemu-aarch64-static -skip '$(ARM64_SKIP)' $(ARM64_PKGS)
	$(GO) test -count=1 -timeout 10m ./test/arm64

# The agent and the datasource on a Thanos Receive hashring behind Thanos
# Query, a receiver killed mid-job, on their own: beside the end-to-end
# suites, a loaded machine once made a receiver drop a batch as out of
# order while its replica was down (docs/series-stores.md).
series-store-test:
	$(GO) test -count=1 -timeout 10m ./test/thanos

# The Grafana side without Grafana's server (AGPL; never built or run
# here): the plugin executable under the plugin host (test/pluginhost) on
# real Slurm jobs and stores, the dashboards, provisioning and alert rules
# through it, and the editors in Chromium. With JOBSIGHT_TEST_GRAFANA_URL
# (and JOBSIGHT_TEST_GRAFANA_USER/PASSWORD) naming a Grafana you installed,
# test/grafana also provisions it and runs the @grafana/plugin-e2e specs.
# With JOBSIGHT_INSTALL_PACKAGES=1 (CI) the node packages are installed on
# this machine first and the jobs run through them: the installed agent,
# the SPANK plugin built by the package's jobsight-spank-install. The two
# packages run side by side (-p 2): test/grafana mostly waits for its jobs,
# test/editors (Chromium, both React builds) mostly computes.
grafana-test: plugin-archive $(if $(JOBSIGHT_INSTALL_PACKAGES),install-packages)
	$(if $(JOBSIGHT_INSTALL_PACKAGES),JOBSIGHT_PACKAGES_INSTALLED=1) JOBSIGHT_PLUGIN_ARCHIVE=$(CURDIR)/$(PLUGIN_ARCHIVE) $(GO) test -count=1 -p 2 -timeout $(GOTEST_TIMEOUT) $(GRAFANA_PKGS)

# Only the tests against a real Grafana (JOBSIGHT_TEST_GRAFANA_URL must be
# set); JOBSIGHT_SCREENSHOTS=DIR also saves each dashboard's screenshot.
real-grafana-test:
	@test -n "$$JOBSIGHT_TEST_GRAFANA_URL" || { echo "set JOBSIGHT_TEST_GRAFANA_URL (and JOBSIGHT_TEST_GRAFANA_USER/PASSWORD) to a Grafana 11-13 with the plugin installed" >&2; exit 2; }
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run 'TestRealGrafana' ./test/grafana

# The plugin frontend: types (against the Go models' JSON examples too),
# lint, the editor and datasource tests (jest, CI mode: no watch, no
# snapshot writes), the dist/ bundle Grafana loads and its source map
# checked as Grafana's plugin validator checks it; levitate against the
# Grafana lines plugin.json claims (compat/levitate.js; a pass is
# remembered by the SHA-256 of its inputs); then the same jest tests
# on React 19 and Grafana 13's libraries (compat/grafana13, installed by
# npm ci --prefix compat/grafana13; without it skipped, with CI=true a
# failure).
frontend-test:
	@if [ -f package.json ]; then \
		npm run typecheck && \
		npm run lint && \
		npm run test:ci && \
		npm run build && \
		node scripts/check-sourcemap.js && \
		npm run levitate && \
		if [ -f compat/grafana13/node_modules/react/package.json ]; then \
			npm run test:react19; \
		elif [ "$$CI" = true ]; then \
			echo "compat/grafana13/node_modules is missing (CI=true): run npm ci --prefix compat/grafana13" >&2; exit 1; \
		else \
			echo "skipping the React 19 run: compat/grafana13/node_modules is missing (npm ci --prefix compat/grafana13)"; \
		fi; \
	fi

# The second Slurm target, Debian's 22.05 (out of SchedMD's support, still
# run by sites): the SPANK plugin, one job of each kind end to end, the
# cluster-state collector, and the advice in sbatch (Debian's
# slurm-wlm-basic-plugins carries cli_filter/lua). Skipped when the first round already ran on 22.05.
# (TestPluginBuildsForEveryRelease is not repeated: the first round builds
# the plugin against 22.05's headers too; the plugin's behaviour without an
# agent is the same code on every release and is tested in the first round;
# the hand-over to a running node agent is what every job of the 22.05 e2e
# round below goes through.)
SLURM22_SPANK = TestPluginStartsAndStopsOneAgentPerJob
SLURM22_E2E = TestBusyJobIsMeasuredAgainstItsRequest|TestCancelledJobGetsItsFinalState|TestFailedJobKeepsItsExitCode|TestJobOverItsMemoryLimit|TestArrayTasksHaveTheirOwnDocuments|TestForgedNamesForgeNothing|TestHeterogeneousJobAcrossNodes|TestMultiNodeJobsAssembleEveryNode|TestControllerCallsPerJob
slurm22-test:
	@if [ "$${JOBSIGHT_SLURM:-26.05}" = "22.05" ]; then echo "slurm22-test: the first round ran on 22.05 already"; exit 0; fi; \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -p 1 -timeout $(GOTEST_TIMEOUT) -run '$(SLURM22_SPANK)' ./test/spank && \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run TestCollectorOnRealCluster ./internal/site/clusterstate && \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) ./test/advise && \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run '$(SLURM22_E2E)' ./test/e2e

# The cgroup v2 node (test/cgroupv2): Slurm 26.05 under systemd with
# cgroup/v2 and slurmd.service Delegate=yes in a Debian 12 guest under QEMU
# (software emulation: these machines' own cgroups are v1), the packages
# built here installed there with dpkg, the stores inside the guest; every
# per-job figure checked against the kernel's (scripts/v2node builds and
# caches the image; about 10 minutes, most of it the emulated guest).
v2node-test: packages
	JOBSIGHT_PACKAGES_DIR=$(CURDIR)/$(PKG_OUT) scripts/gotest-recap.sh $(BIN)/test-logs/v2node.log $(GO) test -count=1 -timeout 45m -v ./test/cgroupv2

# The README's pilot sequence (steps 2-6) followed and timed on a fresh
# Debian 12 node under QEMU, from the packages and the plugin archive
# (test/pilot; about ten minutes of emulation; not part of make test).
pilot-test: packages plugin-archive
	JOBSIGHT_PILOT=1 JOBSIGHT_PACKAGES_DIR=$(CURDIR)/$(PKG_OUT) JOBSIGHT_PLUGIN_ARCHIVE=$(CURDIR)/$(PLUGIN_ARCHIVE) scripts/gotest-recap.sh $(BIN)/test-logs/pilot.log $(GO) test -count=1 -timeout 50m -v ./test/pilot

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
	$(MAKE) -C agent/spank clean
