#!/usr/bin/env bash
# bench.sh: what the maintenance window costs, measured side by side in one run and printed as a table.
# Not a test (timings are never asserted); rerun it by hand.
#
# Usage: scripts/bench.sh [SIZES...]          (default: 10000 100000; e.g. scripts/bench.sh 1000 10000)
#        BENCH_BACKENDS="mysql postgres"      which target servers (default both)
#        BENCH_WIZARD=0 / BENCH_WATCH=0       skip the wizard / log watcher figures
#        BENCH_REPEAT=3                        runs of plan, migrate and the floor per size (medians)
#        BENCH_COLD=1                          first, one `plan` cold: the database servers restarted
#                                              (scripts/test-services.sh's own) and the page cache dropped
#                                              (as root), so nothing of the source, the target or the
#                                              binary is in memory; 0 skips it
#
# For each backend and size: a nova_bm inventory from `examples/bench_fixture.rs` (Fixture::bench:
# ~70% free nodes, ~25% with an instance, ~5% soft-deleted, two interfaces each), then, release build:
#   inventory   `bm2ironic inventory --json`
#   plan        `bm2ironic plan` against an empty Ironic (end to end: read, detect, plan, print; the median of
#               BENCH_REPEAT runs); the
#               plan phase alone is the `plan` figure of migrate's "time:" line
#   migrate     `bm2ironic migrate --via db --yes` into an empty Ironic (the real 39.0.0 schema)
#   floor       the database's own client (`mariadb` / `psql -1`) loading the same rows (nodes, ports and
#               the run record, dumped from migrate's target as multi-row INSERTs) into an empty Ironic,
#               in one transaction; migrate and the floor run BENCH_REPEAT times each, taking turns, and
#               their medians are compared
# with wall time and peak RSS from /usr/bin/time. Then the wizard (benches/wizard_render.rs: a frame at
# 100k on a TestBackend, key-to-frame while progress floods, Enter on connections to the inventory) and
# the log watcher (benches/watch_idle.rs: lines/s parsed and classified, idle CPU).
# The API path has its own benchmark: scripts/bench-api.sh.
#
# Needs the servers of scripts/test-services.sh and the Ironic schema dumps of scripts/ironic-schemas.sh
# (their `export` lines, or BM2IRONIC_TEST_* already in the environment). Databases are named
# perf_<pid>_... and dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 100000)
BACKENDS=${BENCH_BACKENDS:-mysql postgres}
log() { echo "[bench] $*" >&2; }

if [ -z "${BM2IRONIC_TEST_MYSQL_ADMIN:-}" ]; then eval "$(scripts/test-services.sh env)"; fi
if [ -z "${BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA:-}" ]; then
  d=${BM2_SVC_BASE:-/tmp/bm2ironic-services}/ironic-schema
  if [ -s "$d/ironic.mysql.sql" ] && [ -s "$d/ironic.postgres.sql" ]; then
    BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA=$d/ironic.mysql.sql BM2IRONIC_TEST_IRONIC_PG_SCHEMA=$d/ironic.postgres.sql
  else
    eval "$(scripts/ironic-schemas.sh)"
  fi
fi

log "building (release): the binary, the fixture generator and the benches"
cargo build --release --quiet --bin bm2ironic --example bench_fixture
if [ "${BENCH_WIZARD:-1}" != 0 ] || [ "${BENCH_WATCH:-1}" != 0 ]; then
  cargo bench --quiet --no-run --bench wizard_render --bench wizard_flow --bench watch_idle 2>/dev/null
fi
BIN=target/release/bm2ironic
GEN=target/release/examples/bench_fixture
WORK=$(mktemp -d /tmp/bm2ironic-bench.XXXXXX)
TAG=perf_$$
DBS=()

# URL pieces: scheme://user:pass@host:port/db
parse() { [[ $1 =~ ^[a-z]+://([^:]+):([^@]+)@([^:/]+):([0-9]+)/ ]] && U=${BASH_REMATCH[1]} P=${BASH_REMATCH[2]} H=${BASH_REMATCH[3]} PT=${BASH_REMATCH[4]}; }
my() { MYSQL_PWD=$MY_P mariadb --no-defaults -h "$MY_H" -P "$MY_PT" -u "$MY_U" "$@"; }
pg() { PGPASSWORD=$PG_P psql -X -q -h "$PG_H" -p "$PG_PT" -U "$PG_U" -v ON_ERROR_STOP=1 "$@"; }
parse "$BM2IRONIC_TEST_MYSQL_ADMIN"; MY_U=$U MY_P=$P MY_H=$H MY_PT=$PT
parse "$BM2IRONIC_TEST_PG_ADMIN"; PG_U=$U PG_P=$P PG_H=$H PG_PT=$PT

create_db() { # backend name
  DBS+=("$1:$2")
  if [ "$1" = mysql ]; then my -e "CREATE DATABASE $2 CHARACTER SET utf8mb3"; else pg -d postgres -c "CREATE DATABASE $2"; fi
}
url() { # backend name
  if [ "$1" = mysql ]; then echo "mysql://$MY_U:$MY_P@$MY_H:$MY_PT/$2"; else echo "postgres://$PG_U:$PG_P@$PG_H:$PG_PT/$2"; fi
}
ironic_db() { # backend name: an empty Ironic (the real 39.0.0 schema)
  create_db "$1" "$2"
  if [ "$1" = mysql ]; then my "$2" < "$BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA"; else pg -d "$2" -f "$BM2IRONIC_TEST_IRONIC_PG_SCHEMA" >/dev/null; fi
}
cleanup() {
  for d in "${DBS[@]}"; do
    if [ "${d%%:*}" = mysql ]; then my -e "DROP DATABASE IF EXISTS ${d#*:}" || true; else pg -d postgres -c "DROP DATABASE IF EXISTS ${d#*:}" || true; fi
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# timed NAME CMD...: runs CMD (stdout to $WORK/NAME.out), records "seconds KB" in $WORK/NAME.time
timed() {
  local name=$1; shift
  /usr/bin/time -f '%e %M' -o "$WORK/$name.time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || {
    local rc=$?
    # plan exits 3 when blocking conflicts are unresolved: none are expected here
    log "$name failed (exit $rc):"; tail -5 "$WORK/$name.err" >&2; exit 1
  }
}
secs() { cut -d' ' -f1 "$WORK/$1.time"; }
mb() { awk '{printf "%.0f", $2/1024}' "$WORK/$1.time"; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a/b; else print "-" }'; }

ARGS=(--default-arch x86_64 --deploy-kernel file:///var/lib/ironic/deploy.kernel
  --deploy-ramdisk file:///var/lib/ironic/deploy.initramfs)
ROWS=()
RUNS=()
REPEAT=${BENCH_REPEAT:-3}
declare -A MIG COLD
COLD_HOW=
for b in $BACKENDS; do
  for n in "${SIZES[@]}"; do
    k=${b}_$n
    log "$b, $n nodes: generating the inventory"
    create_db "$b" "${TAG}_src_$k"
    "$GEN" "$n" "$(url "$b" "${TAG}_src_$k")" "$WORK/tftp_$k"
    # settle the source as a nova_bm that has sat for years is: statistics taken, and on PostgreSQL
    # the rows' visibility recorded (the first read of freshly written rows otherwise rewrites every
    # page, and autovacuum starts on them mid-measurement: the first `plan` after writing took 1.14 s
    # where the next two took 0.95 s)
    if [ "$b" = mysql ]; then
      my "${TAG}_src_$k" -e "ANALYZE TABLE bm_nodes, bm_interfaces" >/dev/null
    else
      pg -d "${TAG}_src_$k" -c "VACUUM ANALYZE bm_nodes" -c "VACUUM ANALYZE bm_interfaces"
    fi
    ironic_db "$b" "${TAG}_plan_$k"
    src=$(url "$b" "${TAG}_src_$k")
    run=("$BIN" --log-dir "$WORK/logs" --nova-bm-db "$src")
    # the instances' next boot: nova baremetal's TFTP tree, as an operator copies it from the hosts
    args=("${ARGS[@]}" --tftp-root "$WORK/tftp_$k")
    if [ "${BENCH_COLD:-1}" != 0 ]; then
      # cold: the servers restarted (their caches empty) and the page cache dropped (the binary, the
      # TFTP tree and the servers' files read from the disk again)
      scripts/test-services.sh stop >/dev/null 2>&1 && scripts/test-services.sh start >/dev/null 2>&1 \
        || { log "cannot restart the test services for the cold run"; exit 1; }
      sync
      if echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then COLD_HOW="servers restarted, page cache dropped"
      else COLD_HOW="servers restarted (the page cache could not be dropped: not root)"; fi
      log "$b, $n nodes: plan, cold ($COLD_HOW)"
      timed "plan_${k}_cold" "${run[@]}" --ironic-db "$(url "$b" "${TAG}_plan_$k")" plan "${args[@]}"
      COLD[$k]="$(secs "plan_${k}_cold") s, $(mb "plan_${k}_cold") MB"
    fi
    log "$b, $n nodes: inventory, plan"
    timed "inv_$k" "${run[@]}" inventory --json
    # plan $REPEAT times too (the first comes right after the inventory was written): the median
    for r in $(seq 1 "$REPEAT"); do
      timed "plan_${k}_$r" "${run[@]}" --ironic-db "$(url "$b" "${TAG}_plan_$k")" plan "${args[@]}"
    done

    # migrate and the floor, $REPEAT times each, taking turns (a server still flushing what the last
    # step wrote slows whichever comes next): the medians are compared
    tables=(nodes ports bm2ironic_runs bm2ironic_run_nodes)
    for r in $(seq 1 "$REPEAT"); do
      ironic_db "$b" "${TAG}_tgt_${k}_$r"
      ironic_db "$b" "${TAG}_floor_${k}_$r"
      mig() {
        log "$b, $n nodes: migrate ($r of $REPEAT)"
        timed "mig_${k}_$r" "${run[@]}" --ironic-db "$(url "$b" "${TAG}_tgt_${k}_$r")" migrate --via db --yes "${args[@]}"
      }
      floor() {
        log "$b, $n nodes: the floor, the same rows through the database's own client ($r of $REPEAT)"
        if [ "$b" = mysql ]; then
          MYSQL_PWD=$MY_P mariadb-dump --no-defaults -h "$MY_H" -P "$MY_PT" -u "$MY_U" --compact --no-data \
            "${TAG}_tgt_${k}_1" bm2ironic_runs bm2ironic_run_nodes | my "${TAG}_floor_${k}_$r"
          timed "floor_${k}_$r" bash -c "MYSQL_PWD=$MY_P mariadb --no-defaults -h $MY_H -P $MY_PT -u $MY_U ${TAG}_floor_${k}_$r < $WORK/dump_$k.sql"
        else
          PGPASSWORD=$PG_P pg_dump -h "$PG_H" -p "$PG_PT" -U "$PG_U" --schema-only -t bm2ironic_runs -t bm2ironic_run_nodes \
            "${TAG}_tgt_${k}_1" | pg -d "${TAG}_floor_${k}_$r" >/dev/null
          timed "floor_${k}_$r" bash -c "PGPASSWORD=$PG_P psql -X -q -h $PG_H -p $PG_PT -U $PG_U -v ON_ERROR_STOP=1 -1 -d ${TAG}_floor_${k}_$r -f $WORK/dump_$k.sql"
        fi
      }
      if [ "$r" = 1 ]; then
        mig
        # the floor's input: the rows migrate wrote (nodes, ports, the run record), as multi-row INSERTs
        if [ "$b" = mysql ]; then
          { echo "SET autocommit=0;"
            MYSQL_PWD=$MY_P mariadb-dump --no-defaults -h "$MY_H" -P "$MY_PT" -u "$MY_U" --compact --no-create-info \
              --extended-insert "${TAG}_tgt_${k}_1" "${tables[@]}"
            echo "COMMIT;"; } > "$WORK/dump_$k.sql"
        else
          PGPASSWORD=$PG_P pg_dump -h "$PG_H" -p "$PG_PT" -U "$PG_U" --data-only --inserts --rows-per-insert=1000 \
            "${tables[@]/#/-t}" "${TAG}_tgt_${k}_1" > "$WORK/dump_$k.sql"
        fi
        floor
      elif [ $((r % 2)) = 0 ]; then
        floor; mig
      else
        mig; floor
      fi
    done
    plan_phase=$(grep -o 'plan [0-9.]* [µm]*s' "$WORK/mig_${k}_1.out" | head -1 | sed 's/^plan //')
    mig_all=() floor_all=()
    for r in $(seq 1 "$REPEAT"); do mig_all+=("$(secs "mig_${k}_$r")"); floor_all+=("$(secs "floor_${k}_$r")"); done
    mig_med=$(median "${mig_all[@]}") floor_med=$(median "${floor_all[@]}")
    plan_all=()
    for r in $(seq 1 "$REPEAT"); do plan_all+=("$(secs "plan_${k}_$r")"); done
    plan_med=$(median "${plan_all[@]}")
    plan_mb=$(for r in $(seq 1 "$REPEAT"); do mb "plan_${k}_$r"; echo; done | sort -n | tail -1)
    # peak RSS: the largest of the runs
    mig_mb=$(for r in $(seq 1 "$REPEAT"); do mb "mig_${k}_$r"; echo; done | sort -n | tail -1)
    RUNS+=("$b $n: plan ${plan_all[*]} s; migrate ${mig_all[*]} s; floor ${floor_all[*]} s")
    MIG[$k]=$mig_med
    ROWS+=("$(printf '| %-8s | %7s | %9s (%4s MB) | %9s (%4s MB) | %9s | %9s (%4s MB) | %7s s | **%s** |' \
      "$b" "$n" "$(secs "inv_$k") s" "$(mb "inv_$k")" "$plan_med s" "$plan_mb" "$plan_phase" \
      "$mig_med s" "$mig_mb" "$floor_med" "$(ratio "$mig_med" "$floor_med")")")
  done
done

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| backend  |   nodes | inventory (peak RSS)  | plan (peak RSS)       | plan phase | migrate --via db (RSS) | floor     | migrate/floor |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
echo
if [ -n "$COLD_HOW" ]; then
  echo "plan, cold ($COLD_HOW), before the runs above:"
  for k in "${!COLD[@]}"; do echo "  $k: ${COLD[$k]}"; done
  echo
fi
echo "plan, migrate and floor: the median of $REPEAT runs each (migrate and floor taking turns); every run (wall seconds):"
printf '  %s\n' "${RUNS[@]}"

# linear time: the largest size against the one before it
if [ ${#SIZES[@]} -ge 2 ]; then
  small=${SIZES[-2]} big=${SIZES[-1]}
  for b in $BACKENDS; do
    echo "$b: migrate at $big nodes took $(ratio "${MIG[${b}_$big]}" "${MIG[${b}_$small]}") the time at $small ($(( big / small ))x the nodes)"
  done
fi

if [ "${BENCH_WIZARD:-1}" != 0 ]; then
  big=${SIZES[-1]}
  echo; echo "wizard (cargo bench --bench wizard_render, --bench wizard_flow -- $big):"
  cargo bench --quiet --bench wizard_render 2>/dev/null | sed 's/^/  /'
  src=""
  for d in "${DBS[@]}"; do [ "$d" = "mysql:${TAG}_src_mysql_$big" ] && src=$(url mysql "${TAG}_src_mysql_$big"); done
  BENCH_NOVA_BM_DB=$src cargo bench --quiet --bench wizard_flow -- "$big" 2>/dev/null | sed 's/^/  /'
fi
if [ "${BENCH_WATCH:-1}" != 0 ]; then
  echo; echo "log watcher (cargo bench --bench watch_idle):"
  cargo bench --quiet --bench watch_idle 2>/dev/null | sed 's/^/  /'
fi
echo; echo "API path (--via api vs the openstack CLI loop): scripts/bench-api.sh"
