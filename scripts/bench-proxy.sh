#!/usr/bin/env bash
# bench-proxy.sh: the latency `bm2ironic proxy` adds over calling Ironic directly, measured with wrk
# (Debian package `wrk`) on loopback. Not a test: run it by hand.
#
# Usage: scripts/bench-proxy.sh [NODES]   (default 50 migrated nodes, 2 ports each)
#        BENCH_SECS=10 BENCH_CONNS=1 BENCH_PROFILE=release (or debug) BENCH_TRANSCRIPT=1 (curl first)
#        BM2IRONIC_BIN=path: that binary instead of building one
# A real Ironic (PyPI, scripts/ironic.sh; noauth, SQLite, 127.0.0.1:6429) holding NODES nodes that
# `bm2ironic migrate` wrote, and the proxy (--auth noauth) on 127.0.0.1:18779. Two pairs, each the
# same work through both paths:
#   list: GET /v2.1/os-baremetal-nodes  vs  GET /v1/nodes?fields=uuid,provision_state,properties,instance_uuid
#   show: GET /v2.1/os-baremetal-nodes/U  (the proxy makes two calls: the node, then its ports)
#         vs  GET /v1/nodes/U?fields=...  +  GET /v1/ports?node_uuid=U&fields=uuid,address
# Prints p50 and p99 of each (wrk --latency) and the difference: what the proxy adds.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
SECS=${BENCH_SECS:-10}
CONNS=${BENCH_CONNS:-1}
PROFILE=${BENCH_PROFILE:-release}
PORT=${BM2_BENCH_IRONIC_PORT:-6429}
PPORT=${BM2_BENCH_PROXY_PORT:-18779}
command -v wrk >/dev/null || { echo "wrk not found: apt-get install -y wrk" >&2; exit 1; }
VENV=$(scripts/ironic.sh install)
WORK=$(mktemp -d /tmp/bm2ironic-bench-proxy.XXXXXX)
URL=http://127.0.0.1:$PORT
PURL=http://127.0.0.1:$PPORT
export PYTHONWARNINGS=ignore
log() { echo "[bench-proxy] $*" >&2; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; sleep 1; rm -rf "$WORK" 2>/dev/null || true; }
trap cleanup EXIT

if [ -n "${BM2IRONIC_BIN:-}" ]; then BIN=$BM2IRONIC_BIN   # a binary already built
elif [ "$PROFILE" = release ]; then cargo build -q --release --bin bm2ironic; BIN=target/release/bm2ironic
else cargo build -q --bin bm2ironic; BIN=target/debug/bm2ironic; fi

N=$N WORK=$WORK python3 - <<'PY'
import os, sqlite3
n, w = int(os.environ["N"]), os.environ["WORK"]
bm = sqlite3.connect(f"{w}/nova_bm.sqlite"); bm.executescript(open("assets/nova_bm/schema.sqlite.sql").read())
bm.execute("INSERT INTO migrate_version VALUES ('nova_bm', 'x', 10)")
for i in range(1, n + 1):
    bm.execute("INSERT INTO bm_nodes (id, uuid, service_host, cpus, memory_mb, local_gb, pm_address, pm_user, pm_password, deleted) VALUES (?,?,?,?,?,?,?,?,?,0)",
               (i, f"bbbbbbbb-0000-4000-8000-{i:012d}", "bm-compute-1", 8, 16384, 500, "127.0.0.1", "admin", "benchpw"))
    for k in (0, 1):
        bm.execute("INSERT INTO bm_interfaces (id, bm_node_id, address, deleted) VALUES (?,?,?,0)", (i * 2 - 1 + k, i, f"52:57:{k:02x}:00:{i >> 8:02x}:{i & 255:02x}"))
bm.commit()
ir = sqlite3.connect(f"{w}/ironic.sqlite"); ir.executescript(open("assets/ironic/schema-39.0.0.sqlite.sql").read()); ir.commit()
PY
$BIN --log-dir "$WORK/logs" migrate --yes --nova-bm-db "sqlite:///$WORK/nova_bm.sqlite" --ironic-db "sqlite:///$WORK/ironic.sqlite" \
  --default-arch x86_64 --deploy-kernel file:///k --deploy-ramdisk file:///r >"$WORK/migrate.out" 2>&1 || { tail -5 "$WORK/migrate.out" >&2; exit 1; }
CONF=$(BM2_IRONIC_SYNC_INTERVAL=3600 scripts/ironic.sh conf "$WORK/ironic" "sqlite:///$WORK/ironic.sqlite" "$PORT")
setsid "$VENV/bin/ironic" --config-file "$CONF" >"$WORK/ironic.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/drivers" 2>/dev/null | grep -q '"ipmi"' && break; sleep 0.2; done
setsid $BIN --log-dir "$WORK/logs" proxy --auth noauth --ironic-url "$URL" --listen "127.0.0.1:$PPORT" >"$WORK/proxy.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "$PURL/healthz" >/dev/null && break; sleep 0.1; done
U=bbbbbbbb-0000-4000-8000-000000000001
V=$(curl -s "$URL/" | python3 -c 'import json,sys; print(json.load(sys.stdin)["default_version"]["version"])')
log "Ironic $V on $URL with $N nodes; proxy ($PROFILE build) on $PURL; wrk -c$CONNS -d${SECS}s per row"

if [ "${BENCH_TRANSCRIPT:-0}" = 1 ]; then   # the curl transcript of docs/proxy.md
  {
    echo "\$ curl -s $PURL/v2.1/os-baremetal-nodes/$U | python3 -m json.tool"
    curl -s "$PURL/v2.1/os-baremetal-nodes/$U" | python3 -m json.tool
    echo "\$ curl -s $PURL/v2.1/os-baremetal-nodes | python3 -m json.tool | head -12"
    curl -s "$PURL/v2.1/os-baremetal-nodes" | python3 -m json.tool | head -12
    echo "\$ curl -si -X DELETE $PURL/v2.1/os-baremetal-nodes/$U"
    curl -si -X DELETE "$PURL/v2.1/os-baremetal-nodes/$U" | tr -d '\r'; echo
    echo "\$ curl -s $PURL/v2.1/os-baremetal-nodes/no-such-node"
    curl -s "$PURL/v2.1/os-baremetal-nodes/no-such-node"; echo
  } >&2
fi

# p50 and p99 in ms of one wrk run
lat() {
  wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "X-OpenStack-Ironic-API-Version: $V" "$1" | python3 -c '
import re, sys
t = sys.stdin.read()
def ms(p):
    v, u = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % p, t, re.M).groups()
    return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]
errs = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if errs: sys.exit("wrk saw %s error answers" % errs.group(1))
print("%.2f %.2f" % (ms(50), ms(99)))'
}
F="fields=uuid,provision_state,properties,instance_uuid"
read -r L50 L99 < <(lat "$URL/v1/nodes?$F&limit=1000")
read -r PL50 PL99 < <(lat "$PURL/v2.1/os-baremetal-nodes")
read -r N50 N99 < <(lat "$URL/v1/nodes/$U?$F")
read -r P50 P99 < <(lat "$URL/v1/ports?node_uuid=$U&fields=uuid,address&limit=1000")
read -r PS50 PS99 < <(lat "$PURL/v2.1/os-baremetal-nodes/$U")
python3 - "$L50" "$L99" "$PL50" "$PL99" "$N50" "$N99" "$P50" "$P99" "$PS50" "$PS99" "$N" "$CONNS" <<'PY'
import sys
l50, l99, pl50, pl99, n50, n99, p50, p99, ps50, ps99 = map(float, sys.argv[1:11])
n, c = sys.argv[11], sys.argv[12]
print(f"| {n} nodes, {c} connection(s) | direct p50 / p99 (ms) | through the proxy p50 / p99 (ms) | added p50 / p99 (ms) |")
print("|---|---|---|---|")
print(f"| list | {l50:.2f} / {l99:.2f} | {pl50:.2f} / {pl99:.2f} | {pl50 - l50:+.2f} / {pl99 - l99:+.2f} |")
print(f"| show (node + ports) | {n50 + p50:.2f} / {n99 + p99:.2f} | {ps50:.2f} / {ps99:.2f} | {ps50 - n50 - p50:+.2f} / {ps99 - n99 - p99:+.2f} |")
PY
