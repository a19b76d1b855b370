#!/usr/bin/env bash
# scripts/v2node/boot.sh — boot the cgroup v2 test node (the image of
# scripts/v2node/build-image.sh) under QEMU, with software emulation (TCG:
# KVM on these machines stalls an ordinary guest, ../shared/vm/README.md).
#
# Usage: scripts/v2node/boot.sh IMAGE SHARE_DIR [HOSTPORT:GUESTPORT ...]
#
#   IMAGE       the cached image; booted with -snapshot, so it is never
#               written (every boot starts from the same node)
#   SHARE_DIR   a host directory, the guest's /mnt/host (9p): the test's
#               guest.sh and packages go in, logs and figures come out
#   HOSTPORT:GUESTPORT
#               QEMU user networking, restricted (the guest reaches nothing
#               outside it), with one forward from the host's 127.0.0.1
#               (never another address) into the guest per pair: how the
#               host reads the stores that run inside the guest
#
# A second disk, SHARE_DIR/slow.img (made here, empty ext4), is attached
# with QEMU's I/O throttling (SLOW_BPS bytes and SLOW_IOPS operations per
# second): the slow shared file system the I/O-stall jobs write to.
# SMP (4), MEM (3072 MiB) and KVER (the newest /boot/vmlinuz-*) may be set.
# The serial console goes to stdout; the guest powers itself off when its
# test script ends (-no-reboot makes a reboot an exit too).
set -euo pipefail

die() { echo "v2node/boot: $*" >&2; exit 1; }
[[ $# -ge 2 ]] || die "usage: $0 IMAGE SHARE_DIR [HOSTPORT:GUESTPORT ...]"
img=$1 share=$2
shift 2
[[ -f "$img" ]] || die "no image $img (scripts/v2node/build-image.sh)"
[[ -d "$share" ]] || die "no share directory $share"
kver=${KVER:-$(cat "$(dirname "$img")/kernel" 2>/dev/null || ls /boot/vmlinuz-* | sed 's,/boot/vmlinuz-,,' | sort -V | tail -1)}
[[ -r /boot/vmlinuz-$kver && -r /boot/initrd.img-$kver ]] || die "kernel $kver is not in /boot (Debian linux-image-amd64)"

net="user,model=virtio-net-pci,restrict=on"
for fwd in "$@"; do
	[[ "$fwd" =~ ^[0-9]+:[0-9]+$ ]] || die "forward $fwd is not HOSTPORT:GUESTPORT"
	net+=",hostfwd=tcp:127.0.0.1:${fwd%%:*}-:${fwd##*:}"
done

slow="$share/slow.img"
rm -f "$slow"
mke2fs -q -t ext4 -L slow "$slow" 512M

exec qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${SMP:-4}" -m "${MEM:-3072}" \
	-nographic -no-reboot -nic "$net" \
	-kernel "/boot/vmlinuz-$kver" -initrd "/boot/initrd.img-$kver" \
	-append "console=ttyS0 root=/dev/vda rw systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all psi=1" \
	-snapshot -drive "file=$img,format=raw,if=virtio,cache=unsafe" \
	-drive "file=$slow,format=raw,if=virtio,cache=writeback,throttling.bps-total=${SLOW_BPS:-2097152},throttling.iops-total=${SLOW_IOPS:-40}" \
	-virtfs "local,path=$share,mount_tag=hostshare,security_model=none,id=hostshare"
