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
#
# Then the nova_bm id index: the time of the first integer lookup (a scan of the NODES nodes) and
# of the next one. BENCH_TOKENS=1 adds the token cache's effect: the same list with a Keystone-validated token
# (a system-scoped admin token of the test Keystone, scripts/keystone.sh, started if not running),
# through two more proxies of the same binary, side by side: --auth keystone --token-cache-time 0
# (every request asks Keystone) on 127.0.0.1:18780 and --token-cache-time 300 on 127.0.0.1:18781.
# Prints requests/s, p50 and p99 of each, with Ironic directly and the noauth proxy beside them.
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
    curl -s "$PURL/v2.1/os-baremetal-nodes" | python3 -m json.tool | head -12 || true   # json.tool may see the pipe closed
    echo "\$ curl -si -X DELETE $PURL/v2.1/os-baremetal-nodes/$U"
    curl -si -X DELETE "$PURL/v2.1/os-baremetal-nodes/$U" | tr -d '\r'; echo
    echo "\$ curl -s $PURL/v2.1/os-baremetal-nodes/no-such-node"
    curl -s "$PURL/v2.1/os-baremetal-nodes/no-such-node"; echo
    echo "\$ curl -s $PURL/v2.1/os-baremetal-nodes/1 | python3 -m json.tool   # nova_bm id 1"
    curl -s "$PURL/v2.1/os-baremetal-nodes/1" | python3 -m json.tool
    echo "\$ curl -si -H 'OpenStack-API-Version: compute 2.36' $PURL/v2.1/os-baremetal-nodes"
    curl -si -H 'OpenStack-API-Version: compute 2.36' "$PURL/v2.1/os-baremetal-nodes" | tr -d '\r'; echo
    echo "\$ curl -s $PURL/healthz"
    curl -s "$PURL/healthz"; echo
  } >&2
fi

# the nova_bm id index: the first integer lookup scans the node list, the next ones do not
# (BENCH_INDEX_ONLY=1: stop after this line, e.g. for a large NODES)
t_ms() { curl -s -o /dev/null -w '%{http_code} %{time_total}' "$1" | awk '{ printf "%s %.1f\n", $1, $2 * 1000 }'; }
read -r C1 T1 < <(t_ms "$PURL/v2.1/os-baremetal-nodes/$N")
read -r C2 T2 < <(t_ms "$PURL/v2.1/os-baremetal-nodes/$((N - 1))")
read -r C3 T3 < <(t_ms "$PURL/v2.1/os-baremetal-nodes/$U")
[ "$C1$C2$C3" = 200200200 ] || { echo "index lookups answered $C1 $C2 $C3" >&2; exit 1; }
PAGE_B=$(curl -s -o /dev/null -w '%{size_download}' -H "X-OpenStack-Ironic-API-Version: $V" "$URL/v1/nodes?fields=uuid,extra&limit=1000")
echo "nova_bm id lookup, $N nodes: first (the index scan) $T1 ms, next $T2 ms; by uuid $T3 ms (the scan's first page: $PAGE_B bytes)"
[ "${BENCH_INDEX_ONLY:-0}" = 1 ] && exit 0

# requests/s, p50 and p99 in ms of one wrk run (URL, then extra wrk arguments)
# (one request first, unmeasured: the connection, and the token's first validation, are not in it;
# wrk corrects for coordinated omission, so one slow first request would lift p99 by itself)
run() {
  local url=$1; shift
  curl -s -o /dev/null -H "X-OpenStack-Ironic-API-Version: $V" "$@" "$url"
  wrk -t1 -c"$CONNS" -d"${SECS}s" --latency -H "X-OpenStack-Ironic-API-Version: $V" "$@" "$url" | python3 -c '
import re, sys
t = sys.stdin.read()
def ms(p):
    v, u = re.search(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % p, t, re.M).groups()
    return float(v) * {"us": 0.001, "ms": 1, "s": 1000}[u]
errs = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if errs: sys.exit("wrk saw %s error answers" % errs.group(1))
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
print("%.1f %.2f %.2f" % (rps, ms(50), ms(99)))'
}
# p50 and p99 in ms of one wrk run
lat() { run "$@" | cut -d" " -f2-; }
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

[ "${BENCH_TOKENS:-0}" = 1 ] || exit 0

# the token cache: Keystone-validated tokens, cache off and on, same Ironic, same token, same run
KS=${BM2IRONIC_TEST_KEYSTONE_URL:-http://127.0.0.1:15000/v3}
if [ "$(curl -m 2 -s -o /dev/null -w '%{http_code}' "$KS/" 2>/dev/null)" != 200 ]; then
  eval "$(scripts/keystone.sh start)"
  KS=$BM2IRONIC_TEST_KEYSTONE_URL
fi
cat >"$WORK/clouds.yaml" <<EOC
clouds:
  bench:
    auth:
      auth_url: $KS
      username: admin
      password: adminpass
      user_domain_name: Default
      system_scope: all
EOC
TOK=$(curl -si -H 'Content-Type: application/json' -d '{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "adminpass"}}}, "scope": {"system": {"all": true}}}}' "$KS/auth/tokens" | tr -d '\r' | sed -n 's/^[Xx]-[Ss]ubject-[Tt]oken: //p')
[ -n "$TOK" ] || { echo "no token from $KS" >&2; exit 1; }
OFF=$((PPORT + 1)); ON=$((PPORT + 2))
for pc in "$OFF 0" "$ON 300"; do
  set -- $pc
  OS_CLIENT_CONFIG_FILE="$WORK/clouds.yaml" setsid $BIN --log-dir "$WORK/logs" proxy --auth keystone --os-cloud bench \
    --ironic-url "$URL" --listen "127.0.0.1:$1" --token-cache-time "$2" >"$WORK/proxy-$1.out" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && break; sleep 0.1; done
done
log "token cache: Keystone $KS, proxies on :$OFF (--token-cache-time 0) and :$ON (--token-cache-time 300)"
read -r D_R D50 D99 < <(run "$URL/v1/nodes?$F&limit=1000")
read -r A_R A50 A99 < <(run "$PURL/v2.1/os-baremetal-nodes")
read -r O_R O50 O99 < <(run "http://127.0.0.1:$OFF/v2.1/os-baremetal-nodes" -H "X-Auth-Token: $TOK")
read -r C_R C50 C99 < <(run "http://127.0.0.1:$ON/v2.1/os-baremetal-nodes" -H "X-Auth-Token: $TOK")
echo
echo "| list of $N nodes, $CONNS connection(s), ${SECS} s each | requests/s | p50 (ms) | p99 (ms) |"
echo "|---|---|---|---|"
echo "| Ironic directly (no token) | $D_R | $D50 | $D99 |"
echo "| proxy, --auth noauth | $A_R | $A50 | $A99 |"
echo "| proxy, --auth keystone, --token-cache-time 0 (Keystone asked every request) | $O_R | $O50 | $O99 |"
echo "| proxy, --auth keystone, --token-cache-time 300 (cached) | $C_R | $C50 | $C99 |"
