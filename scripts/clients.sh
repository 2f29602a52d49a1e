#!/usr/bin/env bash
# clients.sh: the real OpenStack command-line clients the end-to-end rehearsal checks with, each in a
# cached venv (installed on first use, then reused).
#
# Usage: scripts/clients.sh osc     python-openstackclient + python-ironicclient; prints the venv path
set -euo pipefail
export PYTHONWARNINGS=ignore
log() { echo "[clients] $*" >&2; }

osc() {
  local venv=${BM2_OSC_VENV:-/tmp/bm2ironic-osc-venv} spec="python-openstackclient python-ironicclient"
  if [ ! -x "$venv/bin/openstack" ] || [ "$(cat "$venv/.spec" 2>/dev/null)" != "$spec" ]; then
    log "installing $spec into $venv (about a minute, cached afterwards)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install -q --disable-pip-version-check $spec
    echo "$spec" > "$venv/.spec"
  fi
  echo "$venv"
}

case "${1:-}" in
  osc) osc ;;
  *) echo "usage: $0 osc" >&2; exit 2 ;;
esac
