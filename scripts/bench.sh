#!/usr/bin/env bash
# Prints Jobsight's performance figures.
#
#   scripts/bench.sh [OUT]      benchmarks into OUT (default bench-<commit>.txt), then,
#                               as root with Slurm installed, the agent's cost on a real 60 s job
#
# Compare two runs (e.g. before and after a change) with benchstat:
#   go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-$(git rev-parse --short HEAD 2>/dev/null || echo dev).txt}

echo "--- micro-benchmarks (-count 6) -> $out"
go test -run '^$' -bench . -benchmem -count 6 \
	./agent/collector ./agent/aggregate ./agent/monitor ./agent/spool ./agent/sink/promremote | tee "$out"

if [[ $(id -u) -eq 0 ]] && command -v slurmd >/dev/null; then
	echo "--- the agent over a real 60 s job, 1 s sampling, Elasticsearch and Prometheus on"
	go run ./cmd/jobsight-bench -seconds 60 -interval 1s -procs 16
else
	echo "--- skipping the real-job measurement (needs root and Slurm: see .ci/run)"
fi
