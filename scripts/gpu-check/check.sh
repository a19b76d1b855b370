#!/bin/bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried
# there (scripts/gpu-check/build.sh); results go to $OUT (or ./gpu-out).
# 1. TestRealNVML, the per-call and per-sample NVML benchmarks.
# 2. The agent on a PyTorch job (busy, idle holding memory, busy) with
#    nvidia-smi sampling beside it, to compare utilisation and memory.
# 3. The agent's own CPU per sample: `sleep 10` against `sleep 40`.
# 4. Where build.sh put the agent's Debian package in .gpu/: it is
#    installed there (dpkg -i: another distribution than the build's) and
#    the installed agent measures a shorter job.
set -x
cd "$(dirname "$0")/.."
G=.gpu
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv
$G/nvidia.test -test.run 'TestRealNVML|TestEnergy|TestMIG' -test.v 2>&1 | tee "$OUT/nvml-test.txt"
$G/nvidia.test -test.run '^$' -test.bench 'RealNVML' -test.benchtime 1s -test.count 3 2>&1 | tee "$OUT/nvml-bench.txt"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader -lms 1000 > "$OUT/smi.csv" &
SMI=$!
CUDA_VISIBLE_DEVICES=0 timeout 120 $G/jobsight-agent run --output-dir /tmp/gpu-docs -- python3 $G/gpuload.py 20 10 15 2>&1 | tee "$OUT/run.txt"
kill $SMI
for s in 10 40; do
  CUDA_VISIBLE_DEVICES=0 $G/jobsight-agent run --output-dir /tmp/gpu-docs-s$s -- sleep $s 2>&1 | grep -E 'overhead|gpus'
done | tee "$OUT/overhead.txt"
if ls $G/jobsight-agent_*.deb >/dev/null 2>&1; then
  (cat /etc/os-release | head -3; ldd --version | head -1) 2>&1 | tee "$OUT/package.txt"
  dpkg -i $G/jobsight-agent_*.deb 2>&1 | tee -a "$OUT/package.txt"
  /usr/sbin/jobsight-agent version 2>&1 | tee -a "$OUT/package.txt"
  CUDA_VISIBLE_DEVICES=0 timeout 90 /usr/sbin/jobsight-agent run --output-dir /tmp/gpu-docs-pkg -- python3 $G/gpuload.py 10 5 10 2>&1 | tee -a "$OUT/package.txt"
fi
tar czf "$OUT/docs.tgz" /tmp/gpu-docs* 2>/dev/null
