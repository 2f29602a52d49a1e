#!/usr/bin/env bash
# bootvm.sh: the pieces of a real machine that nova baremetal netbooted, for the next-reboot test (#24).
#
# nova baremetal never put a bootloader on an instance's disk: the disk holds partitions only, and the
# machine PXE-boots a kernel and ramdisk at every boot with `root=UUID=<root partition>` on the kernel
# command line. This builds such a machine's parts, from Debian's packages only:
#   vmlinuz      a real kernel (Debian's cloud kernel, unpacked from its package, not installed)
#   initramfs    a small busybox initramfs: loads the virtio disk driver, finds the root file system by
#                the UUID the kernel command line names, mounts it read-only and switch_root's into it
#   disk.img     a raw disk laid out as nova baremetal left it: an MBR, partition 1 ext4 (the root, UUID
#                in root-uuid), partition 2 swap, no bootloader. Its /sbin/init prints
#                `BM2IRONIC-INSTANCE-BOOTED root=<uuid>` on the serial console, then idles like an instance
#   pxelinux.0, ldlinux.c32   the PXE loader an Ironic (or nova baremetal) TFTP root serves
#   deploy-ramdisk  nova baremetal's deploy ramdisk, as diskimage-builder's `deploy` element made it, for the
#                test where nova baremetal itself deploys instances onto these machines (#45): it reads the
#                deployment id, key and iqn and `ip=` (pxelinux's `ipappend 3`) from the kernel command line,
#                brings up the NIC named by BOOTIF and POSTs `i k a n` to the deploy helper at the boot
#                server (port `bm2.deploy_port=`, QEMU's user network maps 10.0.2.2 to this host's
#                loopback). It exports no disk over iSCSI (this host has no initiator; the helper's disk
#                write is the test's stub) and, where DIB's waited for the helper's notify on its port
#                10000 (the host never dials the guest's 10.0.2.x), it reads its own PXE config over TFTP
#                until it says `default boot` (the helper's switch_pxe_config), then reboots.
# The QEMU that boots them is driven by scripts/fakebmc.py --vm (IPMI power -> QMP).
#
# Usage: scripts/bootvm.sh [build]   build once (cached in $BM2_BOOT_CACHE, /tmp/bm2ironic-boot) and print
#                                    `export BM2IRONIC_TEST_BOOT_DIR=...` for the tests
#        scripts/bootvm.sh clean     remove the cache
# Installs with apt what it needs (qemu-system-x86, ipxe-qemu, fdisk for sfdisk); the image contents
# (kernel, busybox-static, pxelinux, syslinux-common) are `apt-get download`ed and unpacked into the
# cache, never installed. Needs no root privileges once the tools are installed.
set -euo pipefail

CACHE=${BM2_BOOT_CACHE:-/tmp/bm2ironic-boot}
# the root file system's UUID: what nova baremetal wrote as root=UUID=... into the instance's PXE config
ROOT_UUID=b0071e55-0024-4b2a-9e1c-6e7a11c0ffee
MARKER=BM2IRONIC-INSTANCE-BOOTED
log() { echo "[bootvm] $*" >&2; }
die() { echo "bootvm.sh: $*" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"   # one lock for every apt call of the project's scripts
apt_install() {
  log "installing with apt: $*"
  apt_ensure "$@"
}

tools() {
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  # the virtio NIC's boot ROM (iPXE): QEMU refuses a virtio-net-pci without it
  [ -e /usr/lib/ipxe/qemu/efi-virtio.rom ] || [ -e /usr/share/qemu/efi-virtio.rom ] || need+=(ipxe-qemu)
  command -v sfdisk >/dev/null || need+=(fdisk)
  command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
  [ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
}

# The image contents: downloaded .deb files, unpacked under $CACHE/pkgs (never installed: busybox-static
# would replace a machine's busybox, and a second kernel does not belong in /boot).
fetch_debs() {
  local dir=$CACHE/debs kernel
  mkdir -p "$dir"
  # the metapackage names the concrete kernel package (linux-image-<abi>-cloud-amd64)
  kernel=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  if [ -z "$kernel" ]; then
    apt_update
    kernel=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-/ {print $2; exit}')
  fi
  [ -n "$kernel" ] || die "apt knows no linux-image-cloud-amd64"
  log "downloading $kernel busybox-static pxelinux syslinux-common (apt-get download)"
  # apt's sandbox user cannot write into a root-owned /tmp directory: download as the caller, quietly
  # under the project's apt lock: an update elsewhere rewrites the lists this reads
  ( flock -w 900 9 && cd "$dir" && apt-get -q -o APT::Sandbox::User=root download "$kernel" busybox-static pxelinux syslinux-common >/dev/null ) 9>"$APT_LOCK"
}

unpack() {
  local pkgs=$CACHE/pkgs deb
  rm -rf "$pkgs"
  mkdir -p "$pkgs"
  for deb in "$CACHE"/debs/busybox-static_*.deb "$CACHE"/debs/pxelinux_*.deb "$CACHE"/debs/syslinux-common_*.deb; do
    dpkg-deb -x "$deb" "$pkgs"
  done
  # of the kernel only vmlinuz, its config and the virtio modules (the whole package is ~300 MB unpacked)
  dpkg-deb --fsys-tarfile "$CACHE"/debs/linux-image-*.deb |
    tar -x -C "$pkgs" --wildcards './boot/vmlinuz-*' './boot/config-*' \
      './lib/modules/*/kernel/drivers/virtio/*' './lib/modules/*/kernel/drivers/block/virtio_blk.ko*' \
      './lib/modules/*/kernel/drivers/net/virtio_net.ko*' './lib/modules/*/kernel/drivers/net/net_failover.ko*' \
      './lib/modules/*/kernel/net/core/failover.ko*'
}

# The modules the initramfs loads, in dependency order, when the kernel has them as modules
# (Debian's cloud kernel: CONFIG_VIRTIO*=m, CONFIG_EXT4_FS=y).
MODULES="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk"

build_initramfs() {
  local pkgs=$CACHE/pkgs ir=$CACHE/initramfs.d config m f
  config=$(echo "$pkgs"/boot/config-*)
  grep -qx 'CONFIG_EXT4_FS=y' "$config" || die "the kernel ($config) has ext4 as a module: add it to MODULES"
  grep -qx 'CONFIG_RD_GZIP=y' "$config" || die "the kernel ($config) cannot unpack a gzip initramfs"
  rm -rf "$ir"
  mkdir -p "$ir"/{bin,dev,proc,sys,newroot,lib/modules}
  cp "$pkgs/bin/busybox" "$ir/bin/busybox"
  for m in $MODULES; do
    f=$(find "$pkgs/lib/modules" -name "$m.ko*" | head -1)
    if [ -n "$f" ]; then
      case $f in   # busybox's insmod takes plain .ko files
        *.ko) cp "$f" "$ir/lib/modules/$m.ko" ;;
        *.ko.xz) xz -dc "$f" >"$ir/lib/modules/$m.ko" ;;
        *.ko.zst) zstd -qdc "$f" >"$ir/lib/modules/$m.ko" ;;
        *) die "cannot unpack the module $f" ;;
      esac
    else
      case $m in
        virtio_pci_legacy_dev | virtio_pci_modern_dev) ;;   # older kernels have them built into virtio_pci
        *) grep -qE "^CONFIG_$(echo "$m" | tr a-z A-Z)=y" "$config" || die "$m is neither a module nor built in" ;;
      esac
    fi
  done
  cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
# bm2ironic test initramfs: mount the root named by root=UUID=... read-only and hand over to its /sbin/init
/bin/busybox mkdir -p /dev /proc /sys
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
fail() { echo "bm2ironic-initramfs: $*; powering off"; sleep 3; poweroff -f; while :; do sleep 60; done; }
for m in MODULES; do
  [ -e /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
# the last root= wins, as for the kernel and initramfs-tools (Ironic's boot_ramdisk label says
# root=/dev/ram0 before the node's own arguments)
root=
for arg in $(cat /proc/cmdline); do
  case $arg in root=*) root=${arg#root=} ;; esac
done
case $root in UUID=*) ;; *) fail "no root=UUID=... on the kernel command line: $(cat /proc/cmdline)" ;; esac
echo "bm2ironic-initramfs: looking for root $root"
dev=
for i in $(seq 1 100); do
  dev=$(findfs "$root" 2>/dev/null) && break
  sleep 0.1
done
[ -n "$dev" ] || fail "no block device holds $root"
mount -t ext4 -o ro "$dev" /newroot || fail "cannot mount $dev ($root) read-only"
[ -x /newroot/sbin/init ] || fail "$dev ($root) has no /sbin/init"
echo "bm2ironic-initramfs: root $root is $dev, switching to its /sbin/init"
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
INIT
  sed -i "s/for m in MODULES;/for m in $MODULES;/" "$ir/init"
  chmod 755 "$ir/init"
  (cd "$ir" && find . | sort | "$pkgs/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -9n) >"$CACHE/initramfs.new"
  mv "$CACHE/initramfs.new" "$CACHE/initramfs"
}

# nova baremetal's deploy ramdisk (see the header): the same kernel modules plus the virtio NIC's.
NET_MODULES="failover net_failover virtio_net"
build_deploy_ramdisk() {
  local pkgs=$CACHE/pkgs ir=$CACHE/deploy-ramdisk.d m f
  rm -rf "$ir"
  mkdir -p "$ir"/{bin,dev,proc,sys,tmp,lib/modules}
  cp "$pkgs/bin/busybox" "$ir/bin/busybox"
  for m in $MODULES $NET_MODULES; do
    f=$(find "$pkgs/lib/modules" -name "$m.ko*" | head -1)
    [ -n "$f" ] || continue   # built in (checked for the disk modules by build_initramfs)
    case $f in
      *.ko) cp "$f" "$ir/lib/modules/$m.ko" ;;
      *.ko.xz) xz -dc "$f" >"$ir/lib/modules/$m.ko" ;;
      *.ko.zst) zstd -qdc "$f" >"$ir/lib/modules/$m.ko" ;;
    esac
  done
  cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
# bm2ironic test deploy ramdisk: what diskimage-builder's nova baremetal `deploy` ramdisk did, less the iSCSI
# export (scripts/bootvm.sh's header)
/bin/busybox mkdir -p /dev /proc /sys /tmp
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
say() { echo "bm2ironic-deploy-ramdisk: $*"; }
fail() { say "$*; rebooting in 30 s"; sleep 30; reboot -f; while :; do sleep 60; done; }
for m in MODULES; do
  [ -e /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
id= key= iqn= ip= bootif= port=
for arg in $(cat /proc/cmdline); do
  case $arg in
    deployment_id=*) id=${arg#*=} ;;
    deployment_key=*) key=${arg#*=} ;;
    iscsi_target_iqn=*) iqn=${arg#*=} ;;
    ip=*) ip=${arg#*=} ;;
    BOOTIF=*) bootif=${arg#*=} ;;
    bm2.deploy_port=*) port=${arg#*=} ;;
  esac
done
[ -n "$id" ] && [ -n "$key" ] && [ -n "$iqn" ] || fail "no deployment_id, deployment_key or iscsi_target_iqn: $(cat /proc/cmdline)"
[ -n "$ip" ] && [ -n "$bootif" ] || fail "no ip= or BOOTIF= (ipappend 3): $(cat /proc/cmdline)"
say "deployment $id, target $iqn"
# BOOTIF=01-52-55-00-00-00-01: the NIC that booted
mac=$(echo "${bootif#01-}" | tr '-' ':' | tr 'A-F' 'a-f')
iface=
for i in $(seq 1 100); do
  for n in /sys/class/net/*; do
    [ "$(cat "$n/address" 2>/dev/null)" = "$mac" ] && iface=${n##*/}
  done
  [ -n "$iface" ] && break
  sleep 0.1
done
[ -n "$iface" ] || fail "no NIC has the MAC $mac"
# ip=<client>:<boot server>:<gateway>:<netmask>
IFS=: read -r client server gw mask <<EOF2
$ip
EOF2
ifconfig lo 127.0.0.1 up
ifconfig "$iface" "$client" netmask "$mask" up || fail "cannot configure $iface as $client/$mask"
route add default gw "$gw" 2>/dev/null
say "$iface is $client; the deploy helper at $server:${port:-10000}"
answer=
for i in $(seq 1 30); do
  if wget -q -O /tmp/answer --post-data "i=$id&k=$key&a=$client&n=$iqn&e=" "http://$server:${port:-10000}/"; then
    answer=ok; break
  fi
  sleep 2
done
[ -n "$answer" ] || fail "the deploy helper at $server:${port:-10000} did not take the deployment"
say "the deploy helper took deployment $id; waiting for its PXE config to say default boot"
cfg="pxelinux.cfg/$(echo "01-$mac" | tr ':' '-')"
for i in $(seq 1 300); do
  rm -f /tmp/config
  if tftp -g -r "$cfg" -l /tmp/config "$server" 2>/dev/null && grep -q '^default boot' /tmp/config; then
    say "deployment $id done; rebooting"
    sleep 1
    reboot -f
  fi
  sleep 1
done
fail "the PXE config $cfg never said default boot"
INIT
  sed -i "s/for m in MODULES;/for m in $MODULES $NET_MODULES;/" "$ir/init"
  chmod 755 "$ir/init"
  (cd "$ir" && find . | sort | "$pkgs/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -9n) >"$CACHE/deploy-ramdisk.new"
  mv "$CACHE/deploy-ramdisk.new" "$CACHE/deploy-ramdisk"
}

# The instance's disk as nova baremetal's deploy left it: MBR, root (ext4, known UUID), swap, and no
# bootloader (the first 446 bytes stay zero: a BIOS that tries this disk finds nothing to run).
build_disk() {
  local pkgs=$CACHE/pkgs r=$CACHE/rootfs.d img=$CACHE/disk.new root_mib=24 swap_mib=8
  rm -rf "$r"
  mkdir -p "$r"/{bin,sbin,etc,dev,proc,sys,tmp}
  cp "$pkgs/bin/busybox" "$r/bin/busybox"
  ln -s busybox "$r/bin/sh"
  echo "$ROOT_UUID" >"$r/etc/bm2ironic-root-uuid"
  cat >"$r/sbin/init" <<INIT
#!/bin/busybox sh
# the instance: say which root file system booted (read from the disk itself), then idle like a server
/bin/busybox mount -t proc proc /proc
echo "$MARKER root=\$(/bin/busybox cat /etc/bm2ironic-root-uuid) cmdline=\$(/bin/busybox cat /proc/cmdline)"
while :; do /bin/busybox sleep 3600; done
INIT
  chmod 755 "$r/sbin/init"
  rm -f "$img" "$CACHE/root.ext4"
  truncate -s "${root_mib}M" "$CACHE/root.ext4"
  mkfs.ext4 -q -F -U "$ROOT_UUID" -L instance-root -d "$r" "$CACHE/root.ext4" "${root_mib}M"
  truncate -s $((1 + root_mib + swap_mib))M "$img"
  printf 'label: dos\nlabel-id: 0x0bae0024\nstart=1MiB, size=%dMiB, type=83\nsize=%dMiB, type=82\n' "$root_mib" "$swap_mib" |
    sfdisk -q "$img" >/dev/null
  dd if="$CACHE/root.ext4" of="$img" bs=1M seek=1 conv=notrunc,sparse status=none
  # swap, as nova baremetal made it (partition 2)
  dd if=/dev/zero of="$CACHE/swap.img" bs=1M count="$swap_mib" status=none
  chmod 600 "$CACHE/swap.img"
  mkswap -U b0071e55-0024-4b2a-9e1c-5a4b5a4b5a4b "$CACHE/swap.img" >/dev/null
  dd if="$CACHE/swap.img" of="$img" bs=1M seek=$((1 + root_mib)) conv=notrunc status=none
  rm -f "$CACHE/root.ext4" "$CACHE/swap.img"
  # no bootloader: the boot code area of the MBR (its first 440 bytes) is empty
  [ "$(head -c 440 "$img" | tr -d '\0' | wc -c)" = 0 ] || die "disk.img has boot code in its MBR"
  mv "$img" "$CACHE/disk.img"
}

# KVM or TCG for the test VMs, decided once by booting the machine for real: /dev/kvm may exist and
# create VMs yet not run firmware (a nested paravirtual KVM such as kvm_pvm hangs in iPXE or resets in a
# loop), so only a PXE boot to the instance's marker counts. BM2_BOOT_ACCEL=kvm|tcg skips the probe.
probe_accel() {
  local t rc=1 i resets
  if [ -n "${BM2_BOOT_ACCEL:-}" ]; then echo "$BM2_BOOT_ACCEL"; return; fi
  [ -r /dev/kvm ] && [ -w /dev/kvm ] || { echo tcg; return; }
  t=$(mktemp -d)
  mkdir -p "$t/tftp/pxelinux.cfg" "$t/tftp/probe"
  cp "$CACHE/pxelinux.0" "$CACHE/ldlinux.c32" "$t/tftp/"
  cp "$CACHE/vmlinuz" "$t/tftp/probe/kernel"
  cp "$CACHE/initramfs" "$t/tftp/probe/ramdisk"
  printf 'default boot\nlabel boot\nkernel probe/kernel\nappend initrd=probe/ramdisk root=UUID=%s ro console=ttyS0\n' \
    "$ROOT_UUID" >"$t/tftp/pxelinux.cfg/default"
  qemu-system-x86_64 -accel kvm -cpu host -m 256 -nographic -monitor none \
    -netdev "user,id=n0,restrict=on,tftp=$t/tftp,bootfile=pxelinux.0" -device virtio-net-pci,netdev=n0 \
    -drive "file=$CACHE/disk.img,if=virtio,format=raw,snapshot=on" -boot order=n \
    -serial "file:$t/console.log" >"$t/qemu.log" 2>&1 &
  local qemu=$!
  # a working KVM boots in a few seconds, its iPXE asks for an address within one; a firmware reset
  # loop shows SeaBIOS twice
  for i in $(seq 1 200); do
    if grep -q "$MARKER" "$t/console.log" 2>/dev/null; then rc=0; break; fi
    resets=$(grep -c SeaBIOS "$t/console.log" 2>/dev/null || true)
    [ "${resets:-0}" -lt 2 ] || break
    [ "$i" -lt 80 ] || grep -q 'Configuring (net0' "$t/console.log" || break
    kill -0 "$qemu" 2>/dev/null || break
    sleep 0.1
  done
  kill "$qemu" 2>/dev/null || true
  wait "$qemu" 2>/dev/null || true
  rm -rf "$t"
  if [ $rc = 0 ]; then echo kvm; else echo tcg; fi
}

build() {
  # the cache is this script's output: rebuilt when the script changes
  local stamp
  stamp=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)
  tools
  if [ "$(cat "$CACHE/stamp" 2>/dev/null)" != "$stamp" ] || [ ! -s "$CACHE/disk.img" ]; then
    log "building the boot test machine in $CACHE"
    rm -f "$CACHE/stamp"
    mkdir -p "$CACHE"
    ls "$CACHE"/debs/linux-image-*.deb "$CACHE"/debs/busybox-static_*.deb "$CACHE"/debs/pxelinux_*.deb \
      "$CACHE"/debs/syslinux-common_*.deb >/dev/null 2>&1 || fetch_debs
    unpack
    cp "$(echo "$CACHE"/pkgs/boot/vmlinuz-*)" "$CACHE/vmlinuz"
    cp "$CACHE/pkgs/usr/lib/PXELINUX/pxelinux.0" "$CACHE/pxelinux.0"
    cp "$CACHE/pkgs/usr/lib/syslinux/modules/bios/ldlinux.c32" "$CACHE/ldlinux.c32"
    build_initramfs
    build_deploy_ramdisk
    build_disk
    echo "$ROOT_UUID" >"$CACHE/root-uuid"
    echo "$MARKER" >"$CACHE/marker"
    rm -rf "$CACHE/pkgs" "$CACHE/initramfs.d" "$CACHE/deploy-ramdisk.d" "$CACHE/rootfs.d"
    log "probing whether KVM boots this machine (else QEMU's TCG emulation)"
    probe_accel >"$CACHE/accel"
    log "the test VMs use $(cat "$CACHE/accel")"
    echo "$stamp" >"$CACHE/stamp"
  fi
  echo "export BM2IRONIC_TEST_BOOT_DIR=$CACHE"
}

case "${1:-build}" in
  build) build ;;
  clean) rm -rf "$CACHE" ;;
  *) echo "usage: $0 [build | clean]" >&2; exit 2 ;;
esac
