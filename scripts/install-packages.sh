#!/bin/sh
# scripts/install-packages.sh DIR [SLURM_PREFIX [PLUGINDIR]]
#
# Installs the packages `make packages` wrote to DIR on this machine, as a
# site admin would (docs/packages.md), and checks them:
#   - jobsight-agent (/usr/sbin/jobsight-agent, /etc/jobsight/agent.yaml,
#     /var/{lib,spool,log}/jobsight, the SPANK plugin's source and
#     jobsight-spank-install) and jobsight (/usr/bin/jobsight, site.yaml,
#     cluster-state.yaml, constants.yaml, the collector's unit, not enabled;
#     the jobsight user, /var/spool/jobsight-cluster-state), with dpkg -i
#     where dpkg is the package manager, else rpm -U;
#   - `jobsight-agent check-config` and `jobsight cluster-state --check` on
#     the installed configuration;
#   - with SLURM_PREFIX: jobsight-spank-install SLURM_PREFIX [PLUGINDIR]
#     builds the SPANK plugin against that Slurm and installs it into
#     PLUGINDIR (default: Slurm's PluginDir from `scontrol show config`).
# DIR must hold one package of each name for this machine's architecture.
# Needs root. Nothing is enabled or started, and plugstack.conf is left
# alone: that is the caller's.
set -eu

die() {
	echo "install-packages: $*" >&2
	exit 1
}
[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: $0 DIR [SLURM_PREFIX [PLUGINDIR]]"
dir=$1
[ -d "$dir" ] || die "$dir is not a directory"

# one PATTERN: the single file of DIR matching PATTERN.
one() {
	pattern=$1
	set -- "$dir"/$pattern
	[ -e "$1" ] || die "no $pattern in $dir: run make packages"
	[ $# -eq 1 ] || die "$# packages match $pattern in $dir; leave one"
	echo "$1"
}

if command -v dpkg >/dev/null 2>&1; then
	arch=$(dpkg --print-architecture)
	agent=$(one "jobsight-agent_*_$arch.deb")
	site=$(one "jobsight_*_$arch.deb")
	dpkg -i "$agent" "$site"
elif command -v rpm >/dev/null 2>&1; then
	arch=$(uname -m)
	agent=$(one "jobsight-agent-[0-9]*.$arch.rpm")
	site=$(one "jobsight-[0-9]*.$arch.rpm")
	rpm -U --replacepkgs "$agent" "$site"
else
	die "neither dpkg nor rpm here"
fi
echo "installed $(basename "$agent") and $(basename "$site")"

jobsight-agent version
jobsight-agent check-config --config /etc/jobsight/agent.yaml
jobsight cluster-state --config /etc/jobsight/cluster-state.yaml --check
id jobsight

if [ $# -ge 2 ]; then
	shift
	jobsight-spank-install "$@"
fi
