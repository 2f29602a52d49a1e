#!/usr/bin/env bash
# ipa-ramdisk.sh: an ironic-python-agent (IPA) deploy kernel and ramdisk for Ironic 39's `direct` deploy
# (#46), built here from Debian's packages and PyPI, for the test that deploys, cleans and redeploys a
# migrated node (tests/it/deploy.rs). What a deploy on this machine needed (docs/juno.md, "A new deploy"):
#   deploy.kernel     Debian's cloud kernel (the same package as scripts/bootvm.sh's machine)
#   deploy.initramfs  a Debian bookworm root made with mmdebstrap (python3, lshw, udev, parted, gdisk,
#                     iproute2, busybox, kmod, dmidecode, e2fsprogs, qemu-utils, psmisc), less what the
#                     agent never runs (perl, apt, pip, test suites: trim), IPA 13.0.0 and its
#                     dependencies built as wheels on this host (pip) and installed offline into a venv in
#                     the root (/opt/ipa), the kernel's virtio modules (udev loads them), and a small /init:
#                     udev, udhcpc on every NIC, then ironic-python-agent. zstd-compressed cpio.
#   image-first.raw, image-second.raw (+ .sha256), image-marker
#                     two whole-disk images to deploy (MBR, syslinux, the same kernel, a busybox initramfs
#                     that prints `BM2IRONIC-IMAGE-BOOTED ... bm2.image=<name>` on the console)
# /init also reads `bm2.host=NAME=ADDR` from the kernel command line into /etc/hosts: a URL that must work
# from the conductor's host and from the VM (Ironic's API, `[deploy] http_url`) names a host that resolves
# to 127.0.0.1 there and here to 10.0.2.2, where QEMU's user network reaches the host's loopback (fakebmc.py
# --reach-host). It prints BM2IRONIC-IPA-STARTING on the console before the agent starts.
#
# Usage: scripts/ipa-ramdisk.sh [build]   build once (cached in $BM2_IPA_CACHE, /tmp/bm2ironic-ipa; rebuilt
#                                         when this script changes) and print `export BM2IRONIC_TEST_IPA_DIR=...`
#        scripts/ipa-ramdisk.sh clean     remove the cache
# Needs root (mmdebstrap's root mode, chroot for the venv) and installs with apt what it lacks (mmdebstrap,
# zstd, cpio, and for the images dosfstools, mtools, syslinux, syslinux-common, fdisk). mmdebstrap's log:
# $BM2_IPA_CACHE/mmdebstrap.log.
set -euo pipefail

CACHE=${BM2_IPA_CACHE:-/tmp/bm2ironic-ipa}
IPA=${BM2_IPA_SPEC:-ironic-python-agent==13.0.0}
SUITE=bookworm
# what the agent runs (hardware inventory, disks, images; psmisc's fuser before the metadata erase) and
# what /init uses
PACKAGES=python3,python3-venv,lshw,udev,parted,gdisk,iproute2,busybox,kmod,dmidecode,e2fsprogs,qemu-utils,util-linux,psmisc
log() { echo "[ipa-ramdisk] $*" >&2; }
die() { echo "ipa-ramdisk.sh: $*" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"

tools() {
  local need=()
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  command -v zstd >/dev/null || need+=(zstd)
  command -v cpio >/dev/null || need+=(cpio)
  # the whole-disk images: a FAT file system, syslinux installed into it without mounting (mtools), the MBR
  command -v mkfs.vfat >/dev/null || need+=(dosfstools)
  command -v mcopy >/dev/null || need+=(mtools)
  command -v syslinux >/dev/null || need+=(syslinux)
  [ -e /usr/lib/syslinux/mbr/mbr.bin ] || need+=(syslinux-common)
  command -v sfdisk >/dev/null || need+=(fdisk)
  [ ${#need[@]} -eq 0 ] || { log "installing with apt: ${need[*]}"; apt_ensure "${need[@]}"; }
  [ "$(id -u)" = 0 ] || die "needs root (mmdebstrap's root mode and chroot)"
}

# Debian's cloud kernel package, downloaded (not installed): its vmlinuz and virtio modules; and
# busybox-static for the images' initramfs
fetch_kernel() {
  local kernel
  ls "$CACHE"/debs/linux-image-*.deb "$CACHE"/debs/busybox-static_*.deb >/dev/null 2>&1 && return
  mkdir -p "$CACHE/debs"
  kernel=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$kernel" ]; then
    apt_update
    kernel=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  [ -n "$kernel" ] || die "apt knows no linux-image-cloud-amd64"
  log "downloading $kernel busybox-static (apt-get download)"
  ( flock -w 900 9 && cd "$CACHE/debs" && apt-get -q -o APT::Sandbox::User=root download "$kernel" busybox-static >/dev/null ) 9>"$APT_LOCK"
}

# IPA and its dependencies as wheels, built by pip on this host (the root's python3 is the same 3.11)
wheels() {
  local venv=$CACHE/pip-venv
  [ -s "$CACHE/wheels/.done" ] && return
  rm -rf "$CACHE/wheels" "$venv"
  log "building wheels of $IPA and its dependencies (pip)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip wheel
  "$venv/bin/pip" wheel -q --disable-pip-version-check --wheel-dir "$CACHE/wheels" "$IPA"
  echo "$IPA" >"$CACHE/wheels/.done"
  rm -rf "$venv"
}

INIT='#!/bin/sh
# bm2ironic IPA ramdisk: udev, DHCP on every NIC, then ironic-python-agent (scripts/ipa-ramdisk.sh)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /proc /sys /dev /run /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
exec </dev/console >/dev/console 2>&1
hostname ipa
echo "127.0.0.1 localhost ipa" >/etc/hosts
for arg in $(cat /proc/cmdline); do
  case $arg in bm2.host=*=*) h=${arg#bm2.host=}; echo "${h#*=} ${h%%=*}" >>/etc/hosts ;; esac
done
/lib/systemd/systemd-udevd --daemon
udevadm trigger --type=subsystems --action=add
udevadm trigger --type=devices --action=add
udevadm settle --timeout=30
ip link set lo up
for n in /sys/class/net/*; do
  i=${n##*/}
  [ "$i" = lo ] && continue
  ip link set "$i" up
  busybox udhcpc -i "$i" -s /etc/bm2-udhcpc.script -n -q -t 10 -T 2 || echo "bm2ironic-ipa: no DHCP answer on $i"
done
echo "BM2IRONIC-IPA-STARTING $(ip -4 -o addr show scope global | tr -s " " | cut -d" " -f2,4)"
/opt/ipa/bin/ironic-python-agent
echo "bm2ironic-ipa: ironic-python-agent exited ($?); powering off"
sleep 5
echo o >/proc/sysrq-trigger
'

UDHCPC='#!/bin/sh
# busybox udhcpc: configure the lease with ip(8)
case $1 in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    [ -z "$router" ] || ip route replace default via "${router%% *}" dev "$interface"
    : >/etc/resolv.conf
    for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done ;;
  deconfig) ip addr flush dev "$interface" ;;
esac
exit 0
'

# the kernel's modules that a QEMU machine with virtio disk and NIC needs, with depmod's tables
modules() {
  local root=$1 pkgs=$CACHE/kernel.d version
  rm -rf "$pkgs"
  mkdir -p "$pkgs"
  dpkg-deb --fsys-tarfile "$CACHE"/debs/linux-image-*.deb |
    tar -x -C "$pkgs" --wildcards './boot/vmlinuz-*' './lib/modules/*/modules.*' \
      './lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/drivers/block/virtio_blk.ko*' \
      './lib/modules/*/kernel/drivers/net/virtio_net.ko*' './lib/modules/*/kernel/drivers/net/net_failover.ko*' \
      './lib/modules/*/kernel/net/core/failover.ko*' './lib/modules/*/kernel/drivers/scsi/virtio_scsi.ko*' \
      './lib/modules/*/kernel/drivers/scsi/sd_mod.ko*' './lib/modules/*/kernel/drivers/char/hw_random/virtio-rng.ko*'
  version=$(ls "$pkgs/lib/modules")
  mkdir -p "$root/lib/modules"
  rm -rf "${root:?}/lib/modules/$version"
  cp -a "$pkgs/lib/modules/$version" "$root/lib/modules/$version"
  chroot "$root" depmod "$version"   # the root's own kmod
  cp "$pkgs"/boot/vmlinuz-* "$CACHE/deploy.kernel.new"
  rm -rf "$pkgs"
}

# What the agent never runs, out of the ramdisk: every byte of it crosses TFTP at each boot (about
# 0.5 MB/s under TCG). perl (pulled in by Debian's tools, no agent command is perl), apt, pip, the
# packages' test suites, udev's hardware database sources (its compiled hwdb.bin stays), QEMU's tools
# but qemu-img.
trim() {
  local root=$1 sp
  sp=$(echo "$root"/opt/ipa/lib/python3*/site-packages)
  rm -rf "$root"/usr/lib/x86_64-linux-gnu/perl "$root"/usr/share/perl "$root"/usr/lib/x86_64-linux-gnu/perl5 \
    "$root"/usr/lib/x86_64-linux-gnu/perl-base "$root"/usr/lib/x86_64-linux-gnu/libperl.so* \
    "$root"/usr/share/perl5 "$root"/usr/bin/perl "$root"/usr/bin/perl5.* \
    "$root"/usr/bin/apt* "$root"/usr/lib/apt "$root"/usr/lib/x86_64-linux-gnu/libapt-* "$root"/var/lib/apt \
    "$root"/usr/lib/udev/hwdb.d "$root"/usr/bin/qemu-nbd "$root"/usr/bin/qemu-io "$root"/usr/bin/qemu-storage-daemon \
    "$root"/usr/share/python-wheels "$root"/usr/lib/python3.11/ensurepip "$root"/usr/lib/python3/dist-packages/pip \
    "$sp"/pip "$sp"/pip-* "$root"/var/cache/* "$root"/var/log/*
  find "$sp" -depth -type d \( -name tests -o -name testsuite \) -exec rm -rf {} +
}

build_root() {
  local root=$CACHE/root
  rm -rf "$root"
  log "mmdebstrap $SUITE with $PACKAGES, $IPA from the wheels (about 2 minutes)"
  mmdebstrap --mode=root --variant=minbase --include="$PACKAGES" \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="mkdir -p \"\$1/tmp/wheels\" && cp \"$CACHE\"/wheels/*.whl \"\$1/tmp/wheels/\"" \
    --customize-hook='chroot "$1" python3 -m venv /opt/ipa' \
    --customize-hook="chroot \"\$1\" /opt/ipa/bin/pip install -q --no-index --no-cache-dir --find-links /tmp/wheels '$IPA'" \
    --customize-hook='rm -rf "$1/tmp/wheels" "$1/var/cache/apt" "$1/var/lib/apt/lists" "$1/usr/share/doc" "$1/usr/share/man"' \
    "$SUITE" "$root" >"$CACHE/mmdebstrap.log" 2>&1 || { tail -30 "$CACHE/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
  printf '%s' "$INIT" >"$root/init"
  printf '%s' "$UDHCPC" >"$root/etc/bm2-udhcpc.script"
  # no init system to ask: the agent's poweroff and reboot (after a deploy, for cleaning) go to the kernel
  printf '#!/bin/sh\nsync\necho o >/proc/sysrq-trigger\n' >"$root/usr/local/sbin/poweroff"
  printf '#!/bin/sh\nsync\necho b >/proc/sysrq-trigger\n' >"$root/usr/local/sbin/reboot"
  chmod 755 "$root/init" "$root/etc/bm2-udhcpc.script" "$root/usr/local/sbin/poweroff" "$root/usr/local/sbin/reboot"
  trim "$root"
  modules "$root"
  log "packing the ramdisk (cpio, zstd)"
  (cd "$root" && find . -xdev | LC_ALL=C sort | cpio -o -H newc --quiet | zstd -q -T0 -10) >"$CACHE/deploy.initramfs.new"
  rm -rf "$root"
}

# Two whole-disk images to deploy (`first`, `second`), each as a cloud image is: an MBR with boot code
# (syslinux's mbr.bin), one bootable FAT partition with syslinux, the kernel and a busybox initramfs
# whose /init prints `BM2IRONIC-IMAGE-BOOTED <its kernel command line>` (bm2.image=<name> in it) on the
# serial console and idles. 32 MiB raw, its sha256 beside it (for a file:// or http image_source, which
# Ironic wants a checksum for; the test uploads them to Glance, which computes its own md5).
IMAGE_MARKER=BM2IRONIC-IMAGE-BOOTED
images() {
  local pkgs=$CACHE/image.d ir name fat img
  rm -rf "$pkgs"
  mkdir -p "$pkgs"
  dpkg-deb -x "$(echo "$CACHE"/debs/busybox-static_*.deb)" "$pkgs/bb"
  ir=$pkgs/initrd
  mkdir -p "$ir"/{bin,proc,dev}
  cp "$pkgs/bb/bin/busybox" "$ir/bin/busybox"
  cat >"$ir/init" <<INIT
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
echo "$IMAGE_MARKER \$(/bin/busybox cat /proc/cmdline)"
while :; do /bin/busybox sleep 3600; done
INIT
  chmod 755 "$ir/init"
  (cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -9n) >"$pkgs/initrd.gz"
  for name in first second; do
    fat=$pkgs/fat.img img=$CACHE/image-$name.raw
    rm -f "$fat" "$img"
    mkfs.vfat -n BM2IMAGE -C "$fat" $((31 * 1024)) >/dev/null
    syslinux --install "$fat"
    printf 'SERIAL 0 115200\nDEFAULT image\nPROMPT 0\nTIMEOUT 0\nLABEL image\n  KERNEL vmlinuz\n  APPEND initrd=initrd.gz console=ttyS0 bm2.image=%s\n' \
      "$name" >"$pkgs/syslinux.cfg"
    mcopy -i "$fat" "$CACHE/deploy.kernel.new" ::/vmlinuz
    mcopy -i "$fat" "$pkgs/initrd.gz" "$pkgs/syslinux.cfg" ::/
    truncate -s 32M "$img"
    printf 'label: dos\nstart=1MiB, type=6, bootable\n' | sfdisk -q "$img" >/dev/null
    dd if=/usr/lib/syslinux/mbr/mbr.bin of="$img" bs=440 count=1 conv=notrunc status=none
    dd if="$fat" of="$img" bs=1M seek=1 conv=notrunc status=none
    sha256sum "$img" | cut -d' ' -f1 >"$img.sha256"
  done
  echo "$IMAGE_MARKER" >"$CACHE/image-marker"
  rm -rf "$pkgs"
}

build() {
  local stamp start
  stamp=$( (sha256sum "${BASH_SOURCE[0]}"; echo "$IPA") | sha256sum | cut -d' ' -f1)
  if [ "$(cat "$CACHE/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -s "$CACHE/deploy.initramfs" ]; then
    start=$(date +%s)
    tools
    rm -f "$CACHE/stamp"
    mkdir -p "$CACHE"
    fetch_kernel
    wheels
    build_root
    images
    mv "$CACHE/deploy.kernel.new" "$CACHE/deploy.kernel"
    mv "$CACHE/deploy.initramfs.new" "$CACHE/deploy.initramfs"
    echo "$stamp" >"$CACHE/stamp"
    log "built in $(( $(date +%s) - start )) s: deploy.initramfs $(( $(stat -c %s "$CACHE/deploy.initramfs") / 1048576 )) MiB"
  fi
  echo "export BM2IRONIC_TEST_IPA_DIR=$CACHE"
}

case "${1:-build}" in
  build) build ;;
  clean) rm -rf "$CACHE" ;;
  *) echo "usage: $0 [build | clean]" >&2; exit 2 ;;
esac
