#!/bin/sh
# jobsight-agent postinstall (deb postinst, rpm %post). The SPANK plugin is
# not in the package: slurmd refuses one built for another Slurm release,
# so each site builds it against its own Slurm.
set -e
echo "jobsight-agent: build and install the SPANK plugin for this node's Slurm with"
echo "  jobsight-spank-install [SLURM_PREFIX [PLUGINDIR]]"
echo "and again after every Slurm upgrade (README, 'Deploying on a cluster')."
# The slurmd.service drop-in that keeps the plugin in step with Slurm
# takes effect at slurmd's next start.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
fi
# An upgrade under running jobs: each running node agent hands its jobs
# over to the executable just installed, which resumes them from their
# checkpoints (docs/upgrading.md). A node without an agent does nothing;
# JOBSIGHT_NO_TAKEOVER=1 leaves the old agents to run until their node is
# empty. It never fails the installation.
if [ -z "${JOBSIGHT_NO_TAKEOVER:-}" ] && [ -x /usr/sbin/jobsight-agent ]; then
	/usr/sbin/jobsight-agent takeover ||
		echo "jobsight-agent: an agent did not take over (above); the next job's launch on that node resumes its jobs" >&2
fi
exit 0
