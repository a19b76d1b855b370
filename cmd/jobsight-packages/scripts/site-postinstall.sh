#!/bin/sh
# jobsight postinstall (deb postinst, rpm %post). The collector's spool is
# its user's alone. The unit is neither enabled nor started: the collector
# runs on one host per cluster, after its configuration is edited
# (`systemctl enable --now jobsight-cluster-state`). A running collector is
# restarted, so that an upgrade takes effect.
set -e
chown jobsight:jobsight /var/spool/jobsight-cluster-state
chmod 0700 /var/spool/jobsight-cluster-state
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
	systemctl try-restart jobsight-cluster-state.service >/dev/null 2>&1 || true
fi
exit 0
