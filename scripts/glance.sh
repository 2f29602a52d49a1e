#!/usr/bin/env bash
# glance.sh: a REAL Glance for the Juno tests (#29): PyPI glance==15.0.2 (Pike, 2017) on Python 2.7, in
# a cached venv, SQLite and the file store, behind a Keystone (keystonemiddleware's auth_token, as
# Glance's own "keystone" paste flavor) or none (paste's unauthenticated-context), loopback.
# Why not Juno's own Glance (2014.2): the package index offers no glance older than 15.0.2, and
# Juno's tag would be one more source tarball beside Nova's and Ironic's (../shared/reference/juno has
# none). Juno's clients (python-glanceclient 0.14/0.15 in Juno's Ironic and Nova) speak Glance's v1
# API, which Pike still serves (enable_v1_api, through glance-registry as in Juno) and Queens removed.
#
# Usage: scripts/glance.sh install              build the venv (cached) and print its path
#        scripts/glance.sh env                  install, then print `export BM2IRONIC_TEST_GLANCE_VENV=...`
#        scripts/glance.sh conf DIR API REG     write DIR/glance-api.conf, glance-registry.conf and their
#                                               paste files (API on 127.0.0.1:API, registry on :REG),
#                                               sync DIR/glance.sqlite with glance-manage; print DIR.
#                                               With BM2_GLANCE_KEYSTONE (host:port of a Keystone with
#                                               v3) and BM2_GLANCE_KEYSTONE_PASSWORD (admin's, project
#                                               admin): both behind it; else no Keystone
#        scripts/glance.sh api DIR              glance-api in the foreground
#        scripts/glance.sh registry DIR         glance-registry in the foreground
# The venv: BM2_GLANCE_VENV (default /tmp/bm2ironic-glance-venv), Python 2.7 as scripts/juno.sh finds it;
# pins: scripts/glance-pins.txt (a pip freeze made with openstack/requirements' pike-eol constraints).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${BM2_GLANCE_VENV:-/tmp/bm2ironic-glance-venv}
PINS=$REPO/scripts/glance-pins.txt
SPEC="glance==15.0.2 $(sha256sum < "$PINS" | cut -c1-16)"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONWARNINGS=ignore
log() { echo "[glance] $*" >&2; }
die() { echo "[glance] ERROR: $*" >&2; exit 1; }

. "$(dirname "${BASH_SOURCE[0]}")/lib/python27.sh"

install() {
  py27_venv glance "$VENV" "$SPEC" 'import glance.api.v1.router, glance.registry.api, glance_store' \
    -c "$PINS" glance==15.0.2 PyMySQL
}

need_venv() { [ -x "$VENV/bin/glance-api" ] || die "no Glance venv at $VENV: run '$0 install' first"; }

conf() {   # DIR API_PORT REG_PORT
  local dir=$1 api=$2 reg=$3 f port
  need_venv
  mkdir -p "$dir/images"
  for f in api registry; do
    port=$api; [ "$f" = api ] || port=$reg
    cat > "$dir/glance-$f.conf" <<CONF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $port
# one process (no forked workers)
workers = 0
log_file = $dir/glance-$f.log
# the v1 API (Juno's clients) and, as in Juno, its registry
enable_v1_api = True
enable_v2_api = True
registry_host = 127.0.0.1
registry_port = $reg

[database]
connection = sqlite:///$dir/glance.sqlite

[glance_store]
stores = file
default_store = file
filesystem_store_datadir = $dir/images

[paste_deploy]
config_file = $dir/glance-$f-paste.ini
CONF
    if [ -n "${BM2_GLANCE_KEYSTONE:-}" ]; then
      [ -n "${BM2_GLANCE_KEYSTONE_PASSWORD:-}" ] || die "BM2_GLANCE_KEYSTONE_PASSWORD: the password of the Keystone admin"
      # the password only in this file (mode 600), not on a command line
      cat >> "$dir/glance-$f.conf" <<CONF

[keystone_authtoken]
auth_uri = http://$BM2_GLANCE_KEYSTONE/v3
auth_url = http://$BM2_GLANCE_KEYSTONE/v3
auth_type = password
username = admin
password = $BM2_GLANCE_KEYSTONE_PASSWORD
project_name = admin
user_domain_id = default
project_domain_id = default
CONF
    fi
    chmod 600 "$dir/glance-$f.conf"
  done
  # behind Keystone: auth_token checks each request's token and the context is the token's (Glance's
  # "keystone" flavor); without: every request gets an admin context (unauthenticated-context)
  local ctx="unauthenticated-context"
  [ -z "${BM2_GLANCE_KEYSTONE:-}" ] || ctx="authtoken context"
  cat > "$dir/glance-api-paste.ini" <<PASTE
[pipeline:glance-api]
pipeline = versionnegotiation $ctx rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v1: apiv1app
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv1app]
paste.app_factory = glance.api.v1.router:API.factory

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

PASTE
  cat > "$dir/glance-registry-paste.ini" <<PASTE
[pipeline:glance-registry]
pipeline = $ctx registryapp

[app:registryapp]
paste.app_factory = glance.registry.api:API.factory
PASTE
  # the filters either pipeline names
  for f in api registry; do
    cat >> "$dir/glance-$f-paste.ini" <<'PASTE'

[filter:unauthenticated-context]
paste.filter_factory = glance.api.middleware.context:UnauthenticatedContextMiddleware.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory
PASTE
  done
  "$VENV/bin/glance-manage" --config-file "$dir/glance-api.conf" db_sync >"$dir/dbsync.log" 2>&1 \
    || { tail -20 "$dir/dbsync.log" >&2; die "glance-manage db_sync failed (work dir $dir)"; }
  echo "$dir"
}

case "${1:-}" in
  install) install ;;
  env) v=$(install); echo "export BM2IRONIC_TEST_GLANCE_VENV='$v'" ;;
  conf) shift; conf "$@" ;;
  api) need_venv; exec "$VENV/bin/glance-api" --config-file "${2:?usage: api DIR}/glance-api.conf" ;;
  registry) need_venv; exec "$VENV/bin/glance-registry" --config-file "${2:?usage: registry DIR}/glance-registry.conf" ;;
  *) sed -n '2,17p' "$0" >&2; exit 2 ;;
esac
