#!/bin/bash
# Runs on the GPU machine, from the repository root, with .gpu/ carried
# there (scripts/gpu-check/build.sh); results go to $OUT (or ./gpu-out).
# 1. TestRealNVML and TestRealNVMLGPM, the per-call and per-sample NVML
#    benchmarks (GPM sample and metrics calls included).
# 2. Four jobs under the agent (gpuwork.py: large matrix products, tiny
#    kernels from a CUDA graph, tiny kernels launched from Python,
#    host-to-device copies) with nvidia-smi dmon (its
#    GPM columns where the driver has them) and --query-gpu sampling the
#    same window: the figures and diagnoses of docs/performance.md.
# 3. The agent's own CPU per sample with a GPU held: `sleep 10` against
#    `sleep 40`.
# 4. With CHECK_PACKAGE=1 and the agent's Debian package in .gpu/: it is
#    installed there (dpkg -i) and the installed agent measures a job.
set -x
cd "$(dirname "$0")/.."
G=.gpu
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
date -u +%FT%TZ | tee "$OUT/date.txt"
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,pcie.link.gen.current,pcie.link.width.current --format=csv | tee "$OUT/gpu.txt"
$G/nvidia.test -test.run 'TestRealNVML|TestEnergy|TestMIG' -test.v 2>&1 | tee "$OUT/nvml-test.txt"
$G/nvidia.test -test.run '^$' -test.bench "${CHECK_BENCH:-RealNVML}" -test.benchtime 0.5s -test.count 3 2>&1 | tee "$OUT/nvml-bench.txt"

# dmon's GPM columns (SM activity 2, occupancy 3, any tensor 5, DRAM 10,
# PCIe rx 21) where this nvidia-smi has --gpm-metrics; its plain columns
# otherwise.
DMON="nvidia-smi dmon -i 0 -d 1 -s u --gpm-metrics 2,3,5,10,21"
$DMON -c 1 >/dev/null 2>&1 || DMON="nvidia-smi dmon -i 0 -d 1 -s u"
# The jobs are short: the analysis judges them from 10 s on (its default
# is 10 min), so that each comes out with its diagnosis.
printf 'analysis:\n  short_job: 10s\n' > /tmp/gpm-check.yaml
for mode in ${CHECK_MODES:-matmul tiny launch copy}; do
  $DMON > "$OUT/dmon-$mode.txt" 2>&1 &
  D=$!
  nvidia-smi -i 0 --query-gpu=timestamp,utilization.gpu,memory.used,power.draw,pcie.link.gen.current --format=csv,noheader -lms 1000 > "$OUT/smi-$mode.csv" &
  S=$!
  CUDA_VISIBLE_DEVICES=0 timeout 90 $G/jobsight-agent run -config /tmp/gpm-check.yaml -interval 1s --output-dir /tmp/gpm-docs-$mode -- python3 $G/gpuwork.py $mode ${CHECK_SECONDS:-25} 2>&1 | tee "$OUT/run-$mode.txt"
  kill $D $S
done
for s in 10 40; do
  CUDA_VISIBLE_DEVICES=0 $G/jobsight-agent run --output-dir /tmp/gpu-docs-s$s -- sleep $s 2>&1 | grep -E 'overhead|gpus|samples'
done | tee "$OUT/overhead.txt"
if [ "${CHECK_PACKAGE:-0}" = 1 ] && ls $G/jobsight-agent_*.deb >/dev/null 2>&1; then
  (cat /etc/os-release | head -3; ldd --version | head -1) 2>&1 | tee "$OUT/package.txt"
  dpkg -i $G/jobsight-agent_*.deb 2>&1 | tee -a "$OUT/package.txt"
  /usr/sbin/jobsight-agent version 2>&1 | tee -a "$OUT/package.txt"
  CUDA_VISIBLE_DEVICES=0 timeout 90 /usr/sbin/jobsight-agent run --output-dir /tmp/gpu-docs-pkg -- python3 $G/gpuload.py 10 5 10 2>&1 | tee -a "$OUT/package.txt"
fi
tar czf "$OUT/docs.tgz" /tmp/gpm-docs-* /tmp/gpu-docs* 2>/dev/null
# The device tool brings back a limited number of files: one archive.
(cd "$OUT" && tar czf results.tgz *.txt *.csv && rm -f *.txt *.csv)
