# Jobsight top-level targets. `make test` is the README's test command and
# what .ci/run runs. Integration tests need root, Slurm, Prometheus and the
# ZincSearch binary; with CI=true a missing prerequisite fails instead of
# skipping (see test/stack.Require).

GO ?= go
BIN ?= bin
# The version written into every document (agent_version): the git
# description of the checkout.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
AGENT_LDFLAGS = -s -w -X github.com/jobsight/jobsight/agent/jobagent.Version=$(VERSION)
GOTEST_TIMEOUT ?= 20m

.PHONY: all build agent agent-static site spank backend frontend test gotest grafana-test slurm22-test real-grafana-test frontend-test bench clean

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
	$(GO) build -trimpath -ldflags="-s -w" -o $(BIN)/jobsight ./cmd/jobsight

spank:
	@mkdir -p $(BIN)
	$(MAKE) -C agent/spank OUT=$(CURDIR)/$(BIN)  # SLURM_PREFIX=<your Slurm> passes through

backend:
	$(GO) run github.com/magefile/mage -v

frontend:
	@if [ -f package.json ]; then npm run build; fi

# The frontend first: the Grafana-side tests check what it emits. The
# real-cluster suites run on the Slurm release JOBSIGHT_SLURM names (default
# 26.05, built from ../shared/slurm by scripts/build-slurm.sh); slurm22-test
# then runs the smaller second round on Debian's 22.05.
test: frontend-test gotest grafana-test slurm22-test

# -count=1: never reuse cached results. The end-to-end tests build the agent
# and the SPANK plugin at run time, which Go's test cache does not see.
# The Grafana-side suites run on their own afterwards (grafana-test): each
# end-to-end package runs a Slurm cluster and servers, or a browser, and
# the machine has two cores.
GRAFANA_PKGS = ./test/grafana ./test/editors
gotest:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/test/grafana$$' -e '/test/editors$$')

# The Grafana side without Grafana's server (AGPL; never built or run
# here): the plugin executable under the plugin host (test/pluginhost) on
# real Slurm jobs and stores, the dashboards, provisioning and alert rules
# through it, and the editors in Chromium. With JOBSIGHT_TEST_GRAFANA_URL
# (and JOBSIGHT_TEST_GRAFANA_USER/PASSWORD) naming a Grafana you installed,
# test/grafana also provisions it and runs the @grafana/plugin-e2e specs.
grafana-test:
	$(GO) test -count=1 -p 1 -timeout $(GOTEST_TIMEOUT) $(GRAFANA_PKGS)

# Only the tests against a real Grafana (JOBSIGHT_TEST_GRAFANA_URL must be
# set); JOBSIGHT_SCREENSHOTS=DIR also saves each dashboard's screenshot.
real-grafana-test:
	@test -n "$$JOBSIGHT_TEST_GRAFANA_URL" || { echo "set JOBSIGHT_TEST_GRAFANA_URL (and JOBSIGHT_TEST_GRAFANA_USER/PASSWORD) to a Grafana 11-13 with the plugin installed" >&2; exit 2; }
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run 'TestRealGrafana' ./test/grafana

# The plugin frontend: types (against the Go models' JSON examples too),
# lint, the editor and datasource tests (jest, CI mode: no watch, no
# snapshot writes), the dist/ bundle Grafana loads and its source map
# checked as Grafana's plugin validator checks it; then the same jest tests
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
		if [ -f compat/grafana13/node_modules/react/package.json ]; then \
			npm run test:react19; \
		elif [ "$$CI" = true ]; then \
			echo "compat/grafana13/node_modules is missing (CI=true): run npm ci --prefix compat/grafana13" >&2; exit 1; \
		else \
			echo "skipping the React 19 run: compat/grafana13/node_modules is missing (npm ci --prefix compat/grafana13)"; \
		fi; \
	fi

# The second Slurm target, Debian's 22.05 (out of SchedMD's support, still
# run by sites): the SPANK plugin, one job of each kind end to end, and the
# cluster-state collector. Skipped when the first round already ran on 22.05.
SLURM22_SPANK = TestPluginStartsAndStopsOneAgentPerJob|TestPluginWithMissingAgentLeavesJobsAlone|TestPluginHandsJobsToTheRunningNodeAgent|TestPluginBuildsForEveryRelease
SLURM22_E2E = TestBusyJobIsMeasuredAgainstItsRequest|TestCancelledJobGetsItsFinalState|TestFailedJobKeepsItsExitCode|TestJobOverItsMemoryLimit|TestArrayTasksHaveTheirOwnDocuments|TestForgedNamesForgeNothing|TestHeterogeneousJobAcrossNodes|TestMultiNodeJobsAssembleEveryNode|TestControllerCallsPerJob
slurm22-test:
	@if [ "$${JOBSIGHT_SLURM:-26.05}" = "22.05" ]; then echo "slurm22-test: the first round ran on 22.05 already"; exit 0; fi; \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -p 1 -timeout $(GOTEST_TIMEOUT) -run '$(SLURM22_SPANK)' ./test/spank && \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run TestCollectorOnRealCluster ./internal/site/clusterstate && \
	JOBSIGHT_SLURM=22.05 $(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run '$(SLURM22_E2E)' ./test/e2e

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
	$(MAKE) -C agent/spank clean
