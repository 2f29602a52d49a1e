#!/usr/bin/env bash
# release-check.sh: checks a release archive made by scripts/release.sh, as an operator would meet it.
#
# Usage: scripts/release-check.sh ARCHIVE.tar.gz      (ARCHIVE.tar.gz.sha256 beside it)
#
# Fails (exit 1, each failure named) unless:
# - `sha256sum -c` accepts the archive's sum;
# - the archive holds the binary, the man pages, the three completions, the proxy's systemd unit,
#   README.md, VERSION and every docs/*.md of this checkout;
# - the binary's highest GLIBC_ symbol version is 2.17 or lower (CentOS 7), its highest GCC_ (libgcc_s)
#   4.8.0 or lower (CentOS 7's gcc 4.8.5), it needs no libstdc++ and no library beyond glibc's and
#   libgcc_s;
# - `bm2ironic --version` names this checkout's commit (when run in a git tree) and glibc 2.17;
# - the bash completion loads: `complete -p bm2ironic` after sourcing it; zsh and fish parse theirs
#   (when installed);
# - `man -l` renders bm2ironic.1 (which lists the commands) and each bm2ironic-COMMAND.1 without a warning;
# - the binary runs: `demo --no-tui` builds the sandbox, `plan` names its blocking conflicts (exit 3),
#   `migrate --rehearse` with a decision for each loads it into SQLite and rolls back (exit 0).
# The same binary in an old Debian userland: scripts/release-chroot.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

ARCHIVE=$(realpath "${1:?usage: scripts/release-check.sh ARCHIVE.tar.gz}")
MAX_GLIBC=2.17
MAX_GCC=4.8.0
failures=0
ok() { echo "   ok   $*"; }
bad() { echo "   FAIL $*"; failures=$((failures + 1)); }
# version_le A B: A <= B in version order
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }

echo "== release check: $ARCHIVE =="
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if (cd "$(dirname "$ARCHIVE")" && sha256sum -c --quiet "$(basename "$ARCHIVE").sha256"); then
  ok "sha256sum -c $(basename "$ARCHIVE").sha256"
else
  bad "the SHA-256 sum does not match (or $ARCHIVE.sha256 is missing)"
fi

tar -xzf "$ARCHIVE" -C "$work"
top=$(find "$work" -mindepth 1 -maxdepth 1 -type d)
[ "$(basename "$top")" = "$(basename "$ARCHIVE" .tar.gz)" ] || bad "the archive's top directory is $(basename "$top"), not $(basename "$ARCHIVE" .tar.gz)"
expected=(bm2ironic man/bm2ironic.1 man/bm2ironic-migrate.1 man/bm2ironic-proxy.1 completions/bm2ironic.bash completions/_bm2ironic completions/bm2ironic.fish
  systemd/bm2ironic-proxy.service README.md VERSION)
for d in docs/*.md; do expected+=("$d"); done
missing=0
for f in "${expected[@]}"; do
  [ -s "$top/$f" ] || { bad "the archive lacks $f"; missing=1; }
done
[ -x "$top/bm2ironic" ] || bad "bm2ironic is not executable in the archive"
[ "$missing" = 1 ] || ok "the archive holds the binary, $(ls "$top"/man/*.1 | wc -l) man pages, 3 completions, the systemd unit, README, VERSION and $(ls "$top"/docs/*.md | wc -l) docs"
cmp -s "$top/systemd/bm2ironic-proxy.service" dist/systemd/bm2ironic-proxy.service \
  || bad "the archive's systemd unit differs from dist/systemd/bm2ironic-proxy.service"

BIN=$top/bm2ironic
glibc=$(objdump -T "$BIN" | { grep -o 'GLIBC_[0-9][0-9.]*' || true; } | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ -n "$glibc" ] && version_le "$glibc" "$MAX_GLIBC"; then
  ok "highest glibc symbol version GLIBC_$glibc (at most GLIBC_$MAX_GLIBC)"
else
  bad "the binary needs GLIBC_${glibc:-?}, above GLIBC_$MAX_GLIBC: $(objdump -T "$BIN" | grep "GLIBC_$glibc" | awk '{print $NF}' | head -5 | tr '\n' ' ')"
fi
gcc=$(objdump -T "$BIN" | { grep -o 'GCC_[0-9][0-9.]*' || true; } | sed 's/GCC_//' | sort -uV | tail -1)
if [ -z "$gcc" ] || version_le "$gcc" "$MAX_GCC"; then
  ok "highest libgcc_s symbol version GCC_${gcc:-none} (at most GCC_$MAX_GCC)"
else
  bad "the binary needs GCC_$gcc from libgcc_s, above GCC_$MAX_GCC"
fi
needed=$(readelf -d "$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
extra=$(tr ' ' '\n' <<<"$needed" | grep -v '^$' | grep -vE '^(libc|libm|libpthread|libdl|librt|libutil|libgcc_s)\.so\.[0-9]+$|^ld-linux-x86-64\.so\.2$' || true)
if [ -z "$extra" ]; then ok "needs only $needed"; else bad "needs libraries beyond glibc and libgcc_s: $extra"; fi

version=$("$BIN" --version)
[ "$version" = "$(cat "$top/VERSION")" ] || bad "VERSION says '$(cat "$top/VERSION")', the binary '$version'"
if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
  if [[ $version == *"commit $commit"* ]]; then ok "--version names the commit: $version"; else bad "--version does not name commit $commit: $version"; fi
else
  echo "   (not in a git checkout: the commit in --version is not compared) $version"
fi
[[ $version == *"glibc $MAX_GLIBC or newer"* ]] || bad "--version does not name glibc $MAX_GLIBC: $version"

if out=$(bash --norc --noprofile -c "source '$top/completions/bm2ironic.bash' && complete -p bm2ironic" 2>&1) \
  && [[ $out == *"-F _bm2ironic"*" bm2ironic" ]]; then
  ok "bash: $out"
else
  bad "the bash completion does not load: $out"
fi
for sh in zsh fish; do
  f=$top/completions/$([ "$sh" = zsh ] && echo _bm2ironic || echo bm2ironic.fish)
  if ! command -v "$sh" >/dev/null; then
    echo "   (no $sh here: its completion is not parsed)"
  elif "$sh" -n "$f"; then
    ok "$sh -n $(basename "$f")"
  else
    bad "$sh cannot parse $(basename "$f")"
  fi
done

if man_out=$(MANWIDTH=100 man --warnings -l "$top/man/bm2ironic.1" 2>"$work/man.err" | col -bx) \
  && [ ! -s "$work/man.err" ] && grep -q '^NAME' <<<"$man_out" && grep -q 'bm2ironic-completions(1)' <<<"$man_out" \
  && grep -q 'bm2ironic-migrate(1)' <<<"$man_out"; then
  ok "man -l bm2ironic.1 renders ($(wc -l <<<"$man_out") lines, no warning)"
else
  bad "man -l bm2ironic.1: $(head -c 600 "$work/man.err")$(head -5 <<<"$man_out")"
fi
for page in "$top"/man/bm2ironic-*.1; do
  MANWIDTH=100 man --warnings -l "$page" >/dev/null 2>"$work/man.err" && [ ! -s "$work/man.err" ] \
    || bad "man -l $(basename "$page"): $(head -c 300 "$work/man.err")"
done
grep -q -- '--rehearse' <(man -l "$top/man/bm2ironic-migrate.1" 2>/dev/null) || bad "bm2ironic-migrate.1 does not show --rehearse"

# the binary at work, on its own sandbox (the old userland: scripts/release-chroot.sh, same decisions)
DEMO_DECISIONS="--resource-class baremetal --resolve mid-deploy=maintenance --resolve failed-deploy=maintenance
  --resolve missing-uuid=generate --resolve missing-bmc=maintenance --resolve duplicate-mac=skip-port
  --resolve invalid-mac=skip-port --resolve instance-missing-in-nova=free"
demo=$work/demo
if "$BIN" --log-dir "$work/log" demo --no-tui --dir "$demo" >"$work/demo.out" 2>&1; then
  eval "$(sed -n 's/^  export /export /p' "$work/demo.out")"
  # the plan options come from the sandbox's bm2ironic.toml: `plan` is run there with none.
  # The demo's inventory has blocking conflicts on purpose: `plan` exits 3 naming them; with a
  # decision for each, the rehearsal loads everything into the SQLite Ironic and rolls it back
  (cd "$demo" && "$BIN" --log-dir "$work/log" plan) >"$work/plan.out" 2>&1 && rc=0 || rc=$?
  # shellcheck disable=SC2086 # the flags are words
  (cd "$demo" && "$BIN" --log-dir "$work/log" migrate --rehearse --yes $DEMO_DECISIONS) >"$work/migrate.out" 2>&1 && mrc=0 || mrc=$?
  if [ "$rc" = 3 ] && [ "$mrc" = 0 ] && grep -q 'everything was written, then rolled back' "$work/migrate.out"; then
    ok "demo --no-tui; plan: exit 3 (the demo's blocking conflicts); migrate --rehearse: $(grep -m1 '^REHEARSAL run' "$work/migrate.out" | cut -d: -f2-)"
  else
    bad "plan exited $rc (3 expected), migrate --rehearse $mrc: $(tail -5 "$work/plan.out" "$work/migrate.out")"
  fi
else
  bad "demo --no-tui failed: $(tail -5 "$work/demo.out")"
fi

if [ "$failures" -gt 0 ]; then
  echo "== release check: $failures failure(s) =="
  exit 1
fi
echo "== release check: every check passed =="
