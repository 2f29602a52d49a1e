#!/usr/bin/env bash
# juno.sh: the REAL OpenStack Ironic of the Juno release (git tag 2014.2), the release the nova_bm
# upgrade targets, for the tests: its own `ironic-dbsync upgrade` makes the schema, its own API
# reads what bm2ironic wrote, its conductor takes the nodes over; and Juno's nova-compute with the
# Ironic driver (nova-* commands). Python 2.7, pinned 2014-era packages, loopback only, no auth.
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
#        scripts/juno.sh allinone-fg URL PORT  the same in the foreground
#        scripts/juno.sh stop              stop what api/conductor/allinone started (PID files)
#        scripts/juno.sh nova-install      Nova 2014.2 (nova-compute, Ironic driver) in its own venv
#        scripts/juno.sh nova-env          nova-install, then print `export BM2IRONIC_TEST_JUNO_NOVA_VENV=...`
#        scripts/juno.sh nova-dbsync URL   Juno's `nova-manage db sync` on URL, then print its version
#        scripts/juno.sh nova-schema       a SQLite file with that schema, made once and kept; its path
#        scripts/juno.sh baremetal-dbsync URL  Juno's `nova-baremetal-manage db sync` (nova baremetal's
#                                          own nova_bm schema) on URL, then print its version (10)
#        scripts/juno.sh nova-conf DIR DB_URL IRONIC_URL HOST [INTERVAL]  write DIR/nova.conf, print it
#                                          (DB_URL `env`: $BM2_JUNO_DB_URL; BM2_JUNO_IRONIC_TOKEN: a token)
#        scripts/juno.sh nova-compute CONF nova-compute in the foreground
#        scripts/juno.sh nova-all CONF     nova-api, -conductor, -scheduler and -compute in ONE process
#                                          in the foreground (scripts/juno-nova-all.py says why)
#        scripts/juno.sh deploy-helper CONF PORT  nova baremetal's deploy helper on 127.0.0.1:PORT in the
#                                          foreground, its disk write a stub (scripts/juno-deploy-helper.py)
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

. "$(dirname "${BASH_SOURCE[0]}")/lib/python27.sh"

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
  if ! command -v qemu-img >/dev/null; then
    # Juno's pxe driver runs `qemu-img info` on every image it fetches (the takeover does)
    . "$REPO/scripts/lib/apt.sh"
    apt_ensure qemu-utils || die "installing qemu-utils failed"
  fi
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

[conductor]
# the deploy ramdisk's callback URL (else Juno asks Keystone's catalog for it)
api_url = http://127.0.0.1:$port
sync_power_state_interval = ${BM2_JUNO_SYNC_INTERVAL:-60}
sync_local_state_interval = ${BM2_JUNO_SYNC_INTERVAL:-180}
# true (Juno's default): a machine found in another power state than recorded is put back
force_power_state_during_sync = ${BM2_JUNO_FORCE_POWER_SYNC:-true}

[pxe]
# the takeover writes each active node's PXE config and fetches its images: here, not /tftpboot
tftp_server = 127.0.0.1
tftp_root = $dir/tftpboot
tftp_master_path = $dir/tftpboot/master_images
instance_master_path = $dir/master_images
images_path = $dir/images

[dhcp]
# no Neutron here: the takeover's DHCP update (Neutron port options) is not made
dhcp_provider = none

[ipmi]
# Juno waits 5 s between two ipmitool commands to one BMC (real BMCs choke on more); the tests' fake
# BMCs answer at once, and a power action (set, then poll) takes 3 s instead of 12
min_command_interval = ${BM2_JUNO_IPMI_INTERVAL:-1}
CONF
  if [ -n "${BM2_JUNO_PXE_APPEND:-}" ]; then
    # the kernel command line's extra arguments in the PXE configs (a test machine's serial console)
    printf '\n[pxe]\npxe_append_params = %s\n' "$BM2_JUNO_PXE_APPEND" >> "$dir/ironic.conf"
  fi
  mkdir -p "$dir/tftpboot/master_images" "$dir/master_images" "$dir/images"
  if [ -n "${BM2_JUNO_GLANCE:-}" ]; then
    # Glance (images at the takeover: scripts/glance.sh in the tests) and the Keystone v2.0 the
    # conductor gets its admin token from for Glance (BM2_JUNO_KEYSTONE_V2 host:port and
    # BM2_JUNO_KEYSTONE_V2_PASSWORD, admin's: scripts/keystone-pike.sh in the tests; docs/juno.md)
    cat >> "$dir/ironic.conf" <<CONF

[glance]
glance_api_servers = $BM2_JUNO_GLANCE
auth_strategy = keystone

[keystone_authtoken]
auth_uri = http://${BM2_JUNO_KEYSTONE_V2:-$BM2_JUNO_GLANCE}/
auth_version = v2.0
admin_user = admin
admin_password = ${BM2_JUNO_KEYSTONE_V2_PASSWORD:-unused}
admin_tenant_name = admin
CONF
  fi
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
# The fake driver checks each message with the standard json module, stricter than the broker drivers,
# which send with oslo.messaging's jsonutils (a datetime becomes a string): Juno's Node object has no
# serializer for provision_updated_at, which a tear-down sets, so the API's next update_node call to the
# conductor (Nova's patch after `nova delete`) goes through a broker but not the fake. Check as they send.
from oslo.messaging.openstack.common import jsonutils
impl_fake.FakeDriver._check_serialize = staticmethod(jsonutils.dumps)
# The configuration first: the conductor's periodic tasks take their spacing (sync_power_state_interval,
# sync_local_state_interval) from it when ironic.conductor.manager is imported, which the API's
# modules do.
from ironic.common import service as ironic_service
ironic_service.prepare_service(sys.argv)
from wsgiref import simple_server
from six.moves import socketserver
from ironic.api import app
from ironic.openstack.common import service

class Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    pass

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


# ------------------------------------------------------------------ Juno nova-compute (Ironic driver)
# Nova 2014.2 from JUNO_NOVA_TARBALL, else $JUNO_REFERENCE_DIR/nova-2014.2.tar.gz; pins in
# scripts/juno-nova-pins.txt; venv $BASE/nova-venv, sources $BASE/nova-src. Two changes, made at
# install, each for this machine and not for Juno's behaviour: Nova's sslutils names
# ssl.PROTOCOL_SSLv3, which a Python 2.7 built on OpenSSL 3 lacks (made optional), and
# sqlalchemy-migrate's SQLite table rebuild renames tables, which SQLite >= 3.26 follows in other
# tables' foreign keys (it leaves them naming the dropped `migration_tmp`): the connection gets
# `PRAGMA legacy_alter_table = ON`, SQLite's own switch back to the old behaviour.
NOVA_TARBALL=${JUNO_NOVA_TARBALL:-$REF/nova-2014.2.tar.gz}
NOVA_PINS=$REPO/scripts/juno-nova-pins.txt
NOVA_VENV=$BASE/nova-venv
NOVA_SRC=$BASE/nova-src
NOVA_FIX=sslv3-legacy-alter-ccm-2

nova_spec() { echo "$(sha256sum < "$NOVA_TARBALL" | cut -c1-16) $(sha256sum < "$TARBALL" | cut -c1-16) $(sha256sum < "$NOVA_PINS" | cut -c1-16) $NOVA_FIX"; }

nova_fix() {   # FILE OLD NEW (python literals on stdin)
  "$NOVA_VENV/bin/python" - "$@" <<'PY'
import io, sys
MARK = "bm2ironic scripts/juno.sh"
path, old, new = sys.argv[1], sys.argv[2].decode("string_escape"), sys.argv[3].decode("string_escape")
text = io.open(path, encoding="utf-8").read()
if MARK in text:
    sys.exit(0)
if text.count(old.decode("utf-8")) != 1:
    sys.exit("juno.sh: %s is not the file this script knows: not changed" % path)
io.open(path, "w", encoding="utf-8").write(text.replace(old.decode("utf-8"), new.decode("utf-8")))
for ext in ("c", "o"):
    try:
        import os; os.unlink(path + ext)
    except OSError:
        pass
PY
}

nova_install() {
  [ -f "$NOVA_TARBALL" ] || die "no Juno Nova sources at $NOVA_TARBALL: set JUNO_NOVA_TARBALL to a tar.gz of openstack/nova tag 2014.2 (git archive, see docs/juno.md) or JUNO_REFERENCE_DIR to a directory holding nova-2014.2.tar.gz"
  mkdir -p "$BASE"
  exec 8>"$BASE/nova-install.lock"
  flock 8
  local want; want=$(nova_spec)
  if [ -x "$NOVA_VENV/bin/nova-compute" ] && [ "$(cat "$NOVA_VENV/.spec" 2>/dev/null)" = "$want" ]; then
    echo "$NOVA_VENV"; return 0
  fi
  local t0=$SECONDS py; py=$(python27)
  log "building $NOVA_VENV: Nova 2014.2 from $NOVA_TARBALL (one to two minutes; cached afterwards)"
  rm -rf "$NOVA_VENV" "$NOVA_SRC" "$BASE/nova-unpack"
  mkdir -p "$BASE/nova-unpack"
  tar -xzf "$NOVA_TARBALL" -C "$BASE/nova-unpack"
  local top; top=$(dirname "$(find "$BASE/nova-unpack" -maxdepth 2 -name setup.cfg | head -1)")
  [ -f "$top/nova/virt/ironic/driver.py" ] || die "$NOVA_TARBALL does not hold the openstack/nova 2014.2 sources"
  mv "$top" "$NOVA_SRC"; rm -rf "$BASE/nova-unpack"
  if ! PYTHONPATH=$BASE/bootstrap "$py" -m virtualenv --version >/dev/null 2>&1; then
    "$py" -m pip install -q --target "$BASE/bootstrap" 'virtualenv<20.22' >"$BASE/bootstrap.log" 2>&1 \
      || { tail -20 "$BASE/bootstrap.log" >&2; die "installing virtualenv for Python 2.7 failed"; }
  fi
  PYTHONPATH=$BASE/bootstrap "$py" -m virtualenv -q --app-data "$BASE/virtualenv-data" "$NOVA_VENV" >/dev/null
  local plog=$BASE/nova-pip.log PIP="$NOVA_VENV/bin/pip"
  : >"$plog"
  # one pip command: every wheel is built before pbr 0.10.8 itself is installed
  env -u PBR_VERSION "$PIP" install --no-deps -r "$NOVA_PINS" >>"$plog" 2>&1 \
    || { tail -30 "$plog" >&2; die "pip install -r $NOVA_PINS failed (log: $plog)"; }
  # pbr 0.10.8 cannot build Nova on setuptools 44: build with pbr 5.11.1, then put 0.10.8 back
  "$PIP" install --no-deps 'pbr==5.11.1' >>"$plog" 2>&1 || die "pbr (log: $plog)"
  PBR_VERSION=2014.2 "$PIP" install --no-deps -e "$NOVA_SRC" >>"$plog" 2>&1 \
    || { tail -30 "$plog" >&2; die "installing Nova 2014.2 failed (log: $plog)"; }
  "$PIP" install --no-deps "$(grep -i '^pbr==' "$NOVA_PINS")" >>"$plog" 2>&1 || die "pbr (log: $plog)"
  nova_fix "$NOVA_SRC/nova/openstack/common/sslutils.py" \
    '    "sslv3": ssl.PROTOCOL_SSLv3\n}\n' \
    '}\n# bm2ironic scripts/juno.sh: a Python 2.7 built on OpenSSL 3 has no PROTOCOL_SSLv3\ntry:\n    _SSL_PROTOCOLS["sslv3"] = ssl.PROTOCOL_SSLv3\nexcept AttributeError:\n    pass\n' \
    || die "sslutils.py"
  local site; site=$("$NOVA_VENV/bin/python" -c 'import migrate, os; print(os.path.dirname(migrate.__file__))')
  nova_fix "$site/changeset/databases/sqlite.py" \
    "        self.append('ALTER TABLE %s RENAME TO migration_tmp' % table_name)\n" \
    "        # bm2ironic scripts/juno.sh: SQLite >= 3.26 rewrites other tables' foreign keys to\n        # follow a RENAME (to the dropped migration_tmp): the pre-3.26 behaviour for this connection\n        self.append('PRAGMA legacy_alter_table = ON')\n        self.execute()\n        self.append('ALTER TABLE %s RENAME TO migration_tmp' % table_name)\n" \
    || die "sqlalchemy-migrate's sqlite.py"
  # Juno's ClusteredComputeManager (compute_manager = ironic.nova.compute.manager....) ships with
  # Ironic, not Nova: the four files of ironic/nova/compute from the Ironic tarball, on the path
  local shim=$NOVA_VENV/ironic-compute-manager
  [ -f "$TARBALL" ] || die "no Juno Ironic sources at $TARBALL (ClusteredComputeManager comes from them)"
  mkdir -p "$shim"
  tar -xzf "$TARBALL" -C "$shim" --strip-components=1 --wildcards '*/ironic/__init__.py' \
    '*/ironic/nova/__init__.py' '*/ironic/nova/compute/__init__.py' '*/ironic/nova/compute/manager.py'
  echo "$shim" > "$NOVA_VENV/lib/python2.7/site-packages/bm2ironic-ironic-compute-manager.pth"
  "$NOVA_VENV/bin/python" -c 'import nova.cmd.compute, nova.virt.ironic.driver, pymysql, ironic.nova.compute.manager' 2>"$BASE/nova-import.log" \
    || { cat "$BASE/nova-import.log" >&2; die "Nova 2014.2 does not import"; }
  echo "$want" > "$NOVA_VENV/.spec"
  log "Nova 2014.2 ready in $((SECONDS - t0)) s"
  echo "$NOVA_VENV"
}

need_nova() { [ -x "$NOVA_VENV/bin/nova-compute" ] || die "no Juno Nova venv at $NOVA_VENV: run '$0 nova-install' first"; }

nova_dbsync() {   # URL ('env': $BM2_JUNO_DB_URL, to keep a password off the command line)
  local url=${1:?usage: nova-dbsync URL}
  [ "$url" != env ] || url=${BM2_JUNO_DB_URL:?BM2_JUNO_DB_URL is not set}
  need_nova
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/bm2ironic-juno-nova-dbsync.XXXXXX")
  printf '[DEFAULT]\nrpc_backend = fake\nlog_dir = %s\n[database]\nconnection = %s\n' "$dir" "$url" > "$dir/nova.conf"
  if ! "$NOVA_VENV/bin/nova-manage" --config-file "$dir/nova.conf" db sync >"$dir/dbsync.log" 2>&1; then
    tail -30 "$dir/dbsync.log" >&2; die "nova-manage db sync failed on ${url//:*@/:***@} (work dir $dir)"
  fi
  "$NOVA_VENV/bin/nova-manage" --config-file "$dir/nova.conf" db version 2>/dev/null | tail -1
  rm -rf "$dir"
}

# nova baremetal's own database (nova_bm): Juno's `nova-baremetal-manage db sync` runs its
# sqlalchemy-migrate repository (nova/virt/baremetal/db/sqlalchemy/migrate_repo, versions 001-010) on
# [baremetal] sql_connection; the tests compare what it makes with assets/nova_bm (docs/juno.md).
baremetal_dbsync() {   # URL ('env': $BM2_JUNO_DB_URL)
  local url=${1:?usage: baremetal-dbsync URL}
  [ "$url" != env ] || url=${BM2_JUNO_DB_URL:?BM2_JUNO_DB_URL is not set}
  need_nova
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/bm2ironic-juno-bm-dbsync.XXXXXX")
  printf '[DEFAULT]\nrpc_backend = fake\nlog_dir = %s\n[baremetal]\nsql_connection = %s\n' "$dir" "$url" > "$dir/nova.conf"
  if ! "$NOVA_VENV/bin/nova-baremetal-manage" --config-file "$dir/nova.conf" db sync >"$dir/dbsync.log" 2>&1; then
    tail -30 "$dir/dbsync.log" >&2; die "nova-baremetal-manage db sync failed on ${url//:*@/:***@} (work dir $dir)"
  fi
  "$NOVA_VENV/bin/nova-baremetal-manage" --config-file "$dir/nova.conf" db version 2>/dev/null | tail -1
  rm -rf "$dir"
}

# A SQLite file holding what Juno's `nova-manage db sync` makes (version 254), made once per venv and
# kept: the tests copy it (a sync on SQLite takes about 15 s).
nova_schema() {
  need_nova
  local f=$BASE/nova-schema-$(nova_spec | tr ' ' '-').sqlite
  exec 7>"$BASE/nova-schema.lock"
  flock 7
  if [ ! -s "$f" ]; then
    rm -f "$f.tmp"
    local v; v=$(nova_dbsync "sqlite:///$f.tmp")
    [ "$v" = 254 ] || die "nova-manage db sync ended at version '$v', not 254"
    mv "$f.tmp" "$f"
  fi
  echo "$f"
}

# nova.conf of a Juno nova-compute that manages Ironic's nodes (the runbook's step 7). Written here
# by hand, in this one function, until `bm2ironic config` writes it.
nova_conf() {   # DIR DB_URL IRONIC_URL HOST [SYNC_INTERVAL]
  local dir=$1 url=$2 ironic=$3 host=$4 sync=${5:-10}
  [ "$url" != env ] || url=${BM2_JUNO_DB_URL:?BM2_JUNO_DB_URL is not set}
  # a Keystone token for Ironic (BM2_JUNO_IRONIC_TOKEN), else one a noauth Ironic does not check
  local token=${BM2_JUNO_IRONIC_TOKEN:-bm2ironic-noauth}
  mkdir -p "$dir/state/lock" "$dir/state/instances"
  : > "$dir/nova.conf"; chmod 600 "$dir/nova.conf"
  cat > "$dir/nova.conf" <<CONF
[DEFAULT]
host = $host
state_path = $dir/state
lock_path = $dir/state/lock
instances_path = $dir/state/instances
log_file = $dir/nova-compute.log
debug = true
# Juno's defaults, and ironicclient/keystoneclient at INFO: at DEBUG they log each request's token
# and each node's driver_info with its IPMI password
default_log_levels = amqp=WARN,amqplib=WARN,boto=WARN,qpid=WARN,sqlalchemy=WARN,suds=INFO,oslo.messaging=INFO,iso8601=WARN,requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,websocket=WARN,keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,ironicclient=INFO,keystoneclient=INFO
compute_driver = nova.virt.ironic.IronicDriver
compute_manager = ironic.nova.compute.manager.ClusteredComputeManager
firewall_driver = nova.virt.firewall.NoopFirewallDriver
scheduler_host_manager = nova.scheduler.ironic_host_manager.IronicHostManager
ram_allocation_ratio = 1.0
reserved_host_memory_mb = 0
# no broker: nova-compute calls its conductor in-process ([conductor] use_local)
rpc_backend = fake
rootwrap_config = $NOVA_SRC/etc/nova/rootwrap.conf
sync_power_state_interval = $sync
update_resources_interval = $sync
# the periodic tasks start at once, not after a random delay of up to 60 s
periodic_fuzzy_delay = 0
heal_instance_info_cache_interval = -1
image_cache_manager_interval = -1
network_api_class = nova.network.api.API

[conductor]
use_local = True

[database]
connection = $url

[ironic]
api_endpoint = $ironic
# Juno's driver authenticates with Keystone v2.0 only (admin_username/admin_password/admin_url);
# a token is what works against today's Keystone v3 (docs/juno.md)
admin_auth_token = $token
api_version = 1
api_max_retries = 30
api_retry_interval = 2
CONF
  echo "$dir/nova.conf"
}

nova_compute() {   # CONF: nova-compute in the foreground (the caller backgrounds it)
  need_nova
  exec "$NOVA_VENV/bin/nova-compute" --config-file "${1:?usage: nova-compute CONF}"
}

# Nova's control plane (API on [DEFAULT] osapi_compute_listen_port, conductor, scheduler, compute) in
# one process, where oslo.messaging's fake transport carries their RPC (no broker); the foreground
nova_all() {   # CONF
  need_nova
  exec "$NOVA_VENV/bin/python" "$REPO/scripts/juno-nova-all.py" --config-file "${1:?usage: nova-all CONF}"
}

# nova baremetal's deploy helper (Juno's code, its iSCSI disk write a stub: the script says which parts)
deploy_helper() {   # CONF PORT
  need_nova
  exec "$NOVA_VENV/bin/python" "$REPO/scripts/juno-deploy-helper.py" --config-file "${1:?usage: deploy-helper CONF PORT}" "${2:?usage: deploy-helper CONF PORT}"
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
  allinone-fg) shift; need_venv; allinone_py   # the same in the foreground (a test's own child)
    d="$BASE/allinone-${2:?usage: allinone-fg URL PORT}"; rm -rf "$d"; c=$(conf "$d" "$1" "$2")
    exec "$VENV/bin/python" "$BASE/allinone.py" --config-file "$c" 2>"$d/stderr.log" ;;
  stop) stop ;;
  nova-install) nova_install ;;
  nova-env) v=$(nova_install); echo "export BM2IRONIC_TEST_JUNO_NOVA_VENV='$v'" ;;
  nova-dbsync) shift; nova_dbsync "$@" ;;
  nova-schema) nova_schema ;;
  baremetal-dbsync) shift; baremetal_dbsync "$@" ;;
  nova-conf) shift; need_nova; nova_conf "$@" ;;
  nova-compute) shift; nova_compute "$@" ;;
  nova-all) shift; nova_all "$@" ;;
  deploy-helper) shift; deploy_helper "$@" ;;
  *) sed -n '2,32p' "$0" >&2; exit 2 ;;
esac
