#!/usr/bin/env bash
# keystone-pike.sh: a REAL Keystone that serves Keystone's v2.0 API, for the Juno tests: PyPI
# keystone==12.0.3 (Pike, 2017) on Python 2.7, in a cached venv, its database on the test MariaDB,
# loopback only. Juno's Ironic conductor asks Keystone v2.0 for an admin token before it fetches
# images from Glance (python-keystoneclient 0.11, `auth_version = v2.0`); Juno's Nova API and `nova`
# and the tests' Glance authenticate here too (docs/juno.md); the Keystone of the other
# tests (scripts/keystone.sh, 30.0.0) serves v3 only. Why not Juno's own Keystone (2014.2): the same
# reason as Glance (scripts/glance.sh): Pike's runs on the same Python 2.7 and still speaks v2.0.
# Pike's SQLite migrations fail on today's SQLite (migration 91's table copy), hence MariaDB.
#
# Usage: scripts/keystone-pike.sh install   build the venv (cached) and print its path
#        scripts/keystone-pike.sh start     install; create the database (BM2IRONIC_TEST_MYSQL_ADMIN,
#                                           a MariaDB admin URL, as scripts/test-services.sh prints
#                                           it), sync it, bootstrap admin/adminpass on project admin,
#                                           serve on 127.0.0.1:$BM2_KEYSTONE_PIKE_PORT (15001) in the
#                                           background; print `export BM2IRONIC_TEST_KEYSTONE_V2=...`
#        scripts/keystone-pike.sh stop      stop it (the database is dropped with the test server)
# The venv: BM2_KEYSTONE_PIKE_VENV (default /tmp/bm2ironic-keystone-pike-venv), Python 2.7 as
# scripts/juno.sh finds it; pins: scripts/keystone-pike-pins.txt; paste: scripts/keystone-pike-paste.ini.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${BM2_KEYSTONE_PIKE_VENV:-/tmp/bm2ironic-keystone-pike-venv}
BASE=${BM2_KEYSTONE_PIKE_BASE:-/tmp/bm2ironic-keystone-pike}
PORT=${BM2_KEYSTONE_PIKE_PORT:-15001}
PINS=$REPO/scripts/keystone-pike-pins.txt
SPEC="keystone==12.0.3 $(sha256sum < "$PINS" | cut -c1-16)"
ADMIN_PW=adminpass
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONWARNINGS=ignore
log() { echo "[keystone-pike] $*" >&2; }
die() { echo "[keystone-pike] ERROR: $*" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/python27.sh"

install() {
  py27_venv keystone-pike "$VENV" "$SPEC" 'import keystone.server.wsgi, pymysql' \
    -c "$PINS" keystone==12.0.3 PyMySQL
}

up() { [ "$(curl -m 2 -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2.0/" 2>/dev/null)" = 200 ]; }

start() {
  local admin=${BM2IRONIC_TEST_MYSQL_ADMIN:?a MariaDB admin URL (scripts/test-services.sh start prints it)}
  install >/dev/null
  if up; then
    log "already up on 127.0.0.1:$PORT"
  else
    # mysql://USER:PASS@HOST:PORT/DB -> its parts
    local rest=${admin#mysql://} user pass hostport
    user=${rest%%:*}; rest=${rest#*:}; pass=${rest%%@*}; rest=${rest#*@}; hostport=${rest%%/*}
    local db=bm2_keystone_pike km
    # the password through the environment, not the command line (`ps`)
    MYSQL_PWD=$pass mysql -h "${hostport%:*}" -P "${hostport#*:}" -u "$user" \
      -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db CHARACTER SET utf8" || die "creating the database $db failed"
    rm -rf "$BASE"; mkdir -p "$BASE/fernet-keys" "$BASE/credential-keys"
    cat > "$BASE/keystone.conf" <<EOF
[DEFAULT]
log_file = $BASE/keystone.log

[database]
connection = mysql+pymysql://$user:$pass@$hostport/$db?charset=utf8

[token]
provider = fernet
expiration = 7200

[fernet_tokens]
key_repository = $BASE/fernet-keys

[credential]
key_repository = $BASE/credential-keys

[paste_deploy]
config_file = $REPO/scripts/keystone-pike-paste.ini
EOF
    chmod 600 "$BASE/keystone.conf"
    km="$VENV/bin/keystone-manage --config-file $BASE/keystone.conf"
    $km db_sync >"$BASE/manage.log" 2>&1 || { tail -20 "$BASE/keystone.log" >&2; die "keystone-manage db_sync failed"; }
    $km fernet_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" >>"$BASE/manage.log" 2>&1
    $km credential_setup --keystone-user "$(id -un)" --keystone-group "$(id -gn)" >>"$BASE/manage.log" 2>&1
    # admin's password through the environment too; the three identity endpoints a Pike cloud has
    # (keystonemiddleware 4.17, Glance's, asks for the admin one; all three are this server's v3)
    OS_BOOTSTRAP_PASSWORD=$ADMIN_PW $km bootstrap --bootstrap-username admin --bootstrap-project-name admin \
      --bootstrap-public-url "http://127.0.0.1:$PORT/v3" --bootstrap-internal-url "http://127.0.0.1:$PORT/v3" \
      --bootstrap-admin-url "http://127.0.0.1:$PORT/v3" --bootstrap-region-id RegionOne >>"$BASE/manage.log" 2>&1 \
      || { tail -20 "$BASE/keystone.log" >&2; die "keystone-manage bootstrap failed"; }
    # Pike's public application (v2.0 and v3; wsgiref, one request at a time: enough for the tests)
    OS_KEYSTONE_CONFIG_DIR=$BASE setsid "$VENV/bin/keystone-wsgi-public" --host 127.0.0.1 --port "$PORT" \
      >"$BASE/server.log" 2>&1 < /dev/null &
    echo $! > "$BASE/server.pid"
    local i
    for i in $(seq 1 60); do up && break; sleep 0.5; done
    up || { tail -20 "$BASE/server.log" "$BASE/keystone.log" >&2; die "Keystone 12.0.3 did not answer on 127.0.0.1:$PORT"; }
    log "Keystone 12.0.3 (v2.0) on http://127.0.0.1:$PORT/v2.0/"
  fi
  echo "export BM2IRONIC_TEST_KEYSTONE_V2='127.0.0.1:$PORT'"
}

stop() {
  if [ -s "$BASE/server.pid" ]; then
    kill -- "-$(cat "$BASE/server.pid")" 2>/dev/null || kill "$(cat "$BASE/server.pid")" 2>/dev/null || true
    rm -f "$BASE/server.pid"
  fi
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
