#!/usr/bin/env bash
# ironic-schemas.sh: builds the real Ironic schema once per test server with `ironic-dbsync upgrade`
# (the 39.0.0 alembic chain) and dumps it to SQL that each test loads into a database of its own.
# Needs the servers of test-services.sh and the venv of ironic.sh. Prints `export` lines.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BM2_SVC_BASE:-/tmp/bm2ironic-services}
MYSQL_PORT=${BM2_MYSQL_PORT:-13306}
PG_PORT=${BM2_PG_PORT:-15432}
VENV=$(scripts/ironic.sh install)
OUT=$BASE/ironic-schema
mkdir -p "$OUT"
export PYTHONWARNINGS=ignore MYSQL_PWD=adminpass PGPASSWORD=adminpass
log() { echo "[ironic-schemas] $*" >&2; }

my() { mariadb --no-defaults -h 127.0.0.1 -P "$MYSQL_PORT" -u bm2admin "$@"; }
pg() { psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U bm2admin -v ON_ERROR_STOP=1 "$@"; }

if [ ! -s "$OUT/ironic.mysql.sql" ]; then
  my -e "DROP DATABASE IF EXISTS ironic_tpl; CREATE DATABASE ironic_tpl CHARACTER SET utf8mb3"
  conf=$(scripts/ironic.sh conf "$OUT/mysql" "mysql+pymysql://bm2admin:adminpass@127.0.0.1:$MYSQL_PORT/ironic_tpl?charset=utf8" 6390)
  start=$(date +%s)
  "$VENV/bin/ironic-dbsync" --config-file "$conf" upgrade >"$OUT/dbsync.mysql.log" 2>&1 || { tail -20 "$OUT/dbsync.mysql.log" >&2; exit 1; }
  log "MariaDB: ironic-dbsync upgrade took $(( $(date +%s) - start )) s"
  mariadb-dump --no-defaults -h 127.0.0.1 -P "$MYSQL_PORT" -u bm2admin --skip-comments --no-data ironic_tpl > "$OUT/ironic.mysql.sql.tmp"
  mariadb-dump --no-defaults -h 127.0.0.1 -P "$MYSQL_PORT" -u bm2admin --skip-comments --no-create-info ironic_tpl alembic_version >> "$OUT/ironic.mysql.sql.tmp"
  mv "$OUT/ironic.mysql.sql.tmp" "$OUT/ironic.mysql.sql"
fi
if [ ! -s "$OUT/ironic.postgres.sql" ]; then
  pg -d postgres -c "DROP DATABASE IF EXISTS ironic_tpl" -c "CREATE DATABASE ironic_tpl"
  conf=$(scripts/ironic.sh conf "$OUT/pg" "postgresql+psycopg2://bm2admin:adminpass@127.0.0.1:$PG_PORT/ironic_tpl" 6391)
  start=$(date +%s)
  "$VENV/bin/ironic-dbsync" --config-file "$conf" upgrade >"$OUT/dbsync.pg.log" 2>&1 || { tail -20 "$OUT/dbsync.pg.log" >&2; exit 1; }
  log "PostgreSQL: ironic-dbsync upgrade took $(( $(date +%s) - start )) s"
  pg_dump -h 127.0.0.1 -p "$PG_PORT" -U bm2admin --no-owner --no-privileges --schema-only ironic_tpl > "$OUT/ironic.postgres.sql.tmp"
  pg_dump -h 127.0.0.1 -p "$PG_PORT" -U bm2admin --no-owner --no-privileges --data-only -t alembic_version ironic_tpl >> "$OUT/ironic.postgres.sql.tmp"
  mv "$OUT/ironic.postgres.sql.tmp" "$OUT/ironic.postgres.sql"
fi
cat <<ENV
export BM2IRONIC_TEST_IRONIC_VENV='$VENV'
export BM2IRONIC_TEST_IRONIC_MYSQL_SCHEMA='$OUT/ironic.mysql.sql'
export BM2IRONIC_TEST_IRONIC_PG_SCHEMA='$OUT/ironic.postgres.sql'
ENV
