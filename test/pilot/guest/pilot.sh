#!/bin/sh
# test/pilot's guest script: the README's "From a fresh node to a job on a
# dashboard", followed on a fresh Debian 12 node (the cgroup v2 test
# node's image: systemd, Slurm 26.05 built from source, munge, gcc and
# make, and nothing of Jobsight) with the release artefacts the host put in
# the share (packages/*.deb). test/pilot copies it into the share as
# /mnt/host/guest.sh; the image's unit runs it at boot.
#
# Untimed, first: the site as it is before Jobsight (site.sh: the stores
# standing in for the site's, Slurm under systemd), slurmctld and slurmd
# running with an empty plugstack.conf, Slurm's commands on PATH.
# Then each README step runs as written there, timed: the time of each is
# appended to $OUT/marks ("<step> <seconds since the epoch>"). A person's
# editing ($EDITOR) is done with sed: its time is not a person's. Step 4
# (Grafana) and the dashboard checks of steps 5 and 6 are the host's: the
# script says when the node is ready ($OUT/node-ready), waits for the
# host's Grafana ($H/grafana-ready), submits the job ($OUT/job) and waits
# for the host to finish ($H/host-done).
set -eu
H=/mnt/host
SLURM=$(cat $H/slurm-prefix)
export PATH="/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
OUT=$H/out
mkdir -p $OUT
. $H/site.sh
mark() { echo "$1 $(date +%s.%N)" >> $OUT/marks; say "$1"; }

# The site's Slurm as a site has it: its commands on every PATH.
ln -sf $SLURM/bin/* /usr/local/bin/
ln -sf $SLURM/sbin/* /usr/local/sbin/
: > $SLURM/etc/plugstack.conf
systemctl daemon-reload
systemctl start slurmctld slurmd || fail "systemctl start slurmctld slurmd"
wait_for 120 "the node to be idle" sh -c "sinfo -h -n v2node -o %T | grep -qx idle"
wait_for 120 "ZincSearch" curl -sf -u "admin:$(cat $H/es-password)" http://127.0.0.1:4080/es/
wait_for 120 "Prometheus" curl -sf http://127.0.0.1:9090/-/ready
say "the site before Jobsight: $(sinfo --version), $(systemctl is-active slurmctld slurmd zincsearch prometheus | tr '\n' ' ')"
cd $H/packages

# 1. Stores. The stand-ins run already; ZincSearch has one admin user, whose
# credential every component uses here (the per-component roles are
# checked by `check-stores` against a real user lacking each right in
# cmd/jobsight's and cmd/jobsight-agent's tests, not here).
mark start

# 2. Every compute node, and the login nodes.
apt-get install -y -q ./jobsight-agent_*_amd64.deb > $OUT/apt-agent.log 2>&1 || fail "apt install the agent package (apt-agent.log)"
sed -i -e 's/^cluster: hpc1 /cluster: v2test /' \
	-e 's|^  urls: \[https://es1.*|  urls: ["http://127.0.0.1:4080/es"]|' \
	-e 's/^  username: jobsight-agent/  username: admin/' -e '/^  ca_file:/d' \
	-e 's|^  remote_write_url: https://prom.example.org/api/v1/write|  remote_write_url: http://127.0.0.1:9090/api/v1/write|' \
	-e '/^  bearer_token_file:/d' /etc/jobsight/agent.yaml
install -m 0600 $H/es-password /etc/jobsight/es-password
jobsight-agent check-config --config /etc/jobsight/agent.yaml || fail "check-config"
cp /etc/jobsight/agent.yaml /root/setup-agent.yaml
jobsight-agent setup --config /root/setup-agent.yaml || fail "jobsight-agent setup"
jobsight-agent check-stores --config /etc/jobsight/agent.yaml > $OUT/check-stores-agent.txt 2>&1 || fail "jobsight-agent check-stores: $(cat $OUT/check-stores-agent.txt)"
jobsight-spank-install $SLURM > $OUT/spank-install.txt 2>&1 || fail "jobsight-spank-install: $(tail -3 $OUT/spank-install.txt)"
line=$(grep -m1 '^ *optional .*jobsight.so' $OUT/spank-install.txt | sed 's/^ *//') || fail "jobsight-spank-install printed no plugstack.conf line"
[ -n "$line" ] || fail "jobsight-spank-install printed no plugstack.conf line"
echo "$line" >> $SLURM/etc/plugstack.conf
systemctl restart slurmd || fail "systemctl restart slurmd"
wait_for 120 "the node to take jobs again" sh -c "sinfo -h -n v2node -o %T | grep -qx idle"
mark node

# 3. One host per cluster: the collector (here the same node). Grafana runs
# on another host (the test's), so the collector listens beyond loopback,
# with a token.
apt-get install -y -q ./jobsight_*_amd64.deb > $OUT/apt-site.log 2>&1 || fail "apt install the site package (apt-site.log)"
sed -i -e 's/^cluster: hpc1$/cluster: v2test/' \
	-e 's|^#listen: 0.0.0.0:9310|listen: 0.0.0.0:9310|' -e 's|^#listen_token_file: \(/etc/jobsight/collector-token\).*|listen_token_file: \1|' \
	-e 's|^  remote_write_url: https://prom.example.org/api/v1/write|  remote_write_url: http://127.0.0.1:9090/api/v1/write|' \
	-e 's|^  urls: \[https://es1.*|  urls: ["http://127.0.0.1:4080/es"]|' -e 's/^  username: jobsight-collector/  username: admin/' \
	/etc/jobsight/cluster-state.yaml
sed -i -e 's/cluster: hpc1/cluster: v2test/' /etc/jobsight/constants.yaml
install -m 0600 -o jobsight -g jobsight $H/es-password /etc/jobsight/collector-es-password
install -m 0640 -o root -g jobsight $H/collector-token /etc/jobsight/collector-token
runuser -u jobsight -- jobsight cluster-state --config /etc/jobsight/cluster-state.yaml --check > $OUT/check-collector.txt 2>&1 || fail "cluster-state --check: $(cat $OUT/check-collector.txt)"
runuser -u jobsight -- jobsight cluster-state --config /etc/jobsight/cluster-state.yaml --check-stores >> $OUT/check-collector.txt 2>&1 || fail "cluster-state --check-stores: $(cat $OUT/check-collector.txt)"
systemctl enable --now jobsight-cluster-state || fail "systemctl enable --now jobsight-cluster-state"
wait_for 60 "the collector's /constants" curl -sf -H "Authorization: Bearer $(cat $H/collector-token)" http://127.0.0.1:9310/constants
mark collector
touch $OUT/node-ready

# 4. Grafana: the host's.
wait_for 900 "the host's Grafana stand-in" test -e $H/grafana-ready
mark grafana

# 5. A job, as any user.
cd /home/alice
id=$(runuser -u alice -- sbatch --parsable --wrap 'timeout 120 sh -c "while :; do :; done"') || fail "sbatch"
echo "$id" > $OUT/job
mark submitted
wait_for 600 "the job to end" sh -c "[ -z \"\$(squeue -h -j $id -o %i 2>/dev/null)\" ]"
mark ended
say "agent log: $(grep -c "job_id=$id" /var/log/jobsight/agent.log) lines for job $id"

say "waiting for the host"
i=0
while [ ! -e $H/host-done ] && [ $i -lt 2400 ]; do sleep 0.5; i=$((i + 1)); done
say "host done"
