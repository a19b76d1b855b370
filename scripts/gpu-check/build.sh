#!/bin/bash
# Builds, here, what the GPU machine runs (it has no Go): the NVIDIA
# backend's test binary (TestRealNVML, the real-NVML benchmarks) and the
# agent, with cgo, stripped, into .gpu/ at the repository root, with
# check.sh and the load generator beside them (.gitignore keeps .gpu/ out
# of git); carry it to the machine:
#
#   scripts/gpu-check/build.sh
#   (device run, carry [".gpu"])  bash .gpu/check.sh
#
# The figures of docs/performance.md "On a real GPU" came from this.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu
CGO_ENABLED=1 go test -c -ldflags="-s -w" -o .gpu/nvidia.test ./agent/gpu/nvidia
CGO_ENABLED=1 go build -ldflags="-s -w" -o .gpu/jobsight-agent ./cmd/jobsight-agent
cp scripts/gpu-check/check.sh scripts/gpu-check/gpuload.py scripts/gpu-check/gpuwork.py .gpu/
# The agent's Debian package, installed there by check.sh.
rm -f .gpu/*.deb
go run ./cmd/jobsight-packages --out .gpu/pkg >/dev/null && mv .gpu/pkg/jobsight-agent_*.deb .gpu/ && rm -rf .gpu/pkg
ls -l .gpu
