#!/usr/bin/env bash
# nova.sh: a modern Nova (PyPI nova==34.0.0) in a cached venv, only for its option registrations:
# tests/it/config.rs loads the nova.conf `bm2ironic config --target modern` writes with Nova's own
# oslo.config (scripts/conf-check.py). No Nova service is started.
#
# Usage: scripts/nova.sh install   create the venv (cached in $BM2_NOVA_VENV) and print its path;
#                                  a second run only checks it (idempotent)
set -euo pipefail

VENV=${BM2_NOVA_VENV:-/tmp/bm2ironic-nova-venv}
SPEC="nova==34.0.0"
log() { echo "[nova] $*" >&2; }

install() {
  if [ ! -x "$VENV/bin/nova-compute" ] || [ "$(cat "$VENV/.spec" 2>/dev/null)" != "$SPEC" ]; then
    log "creating $VENV with $SPEC (a few minutes the first time, cached afterwards)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check $SPEC
    "$VENV/bin/python" -c "import nova.conf" || { log "the installed nova does not import"; exit 1; }
    echo "$SPEC" > "$VENV/.spec"
  fi
  echo "$VENV"
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
