#!/bin/sh
# jobsight-agent postinstall (deb postinst, rpm %post). The SPANK plugin is
# not in the package: slurmd refuses one built for another Slurm release,
# so each site builds it against its own Slurm.
set -e
echo "jobsight-agent: build and install the SPANK plugin for this node's Slurm with"
echo "  jobsight-spank-install [SLURM_PREFIX [PLUGINDIR]]"
echo "and again after every Slurm upgrade (README, 'Deploying on a cluster')."
exit 0
