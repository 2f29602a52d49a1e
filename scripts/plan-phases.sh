#!/usr/bin/env bash
# plan-phases.sh: where one `bm2ironic plan` spends its time, from its own audit log's timestamps.
# Not a test, not the benchmark (scripts/bench.sh is): a tool for comparing two binaries by hand,
# taking turns, e.g. while trying a change to the plan's reading or planning.
#
# Usage: scripts/plan-phases.sh BIN TFTP_DIR [cold]
#   with BM2IRONIC_NOVA_BM_DB and BM2IRONIC_IRONIC_DB set (URLs; from the environment, not argv)
#   cold: `sync` and the page cache dropped first (as root); the database servers are left as they are
#
# Prints one line: milliseconds since the command started at which nova_bm's schema was checked,
# the first 1,000 nodes were read, the whole inventory was read, the TFTP trees were read, the plan
# was computed and the command finished; then wall, user and system seconds and peak RSS (KB).
#
# The fixture: target/release/examples/bench_fixture 100000 "$BM2IRONIC_NOVA_BM_DB" TFTP_DIR
# (an empty database first; an Ironic schema in BM2IRONIC_IRONIC_DB, see scripts/ironic-schemas.sh).
set -euo pipefail
BIN=${1:?usage: plan-phases.sh BIN TFTP_DIR [cold]}
TFTP=${2:?usage: plan-phases.sh BIN TFTP_DIR [cold]}
: "${BM2IRONIC_NOVA_BM_DB:?set BM2IRONIC_NOVA_BM_DB}" "${BM2IRONIC_IRONIC_DB:?set BM2IRONIC_IRONIC_DB}"
export BM2IRONIC_NOVA_BM_DB BM2IRONIC_IRONIC_DB
WORK=$(mktemp -d /tmp/bm2ironic-phases.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
if [ "${3:-}" = cold ]; then
  sync
  echo 3 > /proc/sys/vm/drop_caches || { echo "plan-phases.sh: cannot drop the page cache (not root?)" >&2; exit 1; }
fi
/usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$BIN" --log-dir "$WORK/logs" plan --default-arch x86_64 \
  --deploy-kernel file:///var/lib/ironic/deploy.kernel --deploy-ramdisk file:///var/lib/ironic/deploy.initramfs \
  --tftp-root "$TFTP" > "$WORK/out" 2> "$WORK/err" || { echo "plan failed:" >&2; tail -5 "$WORK/err" >&2; exit 1; }
grep -hE "command started|schema checked|rows=1000 |read nova_bm inventory|read the TFTP|plan computed|command finished" \
  "$WORK"/logs/* | awk '
    { split($1, d, "T"); split(d[2], t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (NR == 1) s0 = s; else printf "%5.0f ", (s - s0) * 1000 }'
echo "| $(cat "$WORK/time")"
