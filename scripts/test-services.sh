#!/usr/bin/env bash
# test-services.sh: throw-away MariaDB and PostgreSQL servers for bm2ironic's tests.
# Loopback only, non-default ports, data under $BM2_SVC_BASE (default /tmp/bm2ironic-services).
#
# Usage: scripts/test-services.sh start|stop|clean|status|env|start-mariadb|stop-mariadb
#   start : installs mariadb-server / postgresql with apt when missing, initialises fresh data
#           directories, starts both servers, creates the nova_bm, nova and ironic databases and users.
#   stop  : stops both servers (data stays).      clean: stop, then remove the data.
#   env   : prints `export` lines with the connection URLs the tests read.
#
# Users (test only; these passwords exist only on these throw-away servers):
#   nova/novapass (nova_bm, nova), ironic/ironicpass (ironic),
#   bm_reader/readerpass (SELECT only: the tests read every source database as this user),
#   bm2admin/adminpass (creates one database per test so tests run in parallel).
set -euo pipefail

BASE=${BM2_SVC_BASE:-/tmp/bm2ironic-services}
MYSQL_PORT=${BM2_MYSQL_PORT:-13306}
PG_PORT=${BM2_PG_PORT:-15432}
MY_DIR=$BASE/mariadb
PG_DIR=$BASE/pg
MY_SOCK=$MY_DIR/mysqld.sock
MY_PID=$MY_DIR/mysqld.pid

log() { echo "[test-services] $*" >&2; }

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; fi
}

ensure_installed() {
  local need=()
  command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server mariadb-client)
  [ -n "$(pg_bin)" ] || need+=(postgresql postgresql-client)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing with apt: ${need[*]} (about a minute on a new machine)"
    . "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
    apt_ensure "${need[@]}"
  fi
}

my() { mariadb --no-defaults -S "$MY_SOCK" -uroot "$@"; }
pg() { psql -X -q -h "$PG_DIR" -p "$PG_PORT" -U postgres -v ON_ERROR_STOP=1 "$@"; }

start_mariadb() {
  mkdir -p "$MY_DIR"; chown mysql:mysql "$MY_DIR"
  if [ ! -d "$MY_DIR/data/mysql" ]; then
    log "mariadb: initialising $MY_DIR/data"
    mariadb-install-db --no-defaults --user=mysql --datadir="$MY_DIR/data" \
      --auth-root-authentication-method=socket --skip-test-db >"$MY_DIR/install.log" 2>&1
  fi
  if [ -f "$MY_PID" ] && kill -0 "$(cat "$MY_PID")" 2>/dev/null; then
    log "mariadb: already running (pid $(cat "$MY_PID"))"
  else
    # apt's policy-rc.d keeps the packaged service from starting: run mariadbd ourselves, in its own session
    setsid mariadbd --no-defaults --user=mysql --datadir="$MY_DIR/data" \
      --socket="$MY_SOCK" --pid-file="$MY_PID" --port="$MYSQL_PORT" \
      --bind-address=127.0.0.1 --skip-name-resolve \
      --character-set-server=utf8mb3 --collation-server=utf8mb3_general_ci \
      --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=0 \
      --innodb-doublewrite=0 --max-connections=500 --log-error="$MY_DIR/error.log" \
      </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 300); do
      mariadb-admin --no-defaults -S "$MY_SOCK" -uroot ping >/dev/null 2>&1 && break
      sleep 0.1
    done
    mariadb-admin --no-defaults -S "$MY_SOCK" -uroot ping >/dev/null 2>&1 \
      || { log "mariadb failed to start"; tail -20 "$MY_DIR/error.log" >&2; return 1; }
    log "mariadb: up on 127.0.0.1:$MYSQL_PORT"
  fi
  my <<'SQL'
CREATE DATABASE IF NOT EXISTS nova_bm CHARACTER SET utf8mb3;
CREATE DATABASE IF NOT EXISTS nova    CHARACTER SET utf8mb3;
CREATE DATABASE IF NOT EXISTS ironic  CHARACTER SET utf8mb3;
CREATE USER IF NOT EXISTS 'nova'@'127.0.0.1'      IDENTIFIED BY 'novapass';
CREATE USER IF NOT EXISTS 'ironic'@'127.0.0.1'    IDENTIFIED BY 'ironicpass';
CREATE USER IF NOT EXISTS 'bm_reader'@'127.0.0.1' IDENTIFIED BY 'readerpass';
CREATE USER IF NOT EXISTS 'bm2admin'@'127.0.0.1'  IDENTIFIED BY 'adminpass';
GRANT ALL ON nova_bm.* TO 'nova'@'127.0.0.1';
GRANT ALL ON nova.*    TO 'nova'@'127.0.0.1';
GRANT ALL ON ironic.*  TO 'ironic'@'127.0.0.1';
GRANT SELECT ON *.*    TO 'bm_reader'@'127.0.0.1';
GRANT ALL ON *.*       TO 'bm2admin'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
}

start_pg() {
  local bin; bin=$(pg_bin)
  mkdir -p "$PG_DIR"; chown postgres:postgres "$PG_DIR"
  if [ ! -f "$PG_DIR/data/PG_VERSION" ]; then
    log "postgres: initialising $PG_DIR/data"
    runuser -u postgres -- "$bin/initdb" -D "$PG_DIR/data" -U postgres \
      --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
      >"$PG_DIR/initdb.log" 2>&1
  fi
  if runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
    log "postgres: already running"
  else
    runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
      -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" start >/dev/null
    log "postgres: up on 127.0.0.1:$PG_PORT"
  fi
  pg -d postgres <<'SQL'
DO $$BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='nova')      THEN CREATE ROLE nova      LOGIN PASSWORD 'novapass';   END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='ironic')    THEN CREATE ROLE ironic    LOGIN PASSWORD 'ironicpass'; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='bm_reader') THEN CREATE ROLE bm_reader LOGIN PASSWORD 'readerpass'; END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='bm2admin')  THEN CREATE ROLE bm2admin  LOGIN SUPERUSER PASSWORD 'adminpass'; END IF;
END$$;
SQL
  for spec in nova_bm:nova nova:nova ironic:ironic; do
    local db=${spec%%:*} owner=${spec##*:}
    if [ -z "$(pg -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$db'")" ]; then
      pg -d postgres -c "CREATE DATABASE $db OWNER $owner"
    fi
  done
}

stop_mariadb() {
  if [ -f "$MY_PID" ] && kill -0 "$(cat "$MY_PID")" 2>/dev/null; then
    local pid; pid=$(cat "$MY_PID")
    mariadb-admin --no-defaults -S "$MY_SOCK" -uroot shutdown 2>/dev/null || kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    log "mariadb: stopped"
  fi
}

stop_pg() {
  local bin; bin=$(pg_bin)
  if [ -n "$bin" ] && [ -f "$PG_DIR/data/PG_VERSION" ] && \
     runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null
    log "postgres: stopped"
  fi
}

print_env() {
  cat <<ENV
export BM2IRONIC_TEST_MYSQL_ADMIN='mysql://bm2admin:adminpass@127.0.0.1:$MYSQL_PORT/mysql'
export BM2IRONIC_TEST_PG_ADMIN='postgres://bm2admin:adminpass@127.0.0.1:$PG_PORT/postgres'
export BM2IRONIC_TEST_MYSQL_READER='mysql://bm_reader:readerpass@127.0.0.1:$MYSQL_PORT'
export BM2IRONIC_TEST_PG_READER='postgres://bm_reader:readerpass@127.0.0.1:$PG_PORT'
export NOVA_BM_MYSQL_URL='mysql://nova:novapass@127.0.0.1:$MYSQL_PORT/nova_bm'
export IRONIC_MYSQL_URL='mysql://ironic:ironicpass@127.0.0.1:$MYSQL_PORT/ironic'
export NOVA_BM_PG_URL='postgres://nova:novapass@127.0.0.1:$PG_PORT/nova_bm'
export IRONIC_PG_URL='postgres://ironic:ironicpass@127.0.0.1:$PG_PORT/ironic'
ENV
}

case "${1:-}" in
  start)  ensure_installed; start_mariadb; start_pg; print_env ;;
  # one MariaDB only (a test's private server, with its own BM2_SVC_BASE and BM2_MYSQL_PORT)
  start-mariadb) ensure_installed; start_mariadb; print_env | grep -e MYSQL_ADMIN ;;
  stop-mariadb)  stop_mariadb ;;
  stop)   stop_mariadb; stop_pg ;;
  clean)  stop_mariadb; stop_pg; rm -rf "$BASE" ;;
  status)
    mariadb-admin --no-defaults -S "$MY_SOCK" -uroot ping 2>&1 || true
    b=$(pg_bin); [ -n "$b" ] && runuser -u postgres -- "$b/pg_isready" -h 127.0.0.1 -p "$PG_PORT" || true ;;
  env)    print_env ;;
  *) echo "usage: $0 start|stop|clean|status|env|start-mariadb|stop-mariadb" >&2; exit 2 ;;
esac
