# scripts/lib/apt.sh (sourced): the one way the project's scripts install Debian packages.
#
# Why one way: apt takes two locks (dpkg's, which `-o DPkg::Lock::Timeout` waits for, and the package
# lists' lock, which nothing waits for), so two scripts that run `apt-get update` at once fail with
# "Could not get lock /var/lib/apt/lists/lock". Every install and update here goes through one flock of
# our own, and an update retries while an apt from outside (unattended-upgrades at boot) holds the lists.
# scripts/test.sh installs every package the tests need up front (`scripts/packages.sh`), so the set-ups
# it starts in the background find them installed and never call apt; run alone, each script still
# installs what it lacks, through the same lock.

APT_LOCK=${BM2_APT_LOCK:-/tmp/bm2ironic-apt.lock}

# Every Debian package the tests need (scripts/test.sh), with what needs it.
TEST_PACKAGES=(
  tmux                                  # the wizard's end-to-end tests run the binary in tmux
  mariadb-server mariadb-client         # test-services.sh, galera.sh (wsrep_sst_rsync is in mariadb-server)
  postgresql postgresql-client          # test-services.sh
  galera-4 rsync iproute2               # galera.sh: the provider, its rsync SST, and ss (the SST's port)
  ipmitool                              # ironic.sh: the ipmi hardware type refuses to load without it
  qemu-system-x86 ipxe-qemu fdisk e2fsprogs   # bootvm.sh: the PXE-booted machine, its NIC ROM, the disk
  qemu-utils                            # juno.sh: Juno's pxe driver runs qemu-img on every image
  man-db                                # release:: renders the man page with `man -l`
  mmdebstrap zstd cpio                  # ipa-ramdisk.sh: the deploy ramdisk's Debian root, packed
  dosfstools mtools syslinux syslinux-common  # ipa-ramdisk.sh: the whole-disk images (FAT, syslinux, MBR)
)

# The packages of "$@" that are not installed, one a line.
apt_missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' ok installed$' || echo "$p"
  done
}

# apt-get update, retried while another apt holds the lists' lock (up to 10 minutes). Call under the lock.
_apt_update_locked() {
  local i out
  for i in $(seq 1 200); do
    if out=$(apt-get -o DPkg::Lock::Timeout=600 update -q 2>&1); then return 0; fi
    if ! grep -q 'Could not get lock\|Unable to lock' <<<"$out"; then
      echo "$out" | tail -5 >&2
      return 1
    fi
    [ "$i" = 1 ] && echo "[apt] another apt holds the package lists; waiting for it" >&2
    sleep 3
  done
  echo "[apt] the package lists stayed locked for 10 minutes: $(grep -m1 'lock' <<<"$out")" >&2
  return 1
}

# Refresh the package lists under the project's lock (for `apt-get download`, `apt-cache`).
apt_update() {
  (
    flock -w 900 9 || { echo "[apt] waited 15 minutes for $APT_LOCK" >&2; exit 1; }
    _apt_update_locked
  ) 9>"$APT_LOCK"
}

# Install those of "$@" that are missing (no recommends), under the project's lock. Quiet on success.
apt_ensure() {
  [ -n "$(apt_missing "$@")" ] || return 0
  (
    flock -w 900 9 || { echo "[apt] waited 15 minutes for $APT_LOCK" >&2; exit 1; }
    mapfile -t need < <(apt_missing "$@")   # again: another script may have installed them meanwhile
    [ ${#need[@]} -gt 0 ] || exit 0
    echo "[apt] installing ${need[*]}" >&2
    _apt_update_locked || exit 1
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
      --no-install-recommends "${need[@]}" >/tmp/bm2ironic-apt.log 2>&1 \
      || { tail -20 /tmp/bm2ironic-apt.log >&2; echo "[apt] installing ${need[*]} failed" >&2; exit 1; }
  ) 9>"$APT_LOCK"
}
