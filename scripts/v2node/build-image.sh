#!/usr/bin/env bash
# scripts/v2node/build-image.sh — the cgroup v2 test node's disk image,
# built once and cached by version.
#
# Usage: scripts/v2node/build-image.sh SLURM_PREFIX ZINCSEARCH_BINARY
#
# A Debian 12 (bookworm) root file system with systemd 252 as init, booted
# by scripts/v2node/boot.sh under QEMU with the unified hierarchy only
# (systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all): what most sites'
# compute nodes run. It holds what the node needs and nothing of Jobsight:
#   - the Slurm build SLURM_PREFIX (scripts/build-slurm.sh), copied to the
#     same absolute path (its binaries find their private library there),
#     and munge and the libraries Slurm loads (json-c, yaml, lz4, http-parser, jwt, dbus:
#     cgroup/v2 asks systemd over dbus for slurmstepd's scope);
#   - gcc and make: the agent package's jobsight-spank-install builds the
#     SPANK plugin on the node, as on a site;
#   - the stores the guest's agent writes to, so that every connection a
#     guest process makes stays on the guest's loopback: ZincSearch (the
#     Elasticsearch-API test server, ZINCSEARCH_BINARY) and this host's
#     Prometheus binary (Debian's, linked against the C library only);
#   - a unit that runs /mnt/host/guest.sh from the 9p share at boot and
#     powers the guest off when it returns (test/cgroupv2 writes that
#     script: the Slurm and agent configuration, the packages, the jobs).
# The host kernel's modules are copied in (the guest boots the host's
# /boot/vmlinuz of the same release: 9p and virtio need them).
#
# The image is cached as $JOBSIGHT_CACHE/v2node/<key>/guest.img (default
# ~/.cache/jobsight), key = SHA-256 of this script, the kernel release, the
# Slurm prefix's name, the ZincSearch and Prometheus binaries. A cached
# image is reused (seconds); a new one takes 1–3 minutes (mmdebstrap from
# Debian's archive through the host's apt sources). The last line printed
# is the image's path. Needs root and the Debian packages mmdebstrap,
# e2fsprogs and linux-image-amd64 (.ci/run installs them).
set -euo pipefail

die() { echo "v2node/build-image: $*" >&2; exit 1; }
[[ $# -eq 2 ]] || die "usage: $0 SLURM_PREFIX ZINCSEARCH_BINARY"
slurm=$(cd "$1" && pwd) || die "$1 is not a directory"
zinc=$2
[[ -f "$slurm/.complete" && -x "$slurm/sbin/slurmd" ]] || die "$slurm is not a complete Slurm prefix (scripts/build-slurm.sh)"
[[ -x "$zinc" ]] || die "$zinc is not an executable (scripts/build-zincsearch.sh)"
prom=$(command -v prometheus) || die "prometheus is not on PATH (Debian package prometheus)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (Debian package mmdebstrap)"
[[ $(id -u) -eq 0 ]] || die "needs root (mmdebstrap, chroot)"
kver=${KVER:-$(ls /boot/vmlinuz-* 2>/dev/null | sed 's,/boot/vmlinuz-,,' | sort -V | tail -1)}
[[ -n "$kver" && -r "/boot/vmlinuz-$kver" && -d "/lib/modules/$kver" ]] || die "no readable /boot/vmlinuz-* with /lib/modules (Debian package linux-image-amd64)"

cache="${JOBSIGHT_CACHE:-${HOME}/.cache/jobsight}"
key=$( { sha256sum "$0" | cut -c1-64; echo "$kver" "$(basename "$slurm")"; sha256sum "$zinc" "$prom" | cut -c1-64; } | sha256sum | cut -c1-12)
dir="$cache/v2node/$key"
img="$dir/guest.img"
if [[ -f "$dir/.complete" ]]; then
	echo "$img"
	exit 0
fi
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [[ -f "$dir/.complete" ]]; then echo "$img"; exit 0; fi
echo "v2node/build-image: building $img (kernel $kver, $(basename "$slurm"))" >&2

work=$(mktemp -d "$dir/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
# The host's apt sources: the machines reach Debian's archive only through them.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[[ -s "$f" ]] && sources+=("$f")
done
((${#sources[@]})) || die "no apt sources on this host"
packages=systemd-sysv,udev,kmod,procps,iproute2,dbus,libdbus-1-3,util-linux,e2fsprogs,less,coreutils
packages+=,libjson-c5,libyaml-0-2,liblz4-1,libhttp-parser2.9,libjwt0,libmunge2,munge,libreadline8
packages+=,gcc,make,libc6-dev,dpkg,logrotate,curl,ca-certificates
nice -n 10 mmdebstrap --quiet --variant=minbase --include="$packages" \
	--aptopt='Acquire::Retries "3"' bookworm "$root" "${sources[@]}" >&2

modules=lib/modules/$kver
mkdir -p "$root/$modules"
cp -a "/$modules/." "$root/$modules/"
(cd "$root/$modules/kernel" && rm -rf drivers/gpu drivers/media drivers/net/wireless drivers/net/ethernet \
	drivers/infiniband drivers/staging drivers/bluetooth sound net/wireless net/mac80211 net/bluetooth \
	drivers/iio drivers/hid drivers/usb drivers/isdn drivers/input/touchscreen)
depmod -b "$root" "$kver"

mkdir -p "$root$(dirname "$slurm")"
cp -a "$slurm" "$root$slurm"
install -D -m 0755 "$zinc" "$root/usr/local/bin/zincsearch"
install -D -m 0755 "$prom" "$root/usr/local/bin/prometheus"

echo v2node > "$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 v2node\n' > "$root/etc/hosts"
cat > "$root/etc/fstab" <<'FSTAB'
/dev/vda   /          ext4  defaults,errors=remount-ro  0 1
hostshare  /mnt/host  9p    trans=virtio,version=9p2000.L,msize=262144,nofail,x-systemd.device-timeout=10s  0 0
FSTAB
mkdir -p "$root/mnt/host"
chroot "$root" passwd -d root >/dev/null
mkdir -p "$root/etc/systemd/system/serial-getty@ttyS0.service.d" "$root/etc/systemd/system.conf.d"
cat > "$root/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'UNIT'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200,57600,38400,9600 %I $TERM
UNIT
cat > "$root/etc/systemd/system.conf.d/accounting.conf" <<'UNIT'
[Manager]
DefaultCPUAccounting=yes
DefaultIOAccounting=yes
DefaultMemoryAccounting=yes
DefaultTasksAccounting=yes
UNIT
# The test's own script, from the share; its output to the console and the
# share; the guest powers off when it returns, whatever it returned.
cat > "$root/etc/systemd/system/v2node-test.service" <<'UNIT'
[Unit]
Description=Run the cgroup v2 node test script from the host share
After=multi-user.target mnt-host.mount
RequiresMountsFor=/mnt/host
ConditionPathExists=/mnt/host/guest.sh
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'sh /mnt/host/guest.sh > /mnt/host/guest.log 2>&1; echo $? > /mnt/host/guest.rc'
ExecStopPost=/bin/systemctl --no-block poweroff
TimeoutStartSec=infinity
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/v2node-test.service "$root/etc/systemd/system/multi-user.target.wants/v2node-test.service"
# Not needed on a test node, and slow under emulation.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer logrotate.timer man-db.timer; do
	ln -sf /dev/null "$root/etc/systemd/system/$u"
done
rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* "$root/usr/share/doc" "$root/usr/share/man" "$root/usr/share/locale"

rm -f "$img.tmp"
nice -n 10 mke2fs -q -t ext4 -L guestroot -d "$root" "$img.tmp" 3G >&2
mv "$img.tmp" "$img"
echo "$kver" > "$dir/kernel"
touch "$dir/.complete"
du -h --apparent-size "$img" | cut -f1 | xargs echo "v2node/build-image: image ready, allocated $(du -h "$img" | cut -f1) of" >&2
echo "$img"
