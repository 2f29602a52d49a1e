#!/usr/bin/env bash
# release-chroot.sh: the release archive installed and run in the oldest Debian userland this machine can
# build (bullseye, glibc 2.31: older suites are no longer on Debian's mirror, and no Ubuntu or CentOS
# mirror is reached here), from a fresh login shell, with README "Install"'s commands as they are written.
#
# Usage: scripts/release-chroot.sh ARCHIVE.tar.gz     (ARCHIVE.tar.gz.sha256 beside it; root)
#
# The userland is made once with debootstrap (minbase, plus man-db, bash-completion and systemd for the
# install steps; about 3 minutes, 400 MB) and kept in $BM2_CHROOT (default /tmp/bm2ironic-chroot/bullseye).
# Each run copies the archive in, runs the README's install block in `env -i bash --login -ex` (every
# command printed), then checks: the userland's glibc, --version, the man page found by `man`, the
# completion after bash-completion loads, the unit enabled, and the binary at work: `demo --no-tui`, its
# `plan` and a `migrate --rehearse` on SQLite. The chroot shares this machine's kernel (6.x): a CentOS 7
# kernel (3.10) is not what it tests.
set -euo pipefail
cd "$(dirname "$0")/.."

ARCHIVE=$(realpath "${1:?usage: scripts/release-chroot.sh ARCHIVE.tar.gz}")
SUITE=bullseye
ROOT=${BM2_CHROOT:-/tmp/bm2ironic-chroot/$SUITE}
[ "$(id -u)" = 0 ] || { echo "release-chroot.sh: chroot needs root" >&2; exit 1; }

if [ ! -x "$ROOT/usr/bin/man" ]; then
  command -v debootstrap >/dev/null || { . scripts/lib/apt.sh && apt_ensure debootstrap; }
  echo "== making a Debian $SUITE userland in $ROOT (debootstrap, about 3 minutes; kept) =="
  rm -rf "$ROOT"
  mkdir -p "$(dirname "$ROOT")"
  debootstrap --variant=minbase --include=man-db,bash-completion,systemd,ca-certificates \
    "$SUITE" "$ROOT" http://deb.debian.org/debian >/tmp/bm2ironic-debootstrap.log 2>&1 \
    || { tail -20 /tmp/bm2ironic-debootstrap.log >&2; exit 1; }
fi

# a fresh copy of what an install touches, so every run starts from the same host
rm -rf "$ROOT/root/release" "$ROOT/usr/local/bin/bm2ironic" "$ROOT/usr/local/share/man/man1/bm2ironic.1" \
  "$ROOT/etc/bash_completion.d/bm2ironic" "$ROOT/etc/systemd/system/bm2ironic-proxy.service" \
  "$ROOT/etc/systemd/system/multi-user.target.wants/bm2ironic-proxy.service" "$ROOT/tmp/"bm2ironic-*
chroot "$ROOT" sh -c 'userdel bm2ironic 2>/dev/null || true'
mkdir -p "$ROOT/root/release"
cp "$ARCHIVE" "$ARCHIVE.sha256" "$ROOT/root/release/"
name=$(basename "$ARCHIVE" .tar.gz)

# README "Install": its first sh block, with the archive's name for the placeholder. No systemd runs in
# a chroot, so `systemctl daemon-reload` has nothing to talk to: only that command is skipped (said so
# in the output); `systemctl enable` works offline and is run.
{
  echo 'systemctl() { if [ "$1" = daemon-reload ]; then echo "(in a chroot no systemd runs: daemon-reload skipped)"; else command systemctl "$@"; fi; }'
  awk '/^## Install/{f=1} f&&/^```sh$/{b=1;next} b&&/^```$/{exit} b' README.md | sed "s|^A=.*|A=$name|"
} >"$ROOT/root/release/install.sh"
grep -q '^A=' "$ROOT/root/release/install.sh" || { echo "README's Install block has no A= line" >&2; exit 1; }
cat >"$ROOT/root/release/check.sh" <<'EOF'
echo "userland: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
bm2ironic --version
man -w bm2ironic
MANWIDTH=80 man bm2ironic 2>&1 | col -bx | sed -n '1,6p'
bash --norc -c '. /usr/share/bash-completion/bash_completion && complete -p bm2ironic'
systemctl is-enabled bm2ironic-proxy
bm2ironic --log-dir /tmp/bm2ironic-log demo --no-tui --dir /tmp/bm2ironic-demo | tee /tmp/bm2ironic-demo.out
eval "$(sed -n 's/^  export /export /p' /tmp/bm2ironic-demo.out)"
# the plan options: the sandbox's bm2ironic.toml, read in its directory
cd /tmp/bm2ironic-demo
# the demo's inventory has blocking conflicts on purpose: `plan` exits 3 and names them
rc=0; bm2ironic --log-dir /tmp/bm2ironic-log plan >/tmp/bm2ironic-plan.out || rc=$?
tail -4 /tmp/bm2ironic-plan.out; echo "plan: exit $rc"; [ "$rc" = 3 ]
rc=0; bm2ironic --log-dir /tmp/bm2ironic-log migrate --rehearse --yes $RESOLVE >/tmp/bm2ironic-migrate.out 2>&1 || rc=$?
tail -6 /tmp/bm2ironic-migrate.out; echo "migrate --rehearse: exit $rc"; [ "$rc" = 0 ]
EOF

# one decision per blocking code of the demo's inventory (as docs/sample-report.md was made)
DEMO_DECISIONS="--resource-class baremetal --resolve mid-deploy=maintenance --resolve failed-deploy=maintenance
  --resolve missing-uuid=generate --resolve missing-bmc=maintenance --resolve duplicate-mac=skip-port
  --resolve invalid-mac=skip-port --resolve instance-missing-in-nova=free"
mounted=
cleanup() { [ -z "$mounted" ] || umount "$ROOT/proc" || true; }
trap cleanup EXIT
mount -t proc proc "$ROOT/proc" && mounted=1
env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  chroot "$ROOT" bash --login -e -c 'cd /root/release && echo "== README Install, in $PWD ==" && bash -ex install.sh'
echo "== checks in the $SUITE userland =="
env -i HOME=/root TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  RESOLVE="$DEMO_DECISIONS" chroot "$ROOT" bash --login -c "bash -ex /root/release/check.sh"
echo "== release-chroot: passed in Debian $SUITE =="
