#!/usr/bin/env bash
# novaclient.sh: the last python-novaclient that still has the `baremetal-*` commands (PyPI
# python-novaclient==7.1.2), in a cached venv, for the proxy's real-client test.
#
# Usage: scripts/novaclient.sh install   create the venv (cached in $BM2_NOVACLIENT_VENV) and print
#                                        its path; a second run only checks it (idempotent)
# 7.1.2 dates from 2017: it imports pkg_resources (through pbr), which setuptools 81 removed, so an
# older setuptools is pinned; everything else is whatever pip resolves for novaclient's own ranges.
set -euo pipefail

VENV=${BM2_NOVACLIENT_VENV:-/tmp/bm2ironic-novaclient-venv}
SPEC="python-novaclient==7.1.2 setuptools<70"
log() { echo "[novaclient] $*" >&2; }

install() {
  if [ ! -x "$VENV/bin/nova" ] || [ "$(cat "$VENV/.spec" 2>/dev/null)" != "$SPEC" ]; then
    log "creating $VENV with $SPEC (about half a minute, cached afterwards)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install -q --disable-pip-version-check $SPEC
    "$VENV/bin/nova" --version >/dev/null 2>&1 || { log "the installed nova does not start"; "$VENV/bin/nova" --version; exit 1; }
    echo "$SPEC" > "$VENV/.spec"
  fi
  echo "$VENV"
}

case "${1:-}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
