#!/usr/bin/env bash
# packages.sh: installs, in one apt call, every Debian package the tests need (the list and why each:
# scripts/lib/apt.sh). scripts/test.sh runs it first, before any set-up starts in the background.
# Usage: scripts/packages.sh [install]   install what is missing
#        scripts/packages.sh missing     list what is missing (exit 0 either way)
set -euo pipefail
. "$(dirname "$0")/lib/apt.sh"
case "${1:-install}" in
  install) apt_ensure "${TEST_PACKAGES[@]}" ;;
  missing) apt_missing "${TEST_PACKAGES[@]}" ;;
  *) echo "usage: $0 [install|missing]" >&2; exit 2 ;;
esac
