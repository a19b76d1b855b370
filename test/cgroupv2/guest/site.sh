# The site before Jobsight, shared by the guests' scripts (test/cgroupv2's
# guest.sh, test/pilot's pilot.sh), which source it first, after setting H
# (the share), SLURM (the Slurm prefix), PATH and OUT (the share's output
# directory). It defines say, fail, dump and wait_for, traps EXIT (the logs
# go out; a failure is written to $H/failed), and sets up the network,
# the stores as services of their own (ZincSearch, the Elasticsearch-API
# test server, and Prometheus with the remote-write receiver, standing in
# for the site's), and Slurm 26.05 configured under systemd with
# cgroup/v2 and slurmd.service Delegate=yes, munge started; slurmctld and
# slurmd are left to the caller to start. cgroup_conf LINES rewrites
# cgroup.conf with extra lines.

say() { echo "=== [$(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() { say "FAILED: $*"; echo "$*" > $H/failed; exit 1; }
dump() {
	mkdir -p $OUT/logs
	cp /var/log/slurm/*.log /var/log/jobsight/agent.log $OUT/logs/ 2>/dev/null || true
	journalctl -b --no-pager -o short-monotonic > $OUT/logs/journal.txt 2>&1 || true
}
# wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds.
wait_for() {
	n=$1 what=$2
	shift 2
	i=0
	while ! "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $((n * 2)) ] || fail "timed out after ${n}s waiting for $what"
		sleep 0.5
	done
}

# Whatever ends the script, the logs go out; a command that fails under
# set -e without fail() is a failure too.
trap 'rc=$?; [ $rc -eq 0 ] || [ -e $H/failed ] || echo "the guest script exited with $rc (see guest.log)" > $H/failed; dump' EXIT

say "node: $(uname -r), $(nproc) CPUs, cgroup fs $(stat -fc %T /sys/fs/cgroup), controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
[ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || fail "/sys/fs/cgroup is not cgroup2"

# Network: the user-mode NIC only carries the host's forwards in.
ip link set lo up
for n in /sys/class/net/*; do
	n=${n##*/}
	[ "$n" = lo ] && continue
	ip addr add 10.0.2.15/24 dev "$n" && ip link set "$n" up
done


# The stores, as services of their own (outside Slurm's scopes).
mkdir -p /var/lib/zincsearch /var/lib/prometheus /etc/prometheus
cat > /etc/systemd/system/zincsearch.service <<UNIT
[Unit]
Description=ZincSearch, the Elasticsearch-API test server
[Service]
Environment=ZINC_FIRST_ADMIN_USER=admin ZINC_FIRST_ADMIN_PASSWORD=$(cat $H/es-password) ZINC_DATA_PATH=/var/lib/zincsearch
Environment=ZINC_SERVER_ADDRESS=0.0.0.0 ZINC_SERVER_PORT=4080 ZINC_TELEMETRY=false ZINC_SENTRY=false ZINC_PROFILER=false
Environment=GIN_MODE=release ZINC_PLUGIN_ES_VERSION=8.19.0
ExecStart=/usr/local/bin/zincsearch
UNIT
printf 'global:\n  scrape_interval: 1m\n' > /etc/prometheus/prometheus.yml
cat > /etc/systemd/system/prometheus.service <<UNIT
[Unit]
Description=Prometheus with the remote-write receiver
[Service]
ExecStart=/usr/local/bin/prometheus --config.file=/etc/prometheus/prometheus.yml --storage.tsdb.path=/var/lib/prometheus --web.listen-address=0.0.0.0:9090 --web.enable-remote-write-receiver
UNIT
systemctl daemon-reload
systemctl start zincsearch prometheus || fail "the stores did not start"

# Slurm 26.05 as a site runs it under systemd.
id slurm >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin slurm
id alice >/dev/null 2>&1 || useradd --create-home --shell /bin/sh alice
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm $SLURM/etc
chown slurm /var/spool/slurmctld /var/log/slurm
mem=$(awk '/MemTotal/ {print int($2/1024) - 900}' /proc/meminfo)
cat > $SLURM/etc/slurm.conf <<CONF
ClusterName=v2test
SlurmctldHost=v2node(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmdDebug=verbose
PlugStackConfig=$SLURM/etc/plugstack.conf
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup,task/affinity
JobAcctGatherType=jobacct_gather/cgroup
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
ReturnToService=2
KillWait=5
MinJobAge=900
SchedulerParameters=sched_interval=2
NodeName=v2node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=v2node Default=YES MaxTime=INFINITE State=UP
CONF
cgroup_conf() {
	printf 'CgroupPlugin=cgroup/v2\nConstrainCores=yes\nConstrainRAMSpace=yes\nAllowedRAMSpace=100\nConstrainSwapSpace=no\n%s' "$1" > $SLURM/etc/cgroup.conf
}
cgroup_conf ""
# munge, as most sites authenticate (Debian's package made the key).
[ -s /etc/munge/munge.key ] || { mungekey --create && chown munge:munge /etc/munge/munge.key; }
systemctl start munge || fail "munge did not start"
cat > /etc/systemd/system/slurmctld.service <<UNIT
[Unit]
Description=Slurm controller daemon
After=network.target munge.service
[Service]
Type=notify
User=slurm
RuntimeDirectory=slurmctld
ExecStart=$SLURM/sbin/slurmctld --systemd
LimitNOFILE=65536
[Install]
WantedBy=multi-user.target
UNIT
cat > /etc/systemd/system/slurmd.service <<UNIT
[Unit]
Description=Slurm node daemon
After=network.target munge.service slurmctld.service
[Service]
Type=notify
RuntimeDirectory=slurm
ExecStart=$SLURM/sbin/slurmd --systemd
KillMode=process
Delegate=yes
LimitNOFILE=131072
LimitMEMLOCK=infinity
LimitSTACK=infinity
TasksMax=infinity
[Install]
WantedBy=multi-user.target
UNIT

