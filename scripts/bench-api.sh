#!/usr/bin/env bash
# bench-api.sh: nodes per second through Ironic's REST API (enroll, ports, manage, adopt/provide),
# `bm2ironic migrate --via api` at concurrency 1, 4 and 16, against a shell loop of
# `openstack baremetal node create / [node set] / port create / manage / adopt|provide` (PyPI
# python-openstackclient + python-ironicclient) on the same nodes. Not a test: run it by hand.
#
# Usage: scripts/bench-api.sh [NODES]    (default 100; every 3rd node holds an instance -> adopt)
#        BENCH_LOOP=0 scripts/bench-api.sh   the tool only (the loop takes about 15 s per node)
# Needs the Ironic venv of scripts/ironic.sh (installed if missing); installs the client venv in
# $BM2_OSC_VENV (/tmp/bm2ironic-osc-venv). Everything runs on 127.0.0.1: a real Ironic (noauth,
# SQLite, port 6420) and fake BMCs on 127.0.1.x:623 (BMCS of them, default one per two nodes: Ironic
# spaces the IPMI commands to one BMC address by a second, so fewer BMCs would measure that instead).
# The tool's binary is the debug build (its own CPU time is negligible next to Ironic's).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
BMCS=${BMCS:-$(( (N + 1) / 2 ))}
PORT=${BM2_BENCH_PORT:-6420}
OSC=${BM2_OSC_VENV:-/tmp/bm2ironic-osc-venv}
VENV=$(scripts/ironic.sh install)
WORK=$(mktemp -d /tmp/bm2ironic-bench.XXXXXX)
URL=http://127.0.0.1:$PORT
export PYTHONWARNINGS=ignore
log() { echo "[bench] $*" >&2; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; sleep 2; rm -rf "$WORK" 2>/dev/null || true; }
trap cleanup EXIT

if [ ! -x "$OSC/bin/openstack" ]; then
  log "installing python-openstackclient + python-ironicclient into $OSC (about a minute)"
  python3 -m venv "$OSC"
  "$OSC/bin/pip" install -q --disable-pip-version-check python-openstackclient python-ironicclient
fi
cargo build -q --bin bm2ironic
BIN=target/debug/bm2ironic
touch "$WORK/deploy.kernel" "$WORK/deploy.initramfs" "$WORK/image.qcow2"

# nova_bm (N nodes, 2 NICs each), Nova (the instances' images), an empty Ironic 39.0.0 schema
N=$N BMCS=$BMCS WORK=$WORK python3 - <<'PY'
import os, sqlite3
n, w, bmcs = int(os.environ["N"]), os.environ["WORK"], int(os.environ["BMCS"])
bm = sqlite3.connect(f"{w}/nova_bm.sqlite"); bm.executescript(open("assets/nova_bm/schema.sqlite.sql").read())
bm.execute("INSERT INTO migrate_version VALUES ('nova_bm', 'x', 10)")
nova = sqlite3.connect(f"{w}/nova.sqlite")
nova.executescript("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER);"
                   "CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)")
with open(f"{w}/nodes.tsv", "w") as out:
    for i in range(1, n + 1):
        uuid, inst = f"bbbbbbbb-0000-4000-8000-{i:012d}", (f"aaaaaaaa-0000-4000-8000-{i:012d}" if i % 3 == 0 else None)
        bmc = f"127.0.1.{i % bmcs + 1}"
        bm.execute("INSERT INTO bm_nodes (id, uuid, service_host, cpus, memory_mb, local_gb, pm_address, pm_user, pm_password, deleted, task_state, instance_uuid, root_mb, swap_mb, ephemeral_mb) VALUES (?,?,?,?,?,?,?,?,?,0,?,?,?,?,?)",
                   (i, uuid, "bm-compute-1", 8, 16384, 500, bmc, "admin", "benchpw", "active" if inst else None, inst, 20480 if inst else None, 0, 0))
        macs = [f"52:56:{k:02x}:00:{i >> 8:02x}:{i & 255:02x}" for k in (0, 1)]
        for k, mac in enumerate(macs):
            bm.execute("INSERT INTO bm_interfaces (id, bm_node_id, address, deleted, vif_uuid) VALUES (?,?,?,0,?)",
                       (i * 2 - 1 + k, i, mac, f"cccccccc-0000-4000-8000-{i * 2 + k:012d}" if inst else None))
        if inst:
            nova.execute("INSERT INTO instances VALUES (?,?,?,20,0,?,'bm-compute-1','active',1,0)", (i, inst, f"file://{w}/image.qcow2", uuid))
        out.write("\t".join([uuid, bmc, inst or "-", macs[0], macs[1]]) + "\n")
bm.commit(); nova.commit()
ir = sqlite3.connect(f"{w}/ironic.sqlite"); ir.executescript(open("assets/ironic/schema-39.0.0.sqlite.sql").read()); ir.commit()
PY

for k in $(seq 1 "$BMCS"); do
  setsid "$VENV/bin/python" scripts/fakebmc.py 623 admin benchpw "127.0.1.$k" >"$WORK/bmc$k.log" 2>&1 &
  PIDS+=($!)
done
CONF=$(BM2_IRONIC_SYNC_INTERVAL=3600 scripts/ironic.sh conf "$WORK/ironic" "sqlite:///$WORK/ironic.sqlite" "$PORT")
setsid "$VENV/bin/ironic" --config-file "$CONF" >"$WORK/ironic.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/drivers" 2>/dev/null | grep -q '"ipmi"' && break; sleep 0.2; done
log "Ironic up on $URL; $N nodes ($(( N / 3 )) with an instance: adopt; the others: provide)"

export BM2IRONIC_NOVA_BM_DB="sqlite:///$WORK/nova_bm.sqlite" BM2IRONIC_NOVA_DB="sqlite:///$WORK/nova.sqlite"
export BM2IRONIC_IRONIC_URL=$URL BM2IRONIC_STATE_DIR=$WORK/runs
# the instances' next boot is not learned here (no TFTP tree): `local-boot` keeps the nodes as the
# loop below creates them (no ramdisk deploy); scripts/bench-api-scale.sh measures the learned boot
ARGS=(--via api --yes --default-arch x86_64 --resource-class baremetal --resolve unknown-boot=local-boot
      --deploy-kernel "file://$WORK/deploy.kernel" --deploy-ramdisk "file://$WORK/deploy.initramfs")
count() { curl -s -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/nodes?fields=provision_state" | python3 -c 'import json,sys; d=json.load(sys.stdin)["nodes"]; print(sum(n["provision_state"] in ("active","available") for n in d))'; }
declare -A RATE SECS
for c in 1 4 16; do
  t0=$(date +%s.%N)
  $BIN --log-dir "$WORK/logs" migrate "${ARGS[@]}" --concurrency "$c" >"$WORK/migrate$c.out" 2>&1 || { tail -5 "$WORK/migrate$c.out" >&2; exit 1; }
  t1=$(date +%s.%N)
  done_n=$(count)
  RATE[$c]=$(python3 -c "print(f'{$done_n / ($t1 - $t0):.3f} nodes/s ({$done_n} nodes in {$t1 - $t0:.1f} s)')")
  SECS[$c]=$(python3 -c "print($t1 - $t0)")
  log "bm2ironic --concurrency $c: ${RATE[$c]}"
  env -u BM2IRONIC_NOVA_DB $BIN --log-dir "$WORK/logs" rollback --yes >/dev/null
  [ "$(count)" = 0 ] || { log "rollback left nodes behind"; exit 1; }
done

if [ "${BENCH_LOOP:-1}" = 0 ]; then
  for c in 1 4 16; do echo "| bm2ironic migrate --via api --concurrency $c | ${RATE[$c]} |"; done
  exit 0
fi
# the same nodes, one openstack command after another (as a shell loop would)
os() { "$OSC/bin/openstack" --os-auth-type none --os-endpoint "$URL" --os-baremetal-api-version 1.115 baremetal "$@" >/dev/null; }
t0=$(date +%s.%N)
while IFS=$'\t' read -r uuid bmc inst mac0 mac1; do
  os node create --driver ipmi --uuid "$uuid" --resource-class baremetal \
    --driver-info ipmi_address="$bmc" --driver-info ipmi_username=admin --driver-info ipmi_password=benchpw \
    --driver-info deploy_kernel="file://$WORK/deploy.kernel" --driver-info deploy_ramdisk="file://$WORK/deploy.initramfs" \
    --property cpus=8 --property memory_mb=16384 --property local_gb=500 --property cpu_arch=x86_64
  if [ "$inst" != - ]; then   # node create takes no instance: one more command
    os node set "$uuid" --instance-uuid "$inst" --instance-info "image_source=file://$WORK/image.qcow2" --instance-info root_gb=20
  fi
  os port create "$mac0" --node "$uuid"
  os port create "$mac1" --node "$uuid"
  os node manage "$uuid" --wait 300
  if [ "$inst" != - ]; then os node adopt "$uuid" --wait 300; else os node provide "$uuid" --wait 300; fi
done <"$WORK/nodes.tsv"
t1=$(date +%s.%N)
done_n=$(count)
LOOP=$(python3 -c "print(f'{$done_n / ($t1 - $t0):.3f} nodes/s ({$done_n} nodes in {$t1 - $t0:.1f} s)')")
LOOP_SECS=$(python3 -c "print($t1 - $t0)")
log "openstack loop: $LOOP"

echo
echo "| path ($N nodes, Ironic 39.0.0 on SQLite, $BMCS fake BMCs, 2 cores) | rate | vs the loop |"
echo "|---|---|---|"
for c in 1 4 16; do
  echo "| bm2ironic migrate --via api --concurrency $c | ${RATE[$c]} | $(python3 -c "print(f'{$LOOP_SECS / ${SECS[$c]}:.1f}x')") |"
done
echo "| shell loop of openstack baremetal node create / [node set] / port create / manage / adopt or provide | $LOOP | 1x |"
