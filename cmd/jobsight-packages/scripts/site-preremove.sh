#!/bin/sh
# jobsight preremove (deb prerm, rpm %preun): a removal (not an upgrade)
# stops the collector. Its configuration, spool and user stay.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now jobsight-cluster-state.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
