#!/usr/bin/env bash
# build-thanos.sh — build Thanos (receive + query, one `thanos` binary), the
# horizontally scalable series store the test/thanos suite runs the agent and
# the datasource against, and cache the binary.
#
# Usage: scripts/build-thanos.sh [--cached]
#
# Tries the releases in $candidates, newest first, and prints the path of the
# first one that is cached or builds with the Go on PATH:
# $JOBSIGHT_CACHE/thanos-<version>/thanos (JOBSIGHT_CACHE defaults to
# ~/.cache/jobsight). A version that does not build leaves its error in
# thanos-<version>/build-failed-<go version>.log and is not tried again with
# that Go (delete the log to retry); the cold build takes several minutes on
# two cores. Nothing but the Go module proxy is contacted. With --cached it
# only looks: it prints the cached binary or fails, never builds (test/stack's
# ThanosBinary; .ci/run builds ahead).
#
# Recipe: the module source comes from the Go module cache, read-only there,
# and is built in its own module (its go.mod has replace directives, which
# `go install pkg@version` refuses) from a writable temporary copy, with the
# build tags of the release's .promu.yml (netgo, slicelabels). Nothing in it
# is changed: a release whose go.mod asks for a newer Go than the one on
# PATH is recorded as not building (GOTOOLCHAIN=local, no toolchain download).
# Thanos is Apache-2.0; it is only run by the tests, never linked into Jobsight.
set -euo pipefail

# Newest first. v0.42.5 needs go >= 1.26.10. JOBSIGHT_THANOS_VERSIONS
# (space-separated) replaces the list, e.g. to try one release.
read -r -a candidates <<<"${JOBSIGHT_THANOS_VERSIONS:-v0.42.5 v0.42.4 v0.42.3 v0.42.2 v0.42.1 v0.42.0 v0.40.1}"
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"

command -v go >/dev/null || { echo "build-thanos: go is not on PATH" >&2; exit 1; }
gover=$(go env GOVERSION)

# The cached binary of the newest candidate, skipping versions known not to
# build with this Go, without touching the network.
cached() {
	local v
	for v in "${candidates[@]}"; do
		if [[ -x "${cache}/thanos-${v}/thanos" ]]; then
			echo "${cache}/thanos-${v}/thanos"
			return 0
		fi
		[[ -f "${cache}/thanos-${v}/build-failed-${gover}.log" ]] || return 1
	done
	return 1
}

if cached; then
	exit 0
fi
if [[ "${1:-}" == --cached ]]; then
	echo "build-thanos: no Thanos built under ${cache} for ${gover}: run scripts/build-thanos.sh" >&2
	exit 1
fi

mkdir -p "$cache"
# One build at a time: test packages starting in parallel wait for the first.
if command -v flock >/dev/null; then
	exec 9>"${cache}/thanos-build.lock"
	flock 9
	if cached; then
		exit 0
	fi
fi

build() { # version out log
	local v=$1 out=$2 log=$3 src work
	# go mod download -json reports a module it cannot use (e.g. one that
	# needs a newer Go) in its "Error" field, and exits non-zero.
	src=$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "github.com/thanos-io/thanos@${v}" 2>>"$log") || true
	if grep -q '"Error"' <<<"$src"; then
		sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' <<<"$src" | sed 's/\\u003e/>/g; s/\\u003c/</g' >>"$log"
		return 1
	fi
	src=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$src")
	if [[ -z "$src" || ! -d "$src" ]]; then
		echo "could not download github.com/thanos-io/thanos@${v}" >>"$log"
		return 1
	fi
	work=$(mktemp -d "${TMPDIR:-/tmp}/thanos-build.XXXXXX")
	cp -r "$src/." "$work/"
	chmod -R u+w "$work"
	local rc=0
	(
		cd "$work"
		# GOFLAGS from the caller (e.g. -mod=vendor) must not apply to this
		# module. nice: CI and developer machines share few cores.
		# The tags are the release's own (.promu.yml): slicelabels is
		# required, Thanos casts Prometheus' labels.Labels to its own
		# slice type; built without it the receivers panic on the first
		# Store API call (gRPC marshals a message of nonsense size).
		GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 10 \
			go build -trimpath -tags netgo,slicelabels -ldflags "-s -w -X github.com/prometheus/common/version.Version=${v#v}" \
			-o "$out.tmp.$$" ./cmd/thanos
	) >>"$log" 2>&1 || rc=$?
	chmod -R u+w "$work" 2>/dev/null
	rm -rf "$work"
	[[ $rc -eq 0 ]] || return 1
	mv -f "$out.tmp.$$" "$out"
}

for v in "${candidates[@]}"; do
	dir="${cache}/thanos-${v}"
	out="${dir}/thanos"
	failed="${dir}/build-failed-${gover}.log"
	[[ -f "$failed" ]] && continue
	mkdir -p "$dir"
	log="${dir}/build.log"
	: >"$log"
	echo "build-thanos: building github.com/thanos-io/thanos@${v} with ${gover}" >&2
	start=$SECONDS
	if build "$v" "$out" "$log"; then
		echo "build-thanos: built ${v} in $((SECONDS - start)) s" >&2
		rm -f "$log"
		echo "$out"
		exit 0
	fi
	mv -f "$log" "$failed"
	echo "build-thanos: ${v} does not build with ${gover}:" >&2
	tail -n 5 "$failed" | sed 's/^/  /' >&2
done

echo "build-thanos: no Thanos release in (${candidates[*]}) builds with ${gover}; see ${cache}/thanos-*/build-failed-${gover}.log" >&2
exit 1
