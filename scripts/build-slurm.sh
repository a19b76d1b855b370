#!/usr/bin/env bash
# build-slurm.sh — build a Slurm release from its source tarball and cache the
# installed prefix, for the real-cluster tests (test/stack) and the local stack.
#
# Usage: scripts/build-slurm.sh [VERSION]      (default 26.05.3)
#
# The tarball slurm-VERSION.tar.gz is looked up in $JOBSIGHT_SLURM_SOURCES, then
# in ../shared/slurm/ beside the repository. Slurm is installed under
# $JOBSIGHT_SLURM_ROOT/slurm-VERSION-<flags hash> (default /opt/jobsight when
# writable, else the cache): a place every user can reach, since the test
# jobs of an unprivileged user run its srun, and the binaries find Slurm's
# private library by the absolute prefix they were built with (~/.cache of
# root is not reachable). The installed tree is also kept as
# $JOBSIGHT_CACHE/slurm-VERSION-<hash>.tar.gz (JOBSIGHT_CACHE defaults to
# ~/.cache/jobsight): a complete prefix is reused, else the archive is
# unpacked (seconds), else Slurm is built (5-20 minutes on two cores). The
# script prints the prefix on its last line. Debian's build dependencies (libjson-c-dev for the JSON output,
# libmunge-dev, libyaml-dev, liblz4-dev, libhttp-parser-dev, libjwt-dev,
# libdbus-1-dev, and liblua5.4-dev with pkg-config for the Lua plugins) must be
# installed: .ci/run installs them.
#
# --with-lua: the cli_filter/lua plugin, which runs the site's cli_filter.lua
# inside sbatch (`jobsight advise`, test/advise). configure leaves Lua out
# silently when it finds none, so the build is checked for the plugin.
#
# --enable-multiple-slurmd: the test clusters run several slurmd on one host
# (each its own NodeName and port); the v1 job cgroups are then
# slurm_<node>/ rather than slurm/.
set -euo pipefail

version="${1:-26.05.3}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
root="${JOBSIGHT_SLURM_ROOT:-/opt/jobsight}"
if ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
	echo "build-slurm: $root is not writable; installing under $cache, which other users (the tests' unprivileged jobs) may not reach: set JOBSIGHT_SLURM_ROOT" >&2
	root="$cache"
fi
flags=(--disable-debug --without-rpath --enable-multiple-slurmd --with-lua)
key=$(printf '%s\n' "$root" "${flags[@]}" | sha256sum | cut -c1-8)
name="slurm-${version}-${key}"
prefix="${root}/${name}"
archive="${cache}/${name}.tar.gz"

if [[ -f "$prefix/.complete" ]]; then
	echo "$prefix"
	exit 0
fi
mkdir -p "$cache"
if [[ -f "$archive" ]]; then
	exec 9>"$prefix.lock"
	flock 9
	if [[ ! -f "$prefix/.complete" ]]; then
		rm -rf "$prefix"
		tar -xzf "$archive" -C "$root"
		chmod 755 "$root"
	fi
	[[ -f "$prefix/.complete" ]] && { echo "$prefix"; exit 0; }
	echo "build-slurm: $archive did not hold a complete $name; building" >&2
fi

src=""
for dir in "${JOBSIGHT_SLURM_SOURCES:-}" "$repo/../shared/slurm"; do
	if [[ -n "$dir" && -f "$dir/slurm-${version}.tar.gz" ]]; then
		src="$dir/slurm-${version}.tar.gz"
		break
	fi
done
if [[ -z "$src" ]]; then
	echo "build-slurm: slurm-${version}.tar.gz is in neither \$JOBSIGHT_SLURM_SOURCES nor $repo/../shared/slurm" >&2
	exit 1
fi

for h in json-c/json.h munge.h yaml.h lz4.h http_parser.h jwt.h dbus-1.0/dbus/dbus.h lua5.4/lua.h; do
	if [[ ! -f "/usr/include/$h" ]]; then
		echo "build-slurm: /usr/include/$h is missing: install libjson-c-dev libmunge-dev libyaml-dev liblz4-dev libhttp-parser-dev libjwt-dev libdbus-1-dev liblua5.4-dev pkg-config" >&2
		exit 1
	fi
done

# One build at a time: test packages starting together wait for the first.
exec 9>"$prefix.lock"
flock 9
if [[ -f "$prefix/.complete" ]]; then
	echo "$prefix"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/slurm-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "build-slurm: building Slurm ${version} into ${prefix} (10-20 minutes)" >&2
tar -xzf "$src" -C "$work"
rm -rf "$prefix"
(
	cd "$work/slurm-${version}"
	./configure --prefix="$prefix" --sysconfdir="$prefix/etc" "${flags[@]}" >"$work/configure.log" 2>&1 ||
		{ tail -40 "$work/configure.log" >&2; exit 1; }
	make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -60 "$work/make.log" >&2; exit 1; }
	make install >"$work/install.log" 2>&1 || { tail -40 "$work/install.log" >&2; exit 1; }
)
if [[ ! -f "$prefix/lib/slurm/cli_filter_lua.so" ]]; then
	echo "build-slurm: $prefix has no cli_filter_lua.so: configure found no Lua (liblua5.4-dev, pkg-config)" >&2
	exit 1
fi
chmod -R go+rX "$prefix"
chmod 755 "$root"
printf '%s\n' "$version" "${flags[@]}" >"$prefix/.complete" # last: a complete prefix is a readable one
tar -czf "$archive.tmp" -C "$root" "$name" && mv -f "$archive.tmp" "$archive"
echo "$prefix"
