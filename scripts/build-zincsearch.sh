#!/usr/bin/env bash
# build-zincsearch.sh — build ZincSearch v0.4.10, the Elasticsearch-API server
# the integration tests run against, and cache the binary.
#
# Usage: scripts/build-zincsearch.sh [OUTPUT]
#
# OUTPUT defaults to $JOBSIGHT_CACHE/zincsearch-v0.4.10/zincsearch, or
# ~/.cache/jobsight/zincsearch-v0.4.10/zincsearch when JOBSIGHT_CACHE is unset.
# An existing OUTPUT is reused (the cold build takes about a minute); delete it
# to rebuild. The script prints the binary's path on its last line.
#
# This is the only place that knows how to build ZincSearch: test/stack
# (StartZinc) runs this script, and .ci/run may run it ahead to warm its cache.
#
# Recipe (see DESIGN.md, "Test infrastructure"): the module source comes from
# the Go module cache and is read-only there, so it is copied to a writable
# temporary directory; the web UI is not built, a stub web/dist/index.html
# satisfies its go:embed; the pyroscope profiling hook is removed because its
# dependency godeltaprof v0.1.2 does not compile on Go >= 1.23.
set -euo pipefail

version=v0.4.10
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
out="${1:-${cache}/zincsearch-${version}/zincsearch}"

if [[ -x "$out" ]]; then
	echo "$out"
	exit 0
fi

mkdir -p "$(dirname "$out")"
# One build at a time: test packages starting in parallel wait for the first.
if command -v flock >/dev/null; then
	exec 9>"$out.lock"
	flock 9
	if [[ -x "$out" ]]; then
		echo "$out"
		exit 0
	fi
fi

command -v go >/dev/null || { echo "build-zincsearch: go is not on PATH" >&2; exit 1; }

src=$(go mod download -json "github.com/zincsearch/zincsearch@${version}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z "$src" || ! -d "$src" ]]; then
	echo "build-zincsearch: could not download github.com/zincsearch/zincsearch@${version}" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/zincsearch-build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
chmod -R u+w "$work"

mkdir -p "$work/web/dist"
printf '<!doctype html><title>ZincSearch</title><p>UI not built.</p>\n' >"$work/web/dist/index.html"

main="$work/cmd/zincsearch/main.go"
# Drop the profiling hook: the call, the function, and the imports only it uses.
awk '
	/^[[:space:]]*"github.com\/pyroscope-io\/client\/pyroscope"$/ { next }
	/^[[:space:]]*"strings"$/ { next }
	/^[[:space:]]*profiling\(\)$/ { next }
	/^func profiling\(\) \{$/ { skip = 1; next }
	skip && /^}$/ { skip = 0; next }
	skip { next }
	{ print }
' "$main" >"$main.new"
mv "$main.new" "$main"
if grep -q pyroscope "$main"; then
	echo "build-zincsearch: could not remove the pyroscope hook from $main" >&2
	exit 1
fi

(
	cd "$work"
	# GOFLAGS from the caller (e.g. -mod=vendor) must not apply to this module.
	GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out.tmp.$$" ./cmd/zincsearch
)
mv -f "$out.tmp.$$" "$out"
echo "$out"
