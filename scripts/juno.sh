#!/usr/bin/env bash
# juno.sh: the REAL OpenStack Ironic of the Juno release (git tag 2014.2), the release the nova_bm
# upgrade targets, for the tests: its own `ironic-dbsync upgrade` makes the schema, its own API
# reads what bm2ironic wrote. Python 2.7, pinned 2014-era packages, loopback only, no auth.
#
# Usage: scripts/juno.sh install           build the venv (cached; about a minute cold, instant warm)
#                                          and print its path
#        scripts/juno.sh env               install, then print `export BM2IRONIC_TEST_JUNO_VENV=...`
#        scripts/juno.sh dbsync URL        Juno's `ironic-dbsync upgrade` on URL (SQLite or MariaDB),
#                                          then print the alembic head
#        scripts/juno.sh conf DIR URL PORT write DIR/ironic.conf (noauth, fake RPC, loopback) and
#                                          print its path (the tests start ironic-api with it)
#        scripts/juno.sh api URL PORT      ironic-api on 127.0.0.1:PORT in the background (reads
#                                          and writes the database itself: enough to read nodes)
#        scripts/juno.sh conductor URL     ironic-conductor alone in the background
#        scripts/juno.sh allinone URL PORT API and conductor in ONE process (what power and
#                                          provision actions need, see below)
#        scripts/juno.sh stop              stop what api/conductor/allinone started (PID files)
#   URL: sqlite:////abs/path.sqlite or mysql+pymysql://USER:PW@127.0.0.1:PORT/DB?charset=utf8
#
# Where the Juno sources come from. Nothing of Juno is kept in this repository; the script reads
#   JUNO_IRONIC_TARBALL   a .tar.gz of openstack/ironic at tag 2014.2, if set; otherwise
#   JUNO_REFERENCE_DIR/ironic-2014.2.tar.gz, where JUNO_REFERENCE_DIR defaults to
#                         ../shared/reference/juno beside the repository (where CI finds it).
# Make your own from a checkout (docs/juno.md):
#   git -C ironic archive --format=tar.gz --prefix=ironic-2014.2/ 2014.2 > ironic-2014.2.tar.gz
# The pins are the project's own (scripts/juno-ironic-pins.txt), and so is the one change made to
# the sources: Juno's two SQLite-hostile migrations (3bea56f25597 adds a unique constraint with
# ALTER TABLE, 487deb87cc9d adds a foreign key with ALTER TABLE; SQLite can do neither) get a
# SQLite branch (a unique index of the same name; the column added with its REFERENCES inline).
# MariaDB runs the migrations unchanged.
#
# Python 2.7: BM2_JUNO_PYTHON, else ~/.pyenv/versions/2.7.18/bin/python, else python2.7 on PATH.
# Everything lives under BM2_JUNO_BASE (default /tmp/bm2ironic-juno): venv, sources, pip cache.
# The venv is rebuilt when the tarball, the pins or this script's source change differ from what
# built it.
#
# RPC: Juno's API sends actions (power, provision, validate) to the conductor over oslo.messaging;
# its `fake` transport lives inside one process, so a separate api and conductor never hear each
# other (calls time out after 60 s). `allinone` runs both in one process, and makes the fake driver
# deliver to the `<topic>.<host>` name Juno's API calls a conductor by (a broker's queue name, which
# the fake driver does not know). Reading nodes and ports (what the tests do) needs no conductor:
# the API reads the database itself.
# The conductor writes to the database (registers itself, heartbeats) and every 60 s asks each
# pxe_ipmitool node's BMC for its power state: point it only at databases whose BMC addresses are
# loopback ones.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BASE=${BM2_JUNO_BASE:-/tmp/bm2ironic-juno}
REF=${JUNO_REFERENCE_DIR:-$REPO/../shared/reference/juno}
TARBALL=${JUNO_IRONIC_TARBALL:-$REF/ironic-2014.2.tar.gz}
PINS=$REPO/scripts/juno-ironic-pins.txt
VENV=$BASE/venv
SRC=$BASE/src
RUN=$BASE/run
# bump when the source change below changes (the venv is rebuilt)
FIX=sqlite-migrations-1
export PIP_CACHE_DIR=$BASE/pip-cache PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONWARNINGS=ignore
export DISABLE_SQLALCHEMY_CEXT=1   # no optional C extensions to compile

log() { echo "[juno] $*" >&2; }
die() { echo "[juno] ERROR: $*" >&2; exit 1; }

python27() {
  local p
  for p in "${BM2_JUNO_PYTHON:-}" "$HOME/.pyenv/versions/2.7.18/bin/python" "$(command -v python2.7 || true)"; do
    if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  die "no Python 2.7 (Juno's Ironic runs on nothing newer): set BM2_JUNO_PYTHON, or 'pyenv install 2.7.18'"
}

# What the venv was built from: the tarball's and the pins' digests, and the source change.
spec() { echo "$(sha256sum < "$TARBALL" | cut -c1-16) $(sha256sum < "$PINS" | cut -c1-16) $FIX"; }

# The SQLite branch of Juno's two migrations (idempotent; refuses sources it does not recognise).
fix_sqlite_migrations() {
  "$VENV/bin/python" - "$SRC/ironic/db/sqlalchemy/alembic/versions" <<'PY'
import io, os, sys
d = sys.argv[1]
MARK = "# bm2ironic scripts/juno.sh:"
def edit(name, old, new):
    path = os.path.join(d, name)
    text = io.open(path, encoding="utf-8").read()
    if MARK in text:
        return
    if text.count(old) != 1:
        sys.exit("juno.sh: %s is not the 2014.2 migration this script knows: not changed" % name)
    io.open(path, "w", encoding="utf-8").write(text.replace(old, new))

edit("3bea56f25597_add_unique_constraint_to_instance_uuid.py",
     '    op.create_unique_constraint("uniq_nodes0instance_uuid", "nodes",\n'
     '                                ["instance_uuid"])\n',
     "    " + MARK + " SQLite has no ALTER TABLE ... ADD CONSTRAINT;\n"
     "    # there a UNIQUE index under the constraint's name is the same thing.\n"
     "    if op.get_bind().dialect.name == 'sqlite':\n"
     "        op.create_index('uniq_nodes0instance_uuid', 'nodes', ['instance_uuid'], unique=True)\n"
     "    else:\n"
     "        op.create_unique_constraint('uniq_nodes0instance_uuid', 'nodes', ['instance_uuid'])\n")
edit("487deb87cc9d_add_conductor_affinity_and_online.py",
     "    op.add_column(\n        'nodes',\n",
     "    " + MARK + " SQLite cannot ALTER TABLE to add a foreign key, but\n"
     "    # accepts one written inline in ADD COLUMN.\n"
     "    if op.get_bind().dialect.name == 'sqlite':\n"
     "        op.execute('ALTER TABLE nodes ADD COLUMN conductor_affinity INTEGER '\n"
     "                   'CONSTRAINT nodes_conductor_affinity_fk REFERENCES conductors (id)')\n"
     "        return\n"
     "    op.add_column(\n        'nodes',\n")
PY
}

install() {
  [ -f "$TARBALL" ] || die "no Juno Ironic sources at $TARBALL: set JUNO_IRONIC_TARBALL to a tar.gz of openstack/ironic tag 2014.2 (git archive, see docs/juno.md) or JUNO_REFERENCE_DIR to a directory holding ironic-2014.2.tar.gz"
  mkdir -p "$BASE"
  exec 9>"$BASE/install.lock"
  flock 9   # one install at a time (test.sh installs in the background while others may ask)
  local want; want=$(spec)
  if [ -x "$VENV/bin/ironic-api" ] && [ "$(cat "$VENV/.spec" 2>/dev/null)" = "$want" ]; then
    echo "$VENV"; return 0
  fi
  local t0=$SECONDS py; py=$(python27)
  log "building $VENV: Ironic 2014.2 from $TARBALL on $("$py" -V 2>&1) (about a minute; cached afterwards)"
  rm -rf "$VENV" "$SRC" "$BASE/unpack"
  mkdir -p "$BASE/unpack"
  tar -xzf "$TARBALL" -C "$BASE/unpack"
  local top; top=$(dirname "$(find "$BASE/unpack" -maxdepth 2 -name setup.cfg | head -1)")
  [ -f "$top/ironic/__init__.py" ] || die "$TARBALL does not hold the openstack/ironic sources"
  mv "$top" "$SRC"; rm -rf "$BASE/unpack"

  # virtualenv for Python 2.7 (the last that still makes py2 venvs), kept under $BASE
  if ! "$py" -m virtualenv --version >/dev/null 2>&1 \
      && ! PYTHONPATH=$BASE/bootstrap "$py" -m virtualenv --version >/dev/null 2>&1; then
    "$py" -m pip install -q --target "$BASE/bootstrap" 'virtualenv<20.22' >"$BASE/bootstrap.log" 2>&1 \
      || { tail -20 "$BASE/bootstrap.log" >&2; die "installing virtualenv for Python 2.7 failed"; }
  fi
  PYTHONPATH=$BASE/bootstrap "$py" -m virtualenv -q --app-data "$BASE/virtualenv-data" "$VENV" >/dev/null

  fix_sqlite_migrations
  grep -iv '^websockify' "$SRC/requirements.txt" > "$BASE/requirements.txt"
  local plog=$BASE/pip.log
  : >"$plog"
  pip_c() { "$VENV/bin/pip" install -c "$PINS" "$@" >>"$plog" 2>&1 || { tail -30 "$plog" >&2; die "pip install $* failed (log: $plog)"; }; }
  # order matters: pbr's setup-time needs first, then Ironic's requirements
  pip_c pbr six
  pip_c extras python-mimeparse testtools python-subunit fixtures testrepository
  pip_c -r "$BASE/requirements.txt" PyMySQL
  PBR_VERSION=2014.2 "$VENV/bin/pip" install --no-deps -e "$SRC" >>"$plog" 2>&1 || { tail -30 "$plog" >&2; die "installing Ironic 2014.2 failed (log: $plog)"; }

  # every installed package must be pinned at its version: a drift is an error, not a surprise
  "$VENV/bin/python" - "$PINS" <<'PY' || die "the venv does not match scripts/juno-ironic-pins.txt"
import re, sys, pkg_resources
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
pins = dict((norm(l.split("==")[0]), l.split("==")[1].strip()) for l in open(sys.argv[1]) if "==" in l and not l.startswith("#"))
bad = ["%s %s (pinned: %s)" % (d.project_name, d.version, pins.get(norm(d.project_name)))
       for d in pkg_resources.working_set
       if norm(d.project_name) not in ("pip", "setuptools", "wheel", "ironic", "python", "wsgiref")
       and pins.get(norm(d.project_name)) != d.version]
if bad:
    sys.exit("not as pinned: " + ", ".join(sorted(bad)))
PY
  "$VENV/bin/python" -c 'import ironic.api.app, ironic.conductor.manager, pymysql' 2>"$BASE/import.log" \
    || { cat "$BASE/import.log" >&2; die "Ironic 2014.2 does not import"; }
  echo "$want" > "$VENV/.spec"
  log "Ironic 2014.2 ready in $((SECONDS - t0)) s"
  echo "$VENV"
}

need_venv() { [ -x "$VENV/bin/ironic-api" ] || die "no Juno venv at $VENV: run '$0 install' first"; }

conf() {   # DIR URL PORT
  local dir=$1 url=$2 port=$3
  mkdir -p "$dir/state/lock"
  cp -f "$SRC/etc/ironic/policy.json" "$dir/policy.json"
  cat > "$dir/ironic.conf" <<CONF
[DEFAULT]
auth_strategy = noauth
# in-process transport: API and conductor reach each other only inside one process (allinone)
rpc_backend = fake
enabled_drivers = fake,pxe_ipmitool,pxe_ssh
host = bm2ironic-juno-conductor
state_path = $dir/state
lock_path = $dir/state/lock
policy_file = $dir/policy.json
log_file = $dir/ironic.log
verbose = true
debug = false

[api]
host_ip = 127.0.0.1
port = $port

[database]
connection = $url
CONF
  echo "$dir/ironic.conf"
}

dbsync() {   # URL
  local url=${1:?usage: dbsync URL}
  need_venv
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/bm2ironic-juno-dbsync.XXXXXX")
  local c; c=$(conf "$dir" "$url" 0)
  if ! "$VENV/bin/ironic-dbsync" --config-file "$c" upgrade >"$dir/dbsync.log" 2>&1; then
    tail -30 "$dir/dbsync.log" >&2; die "ironic-dbsync upgrade failed on ${url//:*@/:***@} (work dir $dir)"
  fi
  "$VENV/bin/ironic-dbsync" --config-file "$c" version 2>/dev/null | tail -1
  rm -rf "$dir"
}

# ------------------------------------------------------------------ background processes
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
ours() { tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -q "$VENV/bin/"; }

start_bg() {   # NAME PORT|'' URL CMD...
  local name=$1 port=$2 url=$3; shift 3
  need_venv
  mkdir -p "$RUN"
  if [ -f "$RUN/$name.pid" ] && alive "$(cat "$RUN/$name.pid")"; then
    die "$name is already running (PID $(cat "$RUN/$name.pid")): '$0 stop' first"
  fi
  if [ -n "$port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "127.0.0.1:$port is in use"
  fi
  local c; c=$(conf "$BASE/$name" "$url" "${port:-0}")
  setsid "$@" --config-file "$c" >"$BASE/$name/stderr.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" > "$RUN/$name.pid"
  for _ in $(seq 1 120); do
    if [ -n "$port" ]; then
      curl -s -m 2 "http://127.0.0.1:$port/v1" 2>/dev/null | grep -q '"id"' && break
    else
      grep -q 'Created RPC server\|Starting' "$BASE/$name/ironic.log" 2>/dev/null && break
    fi
    alive "$pid" || { tail -20 "$BASE/$name/stderr.log" "$BASE/$name/ironic.log" >&2 2>/dev/null; die "$name exited"; }
    sleep 0.5
  done
  log "$name (Ironic 2014.2) running, PID $pid${port:+, http://127.0.0.1:$port}; log $BASE/$name/ironic.log"
  echo "$pid"
}

allinone_py() {
  cat > "$BASE/allinone.py" <<'PY'
# API and conductor of Juno's Ironic in one process, so that the in-process `fake` RPC transport
# carries the API's calls to the conductor (scripts/juno.sh allinone).
import ironic  # noqa: eventlet's monkey patching (os=False), as ironic-api and ironic-conductor get it
import sys
import eventlet
from oslo.config import cfg
from oslo import messaging
from oslo.messaging._drivers import impl_fake

# Juno's API calls a conductor on the topic `<topic>.<host>`, with no server: the queue name a real
# broker gives a server's own queue. The fake driver keeps (topic, server) apart, so a conductor
# listening as server <host> of <topic> never hears it: listen on `<topic>.<host>` too.
_listen = impl_fake.FakeDriver.listen
def _listen_as_brokers_do(self, target):
    listener = _listen(self, target)
    if target.server:
        t = messaging.Target(topic='%s.%s' % (target.topic, target.server), exchange=listener._targets[0].exchange)
        self._exchange_manager.get_exchange(t.exchange).ensure_queue(t)
        listener._targets.append(t)
    return listener
impl_fake.FakeDriver.listen = _listen_as_brokers_do
from wsgiref import simple_server
from six.moves import socketserver
from ironic.api import app
from ironic.common import service as ironic_service
from ironic.openstack.common import service

class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    pass

ironic_service.prepare_service(sys.argv)
conf = cfg.CONF
launcher = service.launch(ironic_service.RPCService(conf.host, 'ironic.conductor.manager', 'ConductorManager'))
api = simple_server.make_server(conf.api.host_ip, conf.api.port, app.VersionSelectorApplication(), server_class=Server)
eventlet.spawn(api.serve_forever)
launcher.wait()
PY
}

stop() {
  local f pid
  for f in "$RUN"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if alive "$pid" && ours "$pid"; then
      kill -TERM "$pid"
      for _ in $(seq 1 20); do alive "$pid" || break; sleep 0.25; done
      alive "$pid" && kill -KILL "$pid"
      log "stopped $(basename "$f" .pid) (PID $pid)"
    fi
    rm -f "$f"
  done
}

case "${1:-}" in
  install) install ;;
  env) v=$(install); echo "export BM2IRONIC_TEST_JUNO_VENV='$v'" ;;
  dbsync) shift; dbsync "$@" ;;
  conf) shift; need_venv; conf "$@" ;;
  api) shift; start_bg "api-${2:?usage: api URL PORT}" "$2" "$1" "$VENV/bin/ironic-api" ;;
  conductor) shift; start_bg conductor "" "${1:?usage: conductor URL}" "$VENV/bin/ironic-conductor" ;;
  allinone) shift; need_venv; allinone_py
    start_bg "allinone-${2:?usage: allinone URL PORT}" "$2" "$1" "$VENV/bin/python" "$BASE/allinone.py" ;;
  stop) stop ;;
  *) sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
