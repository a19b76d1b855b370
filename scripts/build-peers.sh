#!/usr/bin/env bash
# Builds the two exporters jobsight-bench measures beside the node agent,
# from their public sources, outside this repository:
#   CEEMS' ceems_exporter v0.10.2 (github.com/ceems-dev/ceems)
#   treydock's cgroup_exporter v1.2.1 (github.com/treydock/cgroup_exporter)
#
#   scripts/build-peers.sh OUT CEEMS_REPO CGROUP_EXPORTER_REPO
#
# OUT is where the two binaries go (jobsight-bench -tools OUT); the repos
# are git URLs or local clones/mirrors holding the tags. Their Go
# dependencies come from the module proxy. Nothing of theirs is kept in
# this repository.
#
# CEEMS embeds eBPF objects that its Makefile compiles with clang
# (//go:embed bpf/objs/*.o); the benchmark never enables its eBPF
# collectors, so empty placeholders stand in for them: never pass
# --collector.ebpf.* to this build.
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 OUT CEEMS_REPO CGROUP_EXPORTER_REPO" >&2; exit 2; }
OUT=$(realpath -m "$1") CEEMS=$2 CGEXP=$3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PV=github.com/prometheus/common/version
export CGO_ENABLED=0 GOFLAGS="-buildvcs=true"
mkdir -p "$OUT"

git clone -q --no-checkout "$CGEXP" "$WORK/cgroup_exporter"
(
	cd "$WORK/cgroup_exporter"
	git -c advice.detachedHead=false checkout -q v1.2.1
	go build -trimpath -tags netgo \
		-ldflags "-X $PV.Version=1.2.1 -X $PV.Revision=$(git rev-parse HEAD) -X $PV.Branch=v1.2.1" \
		-o "$OUT/cgroup_exporter" .
)

git clone -q --no-checkout "$CEEMS" "$WORK/ceems"
(
	cd "$WORK/ceems"
	# A test fixture some mirrors lack is not needed to build (git may still
	# name it as an invalid object: harmless).
	git sparse-checkout set --no-cone '/*' '!/pkg/collector/testdata/sys.ttar'
	git -c advice.detachedHead=false checkout -q v0.10.2
	test -f cmd/ceems_exporter/main.go
	mkdir -p pkg/collector/bpf/objs
	for f in bpf_network bpf_network_v519 bpf_network_v64 bpf_vfs bpf_vfs_v511 bpf_vfs_v62; do
		: >"pkg/collector/bpf/objs/$f.o"
	done
	go build -trimpath -tags 'netgo osusergo static_build' \
		-ldflags "-X $PV.Version=0.10.2 -X $PV.Revision=$(git rev-parse HEAD) -X $PV.Branch=v0.10.2" \
		-o "$OUT/ceems_exporter" ./cmd/ceems_exporter
)
"$OUT/cgroup_exporter" --version 2>&1 | head -1
"$OUT/ceems_exporter" --version 2>&1 | head -1
