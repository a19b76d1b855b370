#!/usr/bin/env bash
# build-plugin-validator.sh — build Grafana's plugin validator (plugincheck2,
# github.com/grafana/plugin-validator v0.41.0, Apache-2.0) from the source
# kept beside the repository, and cache the binary.
#
# Usage: scripts/build-plugin-validator.sh [OUTPUT]
#
# OUTPUT defaults to $JOBSIGHT_CACHE/plugin-validator-0.41.0/plugincheck2
# (~/.cache/jobsight when JOBSIGHT_CACHE is unset). An existing OUTPUT is
# reused (the cold build takes several minutes on two cores); delete it to
# rebuild. The last line printed is the binary's path.
#
# Why from source: the validator's npm wrapper downloads a prebuilt binary at
# run time and the module proxy does not serve the module, so neither works
# on machines without general network access. The source archive
# (../shared/tools/plugin-validator, or JOBSIGHT_VALIDATOR_SRC) is the tag's
# tree; its dependencies come from the Go module proxy.
set -euo pipefail

version=0.41.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
out="${1:-${cache}/plugin-validator-${version}/plugincheck2}"
src="${JOBSIGHT_VALIDATOR_SRC:-${root}/../shared/tools/plugin-validator/plugin-validator-${version}.tar.gz}"

if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi
[[ -f "$src" ]] || { echo "build-plugin-validator: $src not found (set JOBSIGHT_VALIDATOR_SRC to plugin-validator-${version}.tar.gz)" >&2; exit 1; }
command -v go >/dev/null || { echo "build-plugin-validator: go is not on PATH" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/plugin-validator-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
tar -xzf "$src" -C "$work"
(cd "$work/plugin-validator-${version}" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out.tmp" ./pkg/cmd/plugincheck2)
mv "$out.tmp" "$out"
echo "$out"
