#!/bin/sh
# jobsight preinstall (deb preinst, rpm %pre): the system user and group
# the cluster-state collector runs as, before the files it owns are
# unpacked. Idempotent: an existing user or group is left as it is.
set -e
if ! getent group jobsight >/dev/null 2>&1; then
	if command -v groupadd >/dev/null 2>&1; then
		groupadd --system jobsight
	else
		addgroup --system jobsight
	fi
fi
if ! getent passwd jobsight >/dev/null 2>&1; then
	if command -v useradd >/dev/null 2>&1; then
		useradd --system --gid jobsight --home-dir /var/spool/jobsight-cluster-state \
			--no-create-home --shell /usr/sbin/nologin --comment "Jobsight cluster-state collector" jobsight
	else
		adduser --system --ingroup jobsight --home /var/spool/jobsight-cluster-state \
			--no-create-home --shell /usr/sbin/nologin jobsight
	fi
fi
exit 0
