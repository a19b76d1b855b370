#!/bin/bash
# capture.sh JOBID OUTDIR — copies a running Slurm job's cgroup v1 tree
# (memory, cpuacct, cpuset, freezer) and /proc/<pid>/{stat,io,status} of every
# process in it into OUTDIR/sys/fs/cgroup/... and OUTDIR/proc/<pid>/...
# Run as root on the node. Write-only or unreadable files are skipped.
set -euo pipefail
job=$1 out=$2
pids=()
for ctrl in memory cpuacct cpuset freezer; do
  for jobdir in /sys/fs/cgroup/$ctrl/slurm_*/uid_*/job_"$job"; do
    [ -d "$jobdir" ] || continue
    while IFS= read -r -d '' f; do
      dst=$out$f
      mkdir -p "$(dirname "$dst")"
      cat "$f" > "$dst" 2>/dev/null || rm -f "$dst"
    done < <(find "$jobdir" -type f -perm -u+r -print0)
    while IFS= read -r p; do pids+=("$p"); done < <(find "$jobdir" -name cgroup.procs -exec cat {} +)
  done
done
for p in $(printf '%s\n' "${pids[@]}" | sort -un); do
  mkdir -p "$out/proc/$p"
  for f in stat io status; do cat "/proc/$p/$f" > "$out/proc/$p/$f" 2>/dev/null || rm -f "$out/proc/$p/$f"; done
done
