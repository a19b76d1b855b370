#!/usr/bin/env bash
# capture-slurm-fixtures.sh — capture the squeue/sinfo answers of one Slurm
# release into internal/slurm/testdata, from a running local stack.
#
# Usage (as root):
#   go run ./cmd/jobsight-stack up --slurm 25.11 --no-jobs --no-grafana --dir /tmp/fx &
#   scripts/capture-slurm-fixtures.sh /tmp/fx 25.11
#   go run ./cmd/jobsight-stack down --dir /tmp/fx
#
# It submits the jobs internal/slurm/testdata/README.md lists (a job whose
# name forges other fields, an array, a heterogeneous job, a time limit, an
# exit code, a signal, a finished array), captures `squeue --json` while
# some run and after all ended, in the release's default data parser and in
# every older one it serves, and `sinfo --json -N` with the node drained.
set -euo pipefail

dir="${1:?stack directory}"
release="${2:?release, e.g. 25.11}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/internal/slurm/testdata"
export SLURM_CONF="$dir/slurm/etc/slurm.conf"
prefix=$(ls -d "${JOBSIGHT_CACHE:-$HOME/.cache/jobsight}"/slurm-"$release".*-* 2>/dev/null | head -1 || true)
if [[ "$release" != "22.05" ]]; then
	[[ -n "$prefix" ]] || { echo "no built Slurm $release in the cache" >&2; exit 1; }
	export PATH="$prefix/bin:$PATH"
fi
node=$(sinfo -h -N -o %N | head -1)

# The older data parsers this release serves besides its default
# (../shared/slurm/README.md).
case "$release" in
26.05) parsers="v0.0.42 v0.0.43 v0.0.44" ;; # default v0.0.45
25.11) parsers="v0.0.41 v0.0.42 v0.0.43" ;; # default v0.0.44
25.05) parsers="v0.0.40 v0.0.41 v0.0.42" ;; # default v0.0.43
*) parsers="" ;;
esac
capture() { # name, then squeue/sinfo arguments
	local name=$1
	shift
	"$@" >"$out/$name-$release.json.tmp" && mv "$out/$name-$release.json.tmp" "$out/$name-$release.json"
}

forged='x UserId=root(0) GroupId=root(0) MCS_label=N/A Account=victim Partition=other JobState=COMPLETED NodeList=othernode TRES=cpu=1,mem=1M'
a=$(sbatch --parsable -o /dev/null -J "$forged" --gres=gpu:2 -c 1 --mem=100M --wrap 'sleep 300')
b=$(sbatch --parsable -o /dev/null --array=1-2 -c 1 --mem=100M --wrap 'sleep 300')
sleep 4
squeue --json --states=all >"$out/squeue-$release-running.json"
for p in $parsers; do
	squeue --json="$p" --states=all >"$out/squeue-$release-$p-running.json" 2>/dev/null || rm -f "$out/squeue-$release-$p-running.json"
done
scancel "$a" "$b"
sleep 2
# A heterogeneous job, cancelled (its two components cannot both run on
# the one node; cancelled while pending).
het=$(sbatch --parsable -o /dev/null -c 1 --mem=50M --wrap 'sleep 300' : -c 1 --mem=50M --wrap 'sleep 300')
sleep 3
scancel "${het%%;*}"
sleep 1
sbatch --parsable -o /dev/null --time=5 -c 1 --mem=50M --wrap 'sleep 2' >/dev/null
sbatch --parsable -o /dev/null -c 1 --mem=50M --wrap 'exit 3' >/dev/null
sbatch --parsable -o /dev/null -c 1 --mem=50M --wrap 'kill -9 $$' >/dev/null
sbatch --parsable -o /dev/null --array=3-4 -c 1 --mem=50M --wrap 'sleep 1' >/dev/null
sleep 15
squeue --json --states=all >"$out/squeue-$release-ended.json"
for p in $parsers; do
	squeue --json="$p" --states=all >"$out/squeue-$release-$p-ended.json" 2>/dev/null || rm -f "$out/squeue-$release-$p-ended.json"
done
scontrol update nodename="$node" state=drain reason='disk replaced Account=x'
sinfo --json -N >"$out/sinfo-$release-drain.json"
for p in $parsers; do
	sinfo --json="$p" -N >"$out/sinfo-$release-$p-drain.json" 2>/dev/null || rm -f "$out/sinfo-$release-$p-drain.json"
done
scontrol update nodename="$node" state=resume
ls -la "$out" | grep -- "-$release"
