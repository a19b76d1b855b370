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
# on machines without general network access. Two changes are made to the
# source before building (never committed, applied here at build time), for
# machines that cannot reach grafana.com, GitHub or osv.dev, where one
# analyzer's network error ended the whole run and the analyzers after it
# never ran:
# - the runner prints "<analyzer>: skipped: <error>" for an analyzer that
#   fails and goes on (those that depend on it see no result and skip too);
# - metadataschema, which fetches plugin.json's JSON schema from GitHub,
#   reads the copy the validator's source carries (config/plugin.schema.json).
# The source archive
# (../shared/tools/plugin-validator, or JOBSIGHT_VALIDATOR_SRC) is the tag's
# tree; its dependencies come from the Go module proxy.
set -euo pipefail

version=0.41.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
# "-offline3": built with the one change below; a new change gets a new name.
out="${1:-${cache}/plugin-validator-${version}-offline3/plugincheck2}"
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
rn="$work/plugin-validator-${version}/pkg/runner/runner.go"
perl -0pi -e 's/(res, err := currentAnalyzer\.Run\(pass\)\n\t\tif err != nil \{\n)\t\t\treturn err\n/$1\t\t\tfmt.Printf("%s: skipped: %v\\n", currentAnalyzer.Name, err)\n\t\t\treturn nil\n/' "$rn"
grep -q ': skipped: ' "$rn" || { echo "build-plugin-validator: the runner change did not apply" >&2; exit 1; }
ms="$work/plugin-validator-${version}/pkg/analysis/passes/metadataschema"
cp "$work/plugin-validator-${version}/config/plugin.schema.json" "$ms/"
cat >"$ms/metadataschema.go" <<'GO'
package metadataschema

import (
	_ "embed"

	"github.com/grafana/plugin-validator/pkg/analysis"
)

// The schema of plugin.json as the validator's source carries it
// (config/plugin.schema.json), instead of a fetch from GitHub.
//
//go:embed plugin.schema.json
var schema []byte

var Analyzer = &analysis.Analyzer{
	Name: "metadataschema",
	Run:  func(*analysis.Pass) (interface{}, error) { return schema, nil },
}
GO
(cd "$work/plugin-validator-${version}" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out.tmp" ./pkg/cmd/plugincheck2)
mv "$out.tmp" "$out"
echo "$out"
