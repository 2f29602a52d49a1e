#!/usr/bin/env bash
# A disposable 3-node MariaDB Galera cluster on 127.0.0.1, for the Galera test (tests/it/galera.rs).
# Nothing here is meant for production: one machine, no TLS, root through the unix socket only.
#
#   scripts/galera.sh start      bring every node up (bootstrap the first one when none runs),
#                                make database `ironic` and user bm2admin, print the env lines
#   scripts/galera.sh start N    (re)join node N to the running cluster (after `kill N`)
#   scripts/galera.sh stop [N]   orderly shutdown of every node (3, 2, 1) or of node N
#   scripts/galera.sh kill N     SIGKILL node N's server (a crash)
#   scripts/galera.sh status     one line per node: pid, cluster size and status, local state
#   scripts/galera.sh env        the env lines (BM2IRONIC_TEST_GALERA, BM2IRONIC_TEST_GALERA_NODEn)
#   scripts/galera.sh clean      stop, then remove the base directory
#
# Settings (environment): BM2_GALERA_BASE (/tmp/bm2ironic-galera), BM2_GALERA_PORT (24310: node N
# serves SQL on PORT+N, group communication on PORT+100+N, SST on PORT+200+N, IST on PORT+300+N).
# Needs mariadb-server, galera-4, rsync and ss (installed with apt when missing, as test.sh does).
set -euo pipefail
# the server runs the SST helper scripts with our PATH, as user mysql: system directories only
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

BASE=${BM2_GALERA_BASE:-/tmp/bm2ironic-galera}
PORT=${BM2_GALERA_PORT:-24310}
LIB=/usr/lib/galera/libgalera_smm.so
READY_S=${BM2_GALERA_READY_S:-120}   # how long a node may take to become Synced
ALL="1 2 3"

say() { echo "galera.sh: $*" >&2; }
fail() { say "error: $*"; exit 1; }

sql_port() { echo $((PORT + $1)); }
dir() { echo "$BASE/n$1"; }
sock() { echo "$BASE/n$1/sock"; }
cnf() { echo "$BASE/n$1/my.cnf"; }
root() { local n=$1; shift; mariadb --no-defaults -uroot -S "$(sock "$n")" "$@"; }
stat() { root "$1" -NBe "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2; }

need_node() { [[ "${1:-}" =~ ^[123]$ ]] || fail "which node? 1, 2 or 3 (got '${1:-}')"; }

install_missing() {
  local pkgs=()
  # the SST script (wsrep_sst_rsync) ships in mariadb-server, not in mariadb-server-core
  [ -x /usr/bin/wsrep_sst_rsync ] && command -v mariadbd >/dev/null || pkgs+=(mariadb-server)
  command -v mariadb >/dev/null || pkgs+=(mariadb-client)
  [ -e "$LIB" ] || pkgs+=(galera-4)
  command -v rsync >/dev/null || pkgs+=(rsync)
  command -v ss >/dev/null || pkgs+=(iproute2)   # the rsync SST looks for its daemon's port with ss
  ((${#pkgs[@]} == 0)) && return 0
  say "apt-get install ${pkgs[*]}"
  . "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"   # one lock for every apt call of the project's scripts
  apt_ensure "${pkgs[@]}" || fail "installing ${pkgs[*]} failed"
  [ -e "$LIB" ] || fail "$LIB is still missing"
}

# the pid of node N's server, if it runs (checked against its command line: pids get reused)
pid_of() {
  local p
  p=$(cat "$(dir "$1")/pid" 2>/dev/null) || return 1
  [ -n "$p" ] && grep -qF -- "--defaults-file=$(cnf "$1")" "/proc/$p/cmdline" 2>/dev/null || return 1
  echo "$p"
}
up() { pid_of "$1" >/dev/null; }
first_up() { local n; for n in $ALL; do up "$n" && { echo "$n"; return 0; }; done; return 1; }

write_config() {
  local n=$1 d peers="" m
  d=$(dir "$n")
  for m in $ALL; do peers+="${peers:+,}127.0.0.1:$((PORT + 100 + m))"; done
  mkdir -p "$d/data"
  cat >"$(cnf "$n")" <<EOF
[mysqld]
user=mysql
datadir=$d/data
socket=$(sock "$n")
pid-file=$d/pid
log-error=$d/server.log
bind-address=127.0.0.1
port=$(sql_port "$n")
skip-name-resolve
character-set-server=utf8mb3
collation-server=utf8mb3_general_ci
innodb_buffer_pool_size=64M
innodb_log_file_size=48M
innodb_doublewrite=0
# a SIGKILLed server keeps what it committed (0 could lose the last second)
innodb_flush_log_at_trx_commit=2
# what Galera requires
binlog_format=ROW
innodb_autoinc_lock_mode=2
default_storage_engine=InnoDB
wsrep_on=ON
wsrep_provider=$LIB
wsrep_cluster_name=bm2ironic-test
wsrep_cluster_address=gcomm://$peers
wsrep_node_name=n$n
wsrep_node_address=127.0.0.1:$((PORT + 100 + n))
wsrep_node_incoming_address=127.0.0.1:$(sql_port "$n")
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:$((PORT + 200 + n))
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:$((PORT + 100 + n));ist.recv_addr=127.0.0.1:$((PORT + 300 + n));gcache.size=64M"
wsrep_slave_threads=2
EOF
  chown -R mysql:mysql "$d"
}

state_field() { sed -n "s/^$2:[[:space:]]*//p" "$(dir "$1")/data/grastate.dat" 2>/dev/null || true; }

# After a crash grastate.dat says seqno -1: ask InnoDB where the node stopped, so it rejoins by IST
crash_position() {
  local n=$1
  mariadbd --defaults-file="$(cnf "$n")" --wsrep-recover --log-error="$(dir "$n")/recover.log" \
    </dev/null >/dev/null 2>&1 || true
  sed -n 's/.*WSREP: Recovered position: //p' "$(dir "$n")/recover.log" | tail -1
}

wait_synced() { # N PID
  local n=$1 p=$2 state="" t
  for ((t = 0; t < READY_S * 4; t++)); do
    state=$(stat "$n" wsrep_local_state_comment || true)
    [ "$state" = Synced ] && return 0
    if ! kill -0 "$p" 2>/dev/null; then
      say "node $n exited; the end of its log:"; tail -20 "$(dir "$n")/server.log" >&2; return 1
    fi
    sleep 0.25
  done
  say "node $n is still '$state' after ${READY_S}s"; tail -20 "$(dir "$n")/server.log" >&2; return 1
}

launch() { # N new-cluster(yes|no)
  local n=$1 new=$2 args=() pos p t0
  if up "$n"; then say "node $n already runs"; return 0; fi
  write_config "$n"
  if [ "$new" = yes ]; then
    if [ ! -d "$(dir "$n")/data/mysql" ]; then
      mariadb-install-db --no-defaults --user=mysql --datadir="$(dir "$n")/data" --skip-test-db \
        --auth-root-authentication-method=socket >"$(dir "$n")/install.log" 2>&1 \
        || { cat "$(dir "$n")/install.log" >&2; fail "mariadb-install-db failed for node $n"; }
    else
      sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$(dir "$n")/data/grastate.dat"
    fi
    args+=(--wsrep-new-cluster)
  fi
  if [ "$(state_field "$n" seqno)" = -1 ] && [ -e "$(dir "$n")/data/ibdata1" ]; then
    pos=$(crash_position "$n")
    [ -n "$pos" ] && args+=(--wsrep-start-position="$pos")
  fi
  t0=$SECONDS
  # a session of its own: the server outlives the shell (and the test) that started it
  setsid mariadbd --defaults-file="$(cnf "$n")" "${args[@]}" </dev/null >/dev/null 2>&1 &
  p=$!
  wait_synced "$n" "$p" || fail "node $n did not start"
  say "node $n Synced on 127.0.0.1:$(sql_port "$n") after $((SECONDS - t0))s ${args[*]:-}"
}

# The survivors drop a SIGKILLed peer after evs.suspect_timeout (5 s); a node started before then
# waits much longer to join. Wait until the cluster size matches the nodes that run.
settle() {
  local any=$1 running=0 n size
  for n in $ALL; do up "$n" && running=$((running + 1)); done
  for _ in $(seq 150); do
    size=$(stat "$any" wsrep_cluster_size || true)
    [ "${size:-0}" -le "$running" ] && return 0
    sleep 0.2
  done
  say "warning: node $any still counts $size members, $running run"
}

# A node left alone by two crashes is non-Primary (no quorum): make it a primary component again
reprimary() {
  local any=$1
  [ "$(stat "$any" wsrep_cluster_status)" = Primary ] && return 0
  say "node $any is $(stat "$any" wsrep_cluster_status): pc.bootstrap=YES"
  root "$any" -e "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"
  for _ in $(seq 50); do [ "$(stat "$any" wsrep_cluster_status)" = Primary ] && return 0; sleep 0.2; done
  fail "node $any did not become Primary"
}

# none runs: the node marked safe to bootstrap, or the one that saw the most, or node 1
bootstrap_choice() {
  local n best=1 top=-2 s
  for n in $ALL; do [ "$(state_field "$n" safe_to_bootstrap)" = 1 ] && { echo "$n"; return; }; done
  for n in $ALL; do
    [ -e "$(dir "$n")/data/grastate.dat" ] || continue
    s=$(state_field "$n" seqno)
    if [ "$s" = -1 ]; then write_config "$n"; s=$(crash_position "$n"); s=${s##*:}; s=${s:--1}; fi
    ((s > top)) && { top=$s; best=$n; }
  done
  echo "$best"
}

grants() {
  root "$1" <<'EOF'
CREATE DATABASE IF NOT EXISTS ironic CHARACTER SET utf8mb3;
CREATE USER IF NOT EXISTS 'bm2admin'@'127.0.0.1' IDENTIFIED BY 'adminpass';
GRANT ALL ON *.* TO 'bm2admin'@'127.0.0.1' WITH GRANT OPTION;
EOF
}

start_all() {
  local any n
  mkdir -p "$BASE"
  chmod 755 "$BASE"
  if any=$(first_up); then
    settle "$any"; reprimary "$any"
  else
    any=$(bootstrap_choice)
    say "bootstrapping the cluster on node $any"
    launch "$any" yes
  fi
  for n in $ALL; do launch "$n" no; done
  grants "$any"
  for n in $ALL; do [ "$(stat "$n" wsrep_cluster_size)" = 3 ] || fail "node $n does not see 3 members"; done
  say "3 nodes Synced (SQL on 127.0.0.1:$(sql_port 1)-$(sql_port 3), base $BASE)"
}

start_one() {
  local n=$1 any
  any=$(first_up) || fail "no node runs: '$0 start' bootstraps the cluster"
  up "$n" || { settle "$any"; reprimary "$any"; }
  launch "$n" no
}

halt() {
  local n=$1 p
  p=$(pid_of "$n") || { say "node $n is not running"; return 0; }
  mariadb-admin --no-defaults -uroot -S "$(sock "$n")" shutdown 2>/dev/null || kill "$p" 2>/dev/null || true
  for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then say "node $n ignored the shutdown for 30 s: SIGKILL"; kill -9 "$p"; fi
  say "node $n stopped"
}

crash() {
  local n=$1 p
  p=$(pid_of "$n") || { say "node $n is not running"; return 0; }
  kill -KILL "$p"
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  say "node $n killed (pid $p)"
}

status() {
  local n p rc=0
  for n in $ALL; do
    if p=$(pid_of "$n"); then
      echo "node $n: pid $p, port $(sql_port "$n"), cluster size $(stat "$n" wsrep_cluster_size), $(stat "$n" wsrep_cluster_status), $(stat "$n" wsrep_local_state_comment)"
    else
      echo "node $n: down"; rc=3
    fi
  done
  return $rc
}

env_lines() {
  local n
  echo "export BM2IRONIC_TEST_GALERA=1"
  for n in $ALL; do
    echo "export BM2IRONIC_TEST_GALERA_NODE$n='mysql://bm2admin:adminpass@127.0.0.1:$(sql_port "$n")/ironic'"
  done
}

case "${1:-}" in
  start)
    install_missing
    if [ -n "${2:-}" ]; then need_node "$2"; start_one "$2"; else start_all; fi
    env_lines ;;
  stop)
    if [ -n "${2:-}" ]; then need_node "$2"; halt "$2"; else for n in 3 2 1; do halt "$n"; done; fi ;;
  kill) need_node "${2:-}"; crash "$2" ;;
  status) status ;;
  env) env_lines ;;
  clean) for n in 3 2 1; do halt "$n"; done; rm -rf "$BASE"; say "removed $BASE" ;;
  *) echo "usage: $0 start [N] | stop [N] | kill N | status | env | clean" >&2; exit 2 ;;
esac
