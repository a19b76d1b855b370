#!/usr/bin/env bash
# Prints Jobsight's performance figures.
#
#   scripts/bench.sh [OUT]      benchmarks into OUT (default bench-<commit>.txt), then,
#                               as root with Slurm installed, the node agent's whole-process cost
#                               with 1, 8 and 64 concurrent jobs at 1 s and 5 s sampling on a busy
#                               node, beside CEEMS and cgroup_exporter when JOBSIGHT_BENCH_TOOLS
#                               names a directory holding their binaries (scripts/build-peers.sh;
#                               docs/performance.md)
#
# Compare two runs (e.g. before and after a change) with benchstat:
#   go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-$(git rev-parse --short HEAD 2>/dev/null || echo dev).txt}

echo "--- micro-benchmarks (-count 6) -> $out"
go test -run '^$' -bench . -benchmem -count 6 \
	./agent/collector ./agent/aggregate ./agent/monitor ./agent/jobagent ./internal/spool ./internal/store/promremote | tee "$out"

if [[ $(id -u) -eq 0 ]] && command -v slurmd >/dev/null; then
	echo "--- the node agent over 1, 8 and 64 real jobs, 1 s and 5 s sampling, both stores on"
	go run ./cmd/jobsight-bench -jobs 1,8,64 -intervals 1s,5s -load busy -config production -windows 2 -window 60s \
		-tools "${JOBSIGHT_BENCH_TOOLS:-}"
else
	echo "--- skipping the real-job measurement (needs root and Slurm: see .ci/run)"
fi
