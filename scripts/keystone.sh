#!/usr/bin/env bash
# keystone.sh: a real Keystone (PyPI `keystone`) for the tests, on 127.0.0.1 only, in a cached venv.
#
# Usage: scripts/keystone.sh install   create the venv (cached in $BM2_KEYSTONE_VENV) and print its path
#        scripts/keystone.sh start     install, create + bootstrap the database on first run, serve
#                                      (gunicorn, one worker), seed the users, print `export` lines
#        scripts/keystone.sh stop      stop the server (data kept; `clean` also removes it)
# What is seeded (idempotent): admin/adminpass (bootstrap; admin on project admin AND on the system),
# project demo with user demo/demopass (role member), project service with user ironic/ironicpass
# (role service: what Ironic's keystonemiddleware authenticates as). The tests register their own
# `baremetal` endpoints, each in a region of its own.
set -euo pipefail

VENV=${BM2_KEYSTONE_VENV:-/tmp/bm2ironic-keystone-venv}
SPEC=${BM2_KEYSTONE_SPEC:-keystone==30.0.0}
BASE=${BM2_KEYSTONE_BASE:-/tmp/bm2ironic-keystone}
PORT=${BM2_KEYSTONE_PORT:-15000}
ADMIN_PW=adminpass
URL=http://127.0.0.1:$PORT/v3
CONF=$BASE/keystone.conf
PIDF=$BASE/gunicorn.pid
export PYTHONWARNINGS=ignore OS_KEYSTONE_CONFIG_FILES=$CONF
log() { echo "[keystone] $*" >&2; }

install() {
  if [ ! -x "$VENV/bin/gunicorn" ] || [ "$(cat "$VENV/.spec" 2>/dev/null)" != "$SPEC+gunicorn" ]; then
    log "creating $VENV with $SPEC (about a minute, cached afterwards)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip
    "$VENV/bin/pip" install -q --disable-pip-version-check "$SPEC" gunicorn
    echo "$SPEC+gunicorn" > "$VENV/.spec"
  fi
  echo "$VENV"
}

up() { [ "$(curl -m 2 -s -o /dev/null -w '%{http_code}' "$URL/" 2>/dev/null)" = 200 ]; }

bootstrap() {
  mkdir -p "$BASE"/{fernet-keys,credential-keys}
  cat > "$CONF" <<EOF
[DEFAULT]
log_file = $BASE/keystone.log
debug = false

[database]
connection = sqlite:///$BASE/keystone.db

[token]
provider = fernet
expiration = 3600

[fernet_tokens]
key_repository = $BASE/fernet-keys

[credential]
key_repository = $BASE/credential-keys
EOF
  if [ ! -s "$BASE/keystone.db" ]; then
    local km="$VENV/bin/keystone-manage --config-file $CONF"
    $km db_sync >"$BASE/bootstrap.log" 2>&1
    $km fernet_setup --keystone-user root --keystone-group root >>"$BASE/bootstrap.log" 2>&1
    $km credential_setup --keystone-user root --keystone-group root >>"$BASE/bootstrap.log" 2>&1
    $km bootstrap --bootstrap-password "$ADMIN_PW" --bootstrap-admin-url "$URL/" \
      --bootstrap-internal-url "$URL/" --bootstrap-public-url "$URL/" \
      --bootstrap-region-id RegionOne >>"$BASE/bootstrap.log" 2>&1
  fi
}

serve() {
  # keystone's app parses sys.argv with oslo.config: gunicorn gets everything from a config file
  cat > "$BASE/gunicorn.conf.py" <<EOF
wsgi_app = "keystone.wsgi.api:application"
bind = "127.0.0.1:$PORT"
workers = 1
threads = 4
pidfile = "$PIDF"
errorlog = "$BASE/server.log"
daemon = True
control_socket_disable = True
EOF
  (cd "$BASE" && "$VENV/bin/gunicorn" </dev/null >/dev/null 2>&1)
  for _ in $(seq 1 160); do up && return 0; sleep 0.25; done
  log "Keystone did not answer on $URL/ within 40 s; see $BASE/server.log"; tail -20 "$BASE/server.log" >&2 || true
  return 1
}

seed() {   # idempotent, Python stdlib only
  KS_URL=$URL KS_PW=$ADMIN_PW "$VENV/bin/python" - <<'PY'
import json, os, urllib.error, urllib.request
U = os.environ["KS_URL"]
def req(method, path, body=None, token=None):
    r = urllib.request.Request(U + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **({"X-Auth-Token": token} if token else {})})
    with urllib.request.urlopen(r, timeout=30) as resp:
        raw = resp.read()
        return resp.headers, (json.loads(raw) if raw else None)
h, _ = req("POST", "/auth/tokens", {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "admin", "domain": {"id": "default"}, "password": os.environ["KS_PW"]}}},
    "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}})
T = h["X-Subject-Token"]
def find(coll, **q):
    return (req("GET", "/%s?%s" % (coll, "&".join("%s=%s" % kv for kv in q.items())), token=T)[1][coll] or [None])[0]
def project(name):
    return find("projects", name=name, domain_id="default") or req("POST", "/projects",
        {"project": {"name": name, "domain_id": "default"}}, T)[1]["project"]
def user(name, pw, p):
    return find("users", name=name, domain_id="default") or req("POST", "/users",
        {"user": {"name": name, "domain_id": "default", "password": pw, "default_project_id": p["id"]}}, T)[1]["user"]
def role(name):
    return find("roles", name=name) or req("POST", "/roles", {"role": {"name": name}}, T)[1]["role"]
demo, service = project("demo"), project("service")
req("PUT", "/projects/%s/users/%s/roles/%s" % (demo["id"], user("demo", "demopass", demo)["id"], role("member")["id"]), token=T)
req("PUT", "/projects/%s/users/%s/roles/%s" % (service["id"], user("ironic", "ironicpass", service)["id"], role("service")["id"]), token=T)
PY
}

case "${1:-}" in
  install) install ;;
  start)
    install >/dev/null
    if ! up; then
      bootstrap
      serve
    fi
    seed
    log "Keystone $("$VENV/bin/pip" show keystone 2>/dev/null | awk '/^Version/{print $2}') on $URL/"
    cat <<ENV
export BM2IRONIC_TEST_KEYSTONE_URL='$URL'
ENV
    ;;
  stop)
    if [ -f "$PIDF" ]; then
      pid=$(cat "$PIDF"); kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -KILL "$pid" 2>/dev/null || true; rm -f "$PIDF"
    fi ;;
  clean) "$0" stop; rm -rf "$BASE" ;;
  *) echo "usage: $0 install | start | stop | clean" >&2; exit 2 ;;
esac
