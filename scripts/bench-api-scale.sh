#!/usr/bin/env bash
# bench-api-scale.sh: `bm2ironic migrate --via api` at 1,000 nodes against the real Ironic 39 on MariaDB,
# one fake BMC per node, and where the time goes. Not a test: run it by hand on a quiet machine.
#
# Usage: scripts/bench-api-scale.sh [NODES]        (default 1000; every 3rd node holds an instance -> adopt)
#   BENCH_IRONIC="aio split split2"   the Ironic layouts to measure, each on a fresh database (default all three):
#       aio    the single `ironic` process (API embedded in the conductor: one Python process)
#       split  `ironic-api` (BENCH_API_WORKERS, default 1: Ironic 39's cheroot server does not share its
#              port, so a second worker crash-loops on "Address already in use") + `ironic-conductor`,
#              over JSON-RPC
#       split2 the same with two `ironic-conductor`s (each its own JSON-RPC port, which Ironic 39 appends
#              to the host name it registers; Ironic's hash ring gives each about half of the nodes)
#   BENCH_CONCURRENCY="16 32"  bm2ironic's --concurrency values (each run rolled back before the next)
#   BENCH_BINS="before=/path/to/old/bm2ironic"   other builds to measure side by side, each LABEL=PATH,
#                              each run in turn against the same Ironic (default: this tree's debug build
#                              alone, labelled "this"; "this" may be named in the list)
#   BENCH_IPMI_INTERVAL=5      [ipmi] min_command_interval (Ironic's default; it spaces commands to one
#                              BMC address, so with a BMC per node it only spaces a node's own commands)
# The other Ironic settings sized for the job (each printed with the results): [conductor]
# workers_pool_size 300 (the default: more threads than nodes in flight), sync_power_state_interval -1
# (no periodic power sync competing during the load), automated_clean false (free nodes go
# manageable -> available without a deploy ramdisk), [database] max_pool_size 20 + max_overflow 40
# (the default 5 + 50 queues at 32 nodes in flight), debug false.
#
# What is measured per run: the wall time and nodes/s; bm2ironic's own `timings` event (the time of each
# kind of request as the client saw it, and its waits for the conductor); the conductor's own time per
# node from Ironic's log (enroll -> manageable: the power credentials checked through the BMC;
# adopting; cleaning -> available); the waits minus the conductor's time = the polling's lag; and the
# CPU seconds of each process (Ironic's API and conductor with their ipmitool children, the fake BMCs,
# MariaDB, bm2ironic) from /proc: on 2 cores the CPU answers "what is the limit".
# Needs: the Ironic venv (scripts/ironic.sh install), MariaDB (the test services' BM2IRONIC_TEST_MYSQL_ADMIN,
# or scripts/test-services.sh is started), ipmitool. Uses 127.1.0.1-127.1.3.x:623 (no other test uses 127.1.x.x) and ports 6490-6492.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
LAYOUTS=${BENCH_IRONIC:-aio split split2}
CONCURRENCY=${BENCH_CONCURRENCY:-16 32}
IPMI_INTERVAL=${BENCH_IPMI_INTERVAL:-5}
API_WORKERS=${BENCH_API_WORKERS:-1}
PORT=6490
RPC_PORT=6491
VENV=$(scripts/ironic.sh install)
WORK=$(mktemp -d /tmp/bm2ironic-bench-scale.XXXXXX)
URL=http://127.0.0.1:$PORT
export PYTHONWARNINGS=ignore
log() { echo "[bench] $*" >&2; }
PIDS=()
stop_pids() { local p; for p in "$@"; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; }
cleanup() {
  stop_pids "${PIDS[@]}"; sleep 1
  for d in $(my -N -e "SHOW DATABASES LIKE 'bench\\_scale\\_%'" 2>/dev/null); do my -e "DROP DATABASE \`$d\`" || true; done
  [ -n "${BENCH_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

if [ -z "${BM2IRONIC_TEST_MYSQL_ADMIN:-}" ]; then eval "$(scripts/test-services.sh start)"; fi
read -r MY_USER MY_PASS MY_HOST MY_PORT < <(python3 -c "
import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(p.username, u.unquote(p.password or ''), p.hostname, p.port or 3306)" "$BM2IRONIC_TEST_MYSQL_ADMIN")
printf '[client]\nuser=%s\npassword=%s\nhost=%s\nport=%s\n' "$MY_USER" "$MY_PASS" "$MY_HOST" "$MY_PORT" > "$WORK/my.cnf"
chmod 600 "$WORK/my.cnf"
my() { mariadb --defaults-extra-file="$WORK/my.cnf" "$@"; }
MYSQLD_PID=$(pgrep -o -x mariadbd || pgrep -o -x mysqld || echo "")

cargo build -q --bin bm2ironic
BIN=${CARGO_TARGET_DIR:-target}/debug/bm2ironic   # the debug build: its CPU time is measured below
BINS=${BENCH_BINS:-this}
touch "$WORK/deploy.kernel" "$WORK/deploy.initramfs" "$WORK/image.qcow2"

# nova_bm (N nodes, 2 NICs each, a BMC address each) and Nova (the instances' images) on SQLite: the
# source is read once and fast; the target is what is measured
N=$N WORK=$WORK python3 - <<'PY'
import ipaddress, os, sqlite3
n, w = int(os.environ["N"]), os.environ["WORK"]
bm = sqlite3.connect(f"{w}/nova_bm.sqlite"); bm.executescript(open("assets/nova_bm/schema.sqlite.sql").read())
bm.execute("INSERT INTO migrate_version VALUES ('nova_bm', 'x', 10)")
nova = sqlite3.connect(f"{w}/nova.sqlite")
nova.executescript("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER);"
                   "CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)")
a, addrs = ipaddress.IPv4Address("127.1.0.1"), []
while len(addrs) < n:
    if str(a).split(".")[-1] not in ("0", "255"): addrs.append(str(a))
    a += 1
for i in range(1, n + 1):
    uuid, inst = f"bbbbbbbb-0000-4000-8000-{i:012d}", (f"aaaaaaaa-0000-4000-8000-{i:012d}" if i % 3 == 0 else None)
    bm.execute("INSERT INTO bm_nodes (id, uuid, service_host, cpus, memory_mb, local_gb, pm_address, pm_user, pm_password, deleted, task_state, instance_uuid, root_mb, swap_mb, ephemeral_mb) VALUES (?,?,?,?,?,?,?,?,?,0,?,?,?,?,?)",
               (i, uuid, "bm-compute-1", 8, 16384, 500, addrs[i - 1], "admin", "benchpw", "active" if inst else None, inst, 20480 if inst else None, 0, 0))
    for k in (0, 1):
        bm.execute("INSERT INTO bm_interfaces (id, bm_node_id, address, deleted, vif_uuid) VALUES (?,?,?,0,?)",
                   (i * 2 - 1 + k, i, f"52:56:{k:02x}:00:{i >> 8:02x}:{i & 255:02x}", f"cccccccc-0000-4000-8000-{i * 2 + k:012d}" if inst else None))
    if inst:
        nova.execute("INSERT INTO instances VALUES (?,?,?,20,0,?,'bm-compute-1','active',1,0)", (i, inst, f"file://{w}/image.qcow2", uuid))
        # the instance's next boot as nova baremetal left it (docs/mapping.md, "The next boot"): its
        # PXE config and kernel/ramdisk; Ironic's ramdisk deploy copies them on the adopt
        d = f"{w}/tftpboot/{inst}"
        os.makedirs(d)
        open(f"{d}/kernel", "w").write("kernel\n"); open(f"{d}/ramdisk", "w").write("ramdisk\n")
        open(f"{d}/config", "w").write(
            f"default boot\n\nlabel deploy\nkernel {d}/deploy_kernel\nappend initrd={d}/deploy_ramdisk selinux=0 troubleshoot=0 nofb\nipappend 3\n\n\n"
            f"label boot\nkernel {d}/kernel\nappend initrd={d}/ramdisk root=UUID=dddddddd-0000-4000-8000-{i:012d} ro nofb\n")
bm.commit(); nova.commit()
PY

# one BMC per node, 250 to a process (pyghmi select()s its sockets); started afresh for each run, so
# that no run inherits the BMC sessions of the one before (a second run on the same BMCs saw IPMI
# sessions fail: "Unable to establish IPMI v2 / RMCP+ session")
start_bmcs() {
  BMC_PIDS=()
  left=$N; first=127.1.0.1
  while [ "$left" -gt 0 ]; do
    k=$(( left < 250 ? left : 250 ))
    setsid "$VENV/bin/python" scripts/fakebmcs.py "$first" "$k" admin benchpw >"$WORK/bmcs-$first.log" 2>&1 &
    PIDS+=($!); BMC_PIDS+=($!)
    first=$(python3 -c "
import ipaddress, sys
a, k = ipaddress.IPv4Address(sys.argv[1]), int(sys.argv[2])
while k:
    if str(a).split('.')[-1] not in ('0', '255'): k -= 1
    a += 1
print(a)" "$first" "$k")
    left=$(( left - k ))
  done
  for _ in $(seq 100); do IPMI_PASSWORD=benchpw ipmitool -I lanplus -H 127.1.0.1 -U admin -E -N 1 -R 1 power status >/dev/null 2>&1 && break; sleep 0.2; done
  sleep 1
  for p in "${BMC_PIDS[@]}"; do
    kill -0 "$p" 2>/dev/null || { cat "$WORK"/bmcs-*.log >&2; log "a fake BMC process died (an address in use?)"; exit 1; }
  done
}
stop_bmcs() { stop_pids "${BMC_PIDS[@]}"; BMC_PIDS=(); sleep 1; }

# CPU seconds (user + system, with waited-for children: ipmitool) of process trees
cpu() {   # pids... -> seconds
  python3 - "$@" <<'PY'
import os, sys
hz = os.sysconf("SC_CLK_TCK")
kids = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try: ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError: continue
        kids.setdefault(ppid, []).append(int(p))
def tree(p):
    yield p
    for c in kids.get(p, []): yield from tree(c)
t = 0
for root in map(int, sys.argv[1:]):
    for p in tree(root):
        try: f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError: continue
        t += sum(int(x) for x in f[11:15])
print(f"{t / hz:.1f}")
PY
}

ARGS=(--via api --yes --json --default-arch x86_64 --resource-class baremetal --tftp-root "$WORK/tftpboot"
      --deploy-kernel "file://$WORK/deploy.kernel" --deploy-ramdisk "file://$WORK/deploy.initramfs")
RESULTS=()
for layout in $LAYOUTS; do
  db=bench_scale_$layout
  my -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db CHARACTER SET utf8mb3"
  dburl="mysql+pymysql://$MY_USER:$MY_PASS@$MY_HOST:$MY_PORT/$db?charset=utf8"
  dir=$WORK/ironic-$layout
  # file:// images Ironic may read: the instances' kernels and ramdisks only (an allowed file://
  # image_source makes Ironic 39's adopt fail: docs/api-and-keystone.md)
  BM2_IRONIC_SYNC_INTERVAL=-1 BM2_IRONIC_IPMI_INTERVAL=$IPMI_INTERVAL BM2_IRONIC_IPMI_RETRY=60 BM2_IRONIC_FILE_PATHS=$WORK/tftpboot \
    scripts/ironic.sh conf "$dir" "$dburl" "$PORT" >/dev/null
  # the settings sized for the job: a second config file, read after ironic.sh's (later files win)
  cat > "$dir/bench.conf" <<CONF
[DEFAULT]
debug = false
host = 127.0.0.1
$([ "$layout" != aio ] && echo "rpc_transport = json-rpc")

[api]
api_workers = $API_WORKERS

[conductor]
workers_pool_size = 300
sync_power_state_interval = -1
automated_clean = false

[database]
max_pool_size = 20
max_overflow = 40

[json_rpc]
auth_strategy = noauth
host_ip = 127.0.0.1
port = $RPC_PORT
CONF
  "$VENV/bin/ironic-dbsync" --config-file "$dir/ironic.conf" upgrade >"$dir/dbsync.log" 2>&1
  IRONIC_PIDS=()
  if [ "$layout" = aio ]; then
    setsid "$VENV/bin/ironic" --config-file "$dir/ironic.conf" --config-file "$dir/bench.conf" >"$dir/ironic.out" 2>&1 &
    PIDS+=($!); IRONIC_PIDS+=($!)
  else
    conductors=1; [ "$layout" != split2 ] || conductors=2
    for k in $(seq 1 "$conductors"); do
      # each conductor its own JSON-RPC port: Ironic 39 registers it as `host:port` (a port other than
      # 8089 is appended to [DEFAULT]host), the API reaches it there, and the hash ring spreads the
      # nodes over the conductors
      printf '[json_rpc]\nport = %s\n' $((RPC_PORT + k - 1)) > "$dir/cond$k.conf"
      setsid "$VENV/bin/ironic-conductor" --config-file "$dir/ironic.conf" --config-file "$dir/bench.conf" \
        --config-file "$dir/cond$k.conf" >"$dir/conductor$k.out" 2>&1 &
      PIDS+=($!); IRONIC_PIDS+=($!)
    done
    setsid "$VENV/bin/ironic-api" --config-file "$dir/ironic.conf" --config-file "$dir/bench.conf" >"$dir/api.out" 2>&1 &
    PIDS+=($!); IRONIC_PIDS+=($!)
  fi
  for _ in $(seq 1 300); do curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/drivers" 2>/dev/null | grep -q '"ipmi"' && break; sleep 0.2; done
  curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/drivers" | grep -q '"ipmi"' || { tail -20 "$dir"/*.out "$dir/ironic.log" >&2; exit 1; }
  if [ "$layout" = split2 ]; then
    # both conductors registered (the API lists a driver's hosts) before the nodes are spread
    for _ in $(seq 1 150); do
      [ "$(curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/drivers/ipmi" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["hosts"]))')" = 2 ] && break
      sleep 0.2
    done
    log "conductors: $(curl -sf -H 'X-OpenStack-Ironic-API-Version: latest' "$URL/v1/conductors" | python3 -c 'import json,sys; print(", ".join(c["hostname"] for c in json.load(sys.stdin)["conductors"]))')"
  fi
  log "Ironic ($layout) up on $URL: $N nodes, $(( N / 3 )) with an instance (adopt), the others provide"

  for c in $CONCURRENCY; do
  for lb in $BINS; do
    label=${lb%%=*}; bin=${lb#*=}; [ "$lb" != this ] || bin=$BIN
    run=$layout-$c-$label
    start_bmcs
    : > "$dir/ironic.log"
    c0=$(cpu "${IRONIC_PIDS[@]}"); b0=$(cpu "${BMC_PIDS[@]}"); m0=$([ -n "$MYSQLD_PID" ] && cpu "$MYSQLD_PID" || echo 0)
    t0=$(date +%s.%N)
    rc=0
    /usr/bin/time -f '%U %S' -o "$WORK/bm.cpu" env BM2IRONIC_NOVA_BM_DB="sqlite:///$WORK/nova_bm.sqlite" BM2IRONIC_NOVA_DB="sqlite:///$WORK/nova.sqlite" \
      BM2IRONIC_IRONIC_URL=$URL BM2IRONIC_STATE_DIR=$WORK/runs-$run \
      "$bin" --log-dir "$WORK/logs" migrate "${ARGS[@]}" --concurrency "$c" >"$WORK/migrate-$run.json" 2>"$WORK/migrate-$run.err" || rc=$?
    t1=$(date +%s.%N)
    c1=$(cpu "${IRONIC_PIDS[@]}"); b1=$(cpu "${BMC_PIDS[@]}"); m1=$([ -n "$MYSQLD_PID" ] && cpu "$MYSQLD_PID" || echo 0)
    [ "$rc" = 0 ] || { tail -5 "$WORK/migrate-$run.err" >&2; log "migrate exit $rc"; exit 1; }
    row=$(python3 - "$WORK/migrate-$run.json" "$dir/ironic.log" "$t0" "$t1" "$c0" "$c1" "$b0" "$b1" "$m0" "$m1" "$(cat "$WORK/bm.cpu")" "$layout" "$c" "$N" "$label" <<'PY'
import datetime, json, re, sys
(js, ilog, t0, t1, c0, c1, b0, b1, m0, m1, bm, layout, c, n, label) = sys.argv[1:]
wall = float(t1) - float(t0)
calls, summary = [], {}
for line in open(js):
    try: ev = json.loads(line)
    except ValueError: continue
    if ev.get("event") == "timings": calls = ev["calls"]
    if ev.get("event") == "summary": summary = ev
done = summary.get("created", 0)
# the conductor's own time per node, from its log: state entered -> state left
rx = re.compile(r"^(\S+ \S+) .*Node (\S+) moved to provision state \"([^\"]+)\" from state \"([^\"]+)\"")
entered, spent = {}, {}
for line in open(ilog, errors="replace"):
    m = rx.match(line)
    if not m: continue
    ts = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
    node, new, old = m.group(2), m.group(3), m.group(4)
    if (node, old) in entered:
        spent.setdefault(old, []).append(ts - entered.pop((node, old)))
    entered[(node, new)] = ts
# only the states the conductor works in (verifying, adopting, cleaning): a node resting in
# `manageable` waits for bm2ironic's next request, which is the polling's lag
spent = {k: v for k, v in spent.items() if k.endswith("ing")}
cond = {k: sum(v) for k, v in spent.items()}
api = sum(t["total_ms"] for t in calls if not t["kind"].startswith("wait")) / 1000
waits = sum(t["total_ms"] for t in calls if t["kind"].startswith("wait")) / 1000
cond_total = sum(cond.values())
bm_u, bm_s = map(float, bm.split())
out = {
  "layout": layout, "concurrency": int(c), "build": label, "nodes": done, "wall_s": wall, "rate": done / wall,
  "per_hour": done / wall * 3600,
  "api_s": api, "api_calls": sum(t["count"] for t in calls if not t["kind"].startswith("wait")),
  "wait_s": waits, "conductor_s": cond_total, "lag_s": waits - cond_total,
  "conductor": {k: (len(spent[k]), sum(spent[k]) / len(spent[k])) for k in spent},
  "cpu": {"ironic": float(c1) - float(c0), "bmcs": float(b1) - float(b0), "mariadb": float(m1) - float(m0), "bm2ironic": bm_u + bm_s},
  "calls": calls,
}
print(json.dumps(out))
PY
)
    RESULTS+=("$row")
    log "$layout --concurrency $c, $label: $(python3 -c "import json,sys; r=json.loads(sys.argv[1]); print(f\"{r['rate']:.2f} nodes/s ({r['nodes']} in {r['wall_s']:.0f} s)\")" "$row")"
    # which conductor did each node's work (the hash ring's spread, with two conductors): the process
    # id on the log lines of the last transition (Ironic's list API does not return the conductor)
    log "nodes finished per conductor process: $(awk '/moved to provision state "(active|available)" from state "(adopting|cleaning)"/ {print "pid " $3}' \
      "$dir/ironic.log" | sort | uniq -c | awk '{printf "%s%s %s: %s", sep, $2, $3, $1; sep=", "}')"
    env -u BM2IRONIC_NOVA_DB BM2IRONIC_NOVA_BM_DB="sqlite:///$WORK/nova_bm.sqlite" BM2IRONIC_IRONIC_URL=$URL \
      BM2IRONIC_STATE_DIR=$WORK/runs-$run "$bin" --log-dir "$WORK/logs" rollback --yes >"$WORK/rollback.out" 2>&1 \
      || { tail -5 "$WORK/rollback.out" >&2; exit 1; }
    stop_bmcs
  done
  done
  stop_pids "${IRONIC_PIDS[@]}"; sleep 2
done

printf '%s\n' "${RESULTS[@]}" > "$WORK/results.jsonl"
python3 - "$WORK/results.jsonl" "$N" "$IPMI_INTERVAL" "$API_WORKERS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n, ipmi, workers = sys.argv[2:5]
print(f"\n{n} nodes ({int(n) // 3} adopted, the others provided), Ironic 39.0.0 on MariaDB, one fake BMC per node, "
      f"[ipmi] min_command_interval {ipmi}, [conductor] workers_pool_size 300, sync_power_state_interval -1, "
      f"[database] max_pool_size 20 / max_overflow 40; split: {workers} API workers. 2 cores.\n")
print("| Ironic | --concurrency | build | nodes/s | 10,000 nodes in | per node: API requests | waiting for the conductor | of which its work | polling lag | CPU s: Ironic / BMCs / MariaDB / bm2ironic (of cores x wall) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    cpu, k = r["cpu"], max(r["nodes"], 1)
    print(f"| {r['layout']} | {r['concurrency']} | {r['build']} | {r['rate']:.2f} | {10000 / r['rate'] / 60:.0f} min | "
          f"{r['api_calls'] / k:.1f} in {r['api_s'] / k:.2f} s | {r['wait_s'] / k:.2f} s | {r['conductor_s'] / k:.2f} s | {r['lag_s'] / k:.2f} s | "
          f"{cpu['ironic']:.0f} / {cpu['bmcs']:.0f} / {cpu['mariadb']:.0f} / {cpu['bm2ironic']:.1f} (of {2 * r['wall_s']:.0f}) |")
print("\nPer request kind (mean ms as bm2ironic saw it; count) and the conductor's own time per node (mean s):")
for r in rows:
    kinds = "; ".join(f"{t['kind']} {t['total_ms'] / t['count']:.0f} ms ×{t['count']}" for t in r["calls"])
    cond = "; ".join(f"{k} {v[1]:.2f} s ×{v[0]}" for k, v in sorted(r["conductor"].items()))
    print(f"- {r['layout']} c{r['concurrency']} {r['build']}: {kinds}\n  conductor: {cond}")
PY
