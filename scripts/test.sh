#!/usr/bin/env bash
# The project's test command (README, .ci/run): starts throw-away MariaDB and PostgreSQL servers
# (installing them with apt on a new machine), Keystones (scripts/keystone.sh; scripts/keystone-pike.sh,
# whose v2.0 Juno's conductor needs) and the other services the tests need, runs every test
# against SQLite, MariaDB and PostgreSQL with the servers' URLs in the environment, then stops them.
# Extra arguments go to `cargo test` (e.g. scripts/test.sh --test it inventory::).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }

# The real Juno Ironic and Nova (2014.2) are built from their sources, which are not on PyPI: checked here,
# before anything is installed or built (where scripts/juno.sh finds them: docs/juno.md). Outside this
# repository's CI, BM2IRONIC_TEST_WITHOUT_JUNO=1 runs everything else and lists at the end the tests
# that did not run; CI never sets it, and under CI it is refused.
JUNO_REF=${JUNO_REFERENCE_DIR:-$PWD/../shared/reference/juno}
juno_missing=()
for f in "${JUNO_IRONIC_TARBALL:-$JUNO_REF/ironic-2014.2.tar.gz}" "${JUNO_NOVA_TARBALL:-$JUNO_REF/nova-2014.2.tar.gz}"; do
  [ -f "$f" ] || juno_missing+=("$f")
done
WITHOUT_JUNO=
if [ -n "${BM2IRONIC_TEST_WITHOUT_JUNO:-}" ]; then
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "test.sh: BM2IRONIC_TEST_WITHOUT_JUNO is set, but under CI every test runs: unset it" >&2
    exit 1
  fi
  WITHOUT_JUNO=1
  echo "== BM2IRONIC_TEST_WITHOUT_JUNO is set: no Juno Ironic, Nova, Glance or Keystone 12.0.3; the tests that need them are listed at the end =="
elif [ ${#juno_missing[@]} -gt 0 ]; then
  cat >&2 <<MSG
test.sh: the Juno 2014.2 sources are not here, and they are not on PyPI: ${juno_missing[*]}
  Make them from checkouts of openstack/ironic and openstack/nova (docs/juno.md), nothing installed yet:
    git -C ironic archive --format=tar.gz --prefix=ironic-2014.2/ 2014.2 > /srv/juno/ironic-2014.2.tar.gz
    git -C nova archive --format=tar.gz --prefix=nova-2014.2/ 2014.2 > /srv/juno/nova-2014.2.tar.gz
  then run:  JUNO_REFERENCE_DIR=/srv/juno scripts/test.sh
  Or run every other test meanwhile:  BM2IRONIC_TEST_WITHOUT_JUNO=1 scripts/test.sh
  (it says at the end which tests did not run; CI never does this)
MSG
  exit 1
fi

# Where the time goes: each step's start and end (seconds since the start) in $PHASES, printed as a table at
# the end (docs/performance.md keeps a fresh machine's figures). Steps in the background time themselves.
PHASES=/tmp/bm2ironic-test-phases.tsv
: >"$PHASES"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
# timed NAME CMD...: run CMD, noting NAME's start and end in $PHASES
timed() {
  local name=$1 start rc=0
  shift
  start=$(elapsed)
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$start" "$(elapsed)" >>"$PHASES"
  return "$rc"
}
print_phases() {
  echo "== where the time went (seconds since the start; background steps overlap the others) =="
  awk -F'\t' '{ printf "   %-58s %5d .. %5d  %5d s\n", $1, $2, $3, $3 - $2 }' "$PHASES"
  echo "   total $(elapsed) s"
}

# The build needs none of the services: fmt, clippy and the test binaries are built while they are set up
# (compiling is most of a fresh machine's run: about 4 minutes of clippy and 7 of the test build on 2 cores).
export PHASES T0
export -f elapsed timed
echo "== building meanwhile: cargo fmt --check, cargo clippy (warnings are errors), the test binaries (log: /tmp/bm2ironic-build.log) =="
timed "cargo: fmt, clippy and test build (background)" bash -c '
  timed "cargo fmt --check" cargo fmt --check &&
  timed "cargo clippy" cargo clippy --locked --all-targets -- -D warnings &&
  [ $# -gt 0 ] || set -- --lib --bins --tests  # what the run below runs (the example is clippy-checked only)
  timed "cargo test: build" cargo test --locked --no-run "$@"' _ "$@" >/tmp/bm2ironic-build.log 2>&1 &
BUILD=$!

# Every Debian package the tests need, in one apt call, before anything starts in the background (the
# set-ups below then never call apt: two `apt-get update` at once fail on the lists' lock).
echo "== Debian packages the tests need (scripts/packages.sh; the list: scripts/lib/apt.sh) =="
timed "apt: every package the tests need" scripts/packages.sh install || { echo "test.sh: installing the Debian packages failed (scripts/packages.sh): stopping" >&2; exit 1; }

# A set-up script prints `export` lines for the tests. One that fails stops the run here, saying which
# (`eval "$(script)"` alone would go on with its variables unset, and the tests would only skip).
setup() {
  local what=$1 out
  shift
  out=$("$@") || { echo "test.sh: $what failed ($*): stopping" >&2; exit 1; }
  eval "$out"
}

echo "== starting test services (MariaDB, PostgreSQL) =="
scripts/test-services.sh clean >/dev/null 2>&1 || true
trap 'scripts/test-services.sh stop || true' EXIT
setup "starting MariaDB and PostgreSQL" timed "mariadb + postgresql: start" scripts/test-services.sh start
echo "   MariaDB    ${BM2IRONIC_TEST_MYSQL_ADMIN//:adminpass@/:***@}"
echo "   PostgreSQL ${BM2IRONIC_TEST_PG_ADMIN//:adminpass@/:***@}"
echo "   SQLite     in-process (temp files)"

echo "== a 3-node MariaDB Galera cluster on 127.0.0.1:24311-24313 (scripts/galera.sh), started meanwhile =="
timed "galera: 3 nodes (background)" bash -c 'scripts/galera.sh clean && scripts/galera.sh start >/tmp/bm2ironic-galera.env' >/tmp/bm2ironic-galera.log 2>&1 &
GALERA=$!
trap 'scripts/galera.sh clean >/dev/null 2>&1 || true; scripts/test-services.sh stop || true' EXIT

echo "== a machine to PXE-boot for the next-reboot test (scripts/bootvm.sh: QEMU, Debian's kernel, a disk as nova baremetal left it), built meanwhile =="
timed "bootvm: the PXE test machine (background)" scripts/bootvm.sh >/tmp/bm2ironic-bootvm.env 2>/tmp/bm2ironic-bootvm.log &
BOOTVM=$!

echo "== the deploy ramdisk for the deploy test (scripts/ipa-ramdisk.sh: ironic-python-agent 13.0.0 from PyPI in an mmdebstrap'd Debian root) and two whole-disk images, built meanwhile =="
timed "ipa-ramdisk: the deploy ramdisk and images (background)" scripts/ipa-ramdisk.sh >/tmp/bm2ironic-ipa.env 2>/tmp/bm2ironic-ipa.log &
IPA=$!

echo "== the real clients, each in a cached venv, installed meanwhile: the openstack client (the rehearsal), python-novaclient 7.1.2 (the proxy), nova 34.0.0 (its options, for config::) =="
timed "clients: osc, novaclient, nova 34 venvs (background)" bash -c 'scripts/clients.sh osc && scripts/novaclient.sh install >/tmp/bm2ironic-novaclient.out && scripts/nova.sh install >/tmp/bm2ironic-nova.out' >/tmp/bm2ironic-clients.log 2>&1 &
CLIENTS=$!

echo "== the real Juno Ironic and Nova (2014.2 from their sources, scripts/juno.sh; docs/juno.md) and a real Glance (PyPI glance==15.0.2, scripts/glance.sh): their Python 2.7 venvs and a Juno Nova schema, made meanwhile =="
if [ -z "$WITHOUT_JUNO" ]; then
  timed "juno: Ironic and Nova 2014.2 venvs, Glance 15.0.2 (background)" bash -c 'scripts/juno.sh env && scripts/juno.sh nova-env && scripts/juno.sh nova-schema >/dev/null && scripts/glance.sh env' >/tmp/bm2ironic-juno.env 2>/tmp/bm2ironic-juno.log &
  JUNO=$!
  echo "== a Keystone that serves v2.0 for Juno's conductor (PyPI keystone==12.0.3 on Python 2.7, scripts/keystone-pike.sh): its venv, made meanwhile =="
  timed "keystone 12.0.3: venv (background)" scripts/keystone-pike.sh install >/tmp/bm2ironic-keystone-pike.log 2>&1 &
  KSPIKE=$!
fi

echo "== real Ironic (PyPI ironic==39.0.0): venv, and its schema from ironic-dbsync upgrade on both servers =="
setup "the real Ironic's schemas" timed "ironic 39: venv and schemas" scripts/ironic-schemas.sh

echo "== real Keystone (PyPI keystone==30.0.0) on 127.0.0.1:15000, shared by the Keystone tests =="
trap 'scripts/galera.sh clean >/dev/null 2>&1 || true; scripts/keystone.sh stop || true; scripts/test-services.sh stop || true' EXIT
setup "starting Keystone" timed "keystone: venv and start" scripts/keystone.sh start

wait "$CLIENTS" || { cat /tmp/bm2ironic-clients.log >&2; echo "installing the openstack client failed" >&2; exit 1; }
BM2IRONIC_TEST_NOVACLIENT_VENV=$(tail -1 /tmp/bm2ironic-novaclient.out)
export BM2IRONIC_TEST_NOVACLIENT_VENV
BM2IRONIC_TEST_NOVA_VENV=$(tail -1 /tmp/bm2ironic-nova.out)   # nova==34.0.0's options: the config:: test of a modern nova.conf
export BM2IRONIC_TEST_NOVA_VENV
wait "$GALERA" || { cat /tmp/bm2ironic-galera.log >&2; echo "starting the Galera cluster failed" >&2; exit 1; }
setup "reading the Galera cluster's settings" cat /tmp/bm2ironic-galera.env   # sets BM2IRONIC_TEST_GALERA: the galera:: tests run
if [ -z "$WITHOUT_JUNO" ]; then
  wait "$JUNO" || { cat /tmp/bm2ironic-juno.log >&2; echo "test.sh: installing the Juno Ironic or nova-compute failed (scripts/juno.sh; where its sources come from: docs/juno.md): stopping" >&2; exit 1; }
  setup "reading the Juno Ironic's venv" cat /tmp/bm2ironic-juno.env   # sets BM2IRONIC_TEST_JUNO_VENV, _JUNO_NOVA_VENV and _GLANCE_VENV: the juno*:: tests run
  trap 'scripts/galera.sh clean >/dev/null 2>&1 || true; scripts/keystone-pike.sh stop || true; scripts/keystone.sh stop || true; scripts/test-services.sh stop || true' EXIT
  wait "$KSPIKE" || { cat /tmp/bm2ironic-keystone-pike.log >&2; echo "test.sh: installing Keystone 12.0.3 failed (scripts/keystone-pike.sh): stopping" >&2; exit 1; }
  setup "starting Keystone 12.0.3 (v2.0, for Juno's conductor)" timed "keystone 12.0.3: start" scripts/keystone-pike.sh start   # sets BM2IRONIC_TEST_KEYSTONE_V2
fi
wait "$BOOTVM" || { cat /tmp/bm2ironic-bootvm.log >&2; echo "test.sh: building the boot test machine failed (scripts/bootvm.sh): stopping" >&2; exit 1; }
setup "reading the boot test machine's settings" cat /tmp/bm2ironic-bootvm.env   # sets BM2IRONIC_TEST_BOOT_DIR: the boot:: test runs
wait "$IPA" || { cat /tmp/bm2ironic-ipa.log >&2; echo "test.sh: building the deploy ramdisk failed (scripts/ipa-ramdisk.sh): stopping" >&2; exit 1; }
setup "reading the deploy ramdisk's settings" cat /tmp/bm2ironic-ipa.env   # sets BM2IRONIC_TEST_IPA_DIR: the deploy:: test runs

echo "== the house rules (scripts/check-house.py: no import cycle, no file over 600 lines, backends only in db/, docs' paths exist) =="
timed "house rules" python3 scripts/check-house.py

echo "== waiting for the build: cargo fmt --check, clippy, the test binaries =="
wait "$BUILD" || { tail -60 /tmp/bm2ironic-build.log >&2; echo "test.sh: the build failed (fmt, clippy or compile; all of it in /tmp/bm2ironic-build.log): stopping" >&2; exit 1; }

# Each test that skips (tests/it/common: skip()) appends `<test>: <why>` here; libtest shows nothing of a
# passing test, so the list is printed after the run. Every server was started above: under CI a skip
# fails the run (the test itself fails there too).
export BM2IRONIC_TEST_SKIPS=/tmp/bm2ironic-test-skips.txt
: >"$BM2IRONIC_TEST_SKIPS"

echo "== cargo test (every server test runs once per backend it applies to: sqlite::, mysql::, postgres::) =="
status=0
if [ $# -eq 0 ]; then
  # the whole suite: each test's own time too (libtest's --report-time, allowed on a stable toolchain by
  # RUSTC_BOOTSTRAP in the test binaries' environment only, not the compiler's); the 25 slowest are listed
  # 4 test threads on 2 cores: most tests wait on a server, a service or a machine, not on a core
  # (each test's time, and the sum, are in the table below: docs/performance.md "CI time")
  CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="env RUSTC_BOOTSTRAP=1" RUST_TEST_THREADS=${RUST_TEST_THREADS:-4} \
    timed "cargo test: run" cargo test --locked --lib --bins --tests -- -Z unstable-options --report-time \
    2>&1 | tee /tmp/bm2ironic-test-output.txt || status=$?
  echo "== the 25 slowest tests =="
  sed -n 's/^test \(.*\) \.\.\. \([a-zA-Z]*\) <\([0-9.]*\)s>$/\3 \1 \2/p' /tmp/bm2ironic-test-output.txt \
    | sort -rn | awk 'NR <= 25 { printf "   %7.1f s  %s %s\n", $1, $2, $3 } { sum += $1 } END { printf "   %d tests took %.0f s in all\n", NR, sum }'
else
  timed "cargo test: run" cargo test --locked "$@" || status=$?
fi
if [ -s "$BM2IRONIC_TEST_SKIPS" ]; then
  echo "== $(cut -d' ' -f1 "$BM2IRONIC_TEST_SKIPS" | sort -u | wc -l) test(s) skipped ($BM2IRONIC_TEST_SKIPS) =="
  sort -u "$BM2IRONIC_TEST_SKIPS" | sed 's/^/   /'
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "test.sh: under CI no test may skip, and the ones above did" >&2
    exit 1
  fi
else
  echo "== no test skipped =="
fi
if [ -n "$WITHOUT_JUNO" ]; then
  echo "== NOT the whole suite: BM2IRONIC_TEST_WITHOUT_JUNO was set, so these did not run: =="
  grep -E 'BM2IRONIC_TEST_(JUNO_VENV|JUNO_NOVA_VENV|GLANCE_VENV|KEYSTONE_V2) is not set' "$BM2IRONIC_TEST_SKIPS" | sort -u | sed 's/^/   /' || echo "   (none of the tests run here needed the Juno pieces)"
  echo "   the Juno sources and how to make them: docs/juno.md"
fi
print_phases
# CI shows the start and the end of this output: each failed test's panic comes last, so it is seen
if [ "$status" -ne 0 ] && [ -s /tmp/bm2ironic-test-output.txt ]; then
  echo "== why the failed tests failed (first 3, 40 lines each; all of it in /tmp/bm2ironic-test-output.txt) =="
  awk '/^---- .* stdout ----$/ { name = $2; n = 0; on = 0; next }
       /^failures:$/ { on = 0; name = "" }
       name != "" && !on && /panicked at/ { on = 1; k++; if (k <= 3) print "   " name }
       on && k <= 3 && n < 40 { print "     " $0; n++ }' /tmp/bm2ironic-test-output.txt
fi
exit "$status"
