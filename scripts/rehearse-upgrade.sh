#!/usr/bin/env bash
# rehearse-upgrade.sh: the whole upgrade of docs/upgrade-runbook.md, rehearsed end to end with real
# parts on this machine (the equivalent of the upgrade plan's Grenade job). From nothing it:
#   - fills a nova_bm (schema version 10) on MariaDB the way nova baremetal left it: free nodes enrolled
#     the way the original job did (deleted, task_state, instance_uuid NULL; one interface each), nodes
#     with running instances, one whose instance is stopped, a soft-deleted one; every BMC a fake IPMI
#     BMC (pyghmi, scripts/fakebmc.py) on a loopback address, powered on or off like its machine, and one
#     machine a real QEMU VM (fakebmc.py --vm) netbooting its instance from the compute host's TFTP tree;
#   - a Juno-era Nova database (the baremetal flavor, the instances with their images, the stopped
#     baremetal nova-compute) and a nova.conf whose [baremetal] points at nova_bm;
#   - the real Ironic (PyPI), its database made by `ironic-dbsync upgrade`, behind the real Keystone;
# then runs the runbook's steps with bm2ironic from the config files alone (--nova-conf,
# --ironic-conf), once loading by SQL (--via db) and once, on fresh databases, through Ironic's API
# (--via api), reboots the VM through Ironic after the SQL load's takeover (it boots its instance from
# the conductor's PXE config), checks every outcome (the fake BMCs' own power state, the conductor log gated by
# `bm2ironic watch`, real clients through Keystone), verifies, rolls back, and prints a step table.
#
# Usage: scripts/rehearse-upgrade.sh [db|api|both]     (default both)
# Environment: BM2IRONIC_BIN (the binary; default: cargo build, target/debug/bm2ironic);
# BM2IRONIC_TEST_BOOT_DIR (the VM's parts; default: scripts/bootvm.sh builds or reuses them); the
# services of scripts/test.sh when they run (BM2IRONIC_TEST_MYSQL_ADMIN, BM2IRONIC_TEST_KEYSTONE_URL),
# otherwise it starts its own and stops them at the end. BM2_REHEARSAL_KEEP=1 keeps the work dir.
# Exit 0 when every step's outcome is right; 1 with "REHEARSAL FAILED at step ...: why" otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VIA=${1:-both}
case "$VIA" in db|api|both) ;; *) echo "usage: $0 [db|api|both]" >&2; exit 2 ;; esac
export PYTHONWARNINGS=ignore

log() { echo "[rehearsal] $*" >&2; }

# ---------------------------------------------------------------- the step table
STEPS=()          # "runbook|what|seconds|outcome"
CURRENT=""
T0=0
step() { CURRENT="$1|$2"; T0=$(date +%s.%N); log "step ${1}: $2"; }
ok() {
  local s
  s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$T0" "$(date +%s.%N)")
  STEPS+=("$CURRENT|$s|ok${1:+: $1}")
}
skip() { STEPS+=("$CURRENT|0.0|skipped: $1"); }
table() {
  printf '\n%-10s %-72s %8s  %s\n' "runbook" "step" "seconds" "outcome"
  local r
  for r in "${STEPS[@]}"; do
    IFS='|' read -r n w s o <<<"$r"
    printf '%-10s %-72s %8s  %s\n' "$n" "$w" "$s" "$o"
  done
}
fail() {
  local s
  s=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$T0" "$(date +%s.%N)")
  STEPS+=("$CURRENT|$s|FAILED: $*")
  table
  echo >&2
  echo "REHEARSAL FAILED at step ${CURRENT%%|*} (${CURRENT#*|}): $*" >&2
  [ -z "${WORK:-}" ] || echo "(work dir kept: $WORK)" >&2
  KEEP=1
  exit 1
}

# ---------------------------------------------------------------- services and tools
WORK=$(mktemp -d /tmp/bm2ironic-rehearsal.XXXXXX)
chmod 700 "$WORK"
KEEP=${BM2_REHEARSAL_KEEP:-}
PIDS=()
OWN_SERVICES=""
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  [ -z "${RUN:-}" ] || tmux -L "bm2rh-$RUN" kill-server 2>/dev/null || true
  [ -z "$OWN_SERVICES" ] || { scripts/keystone.sh stop >/dev/null 2>&1 || true; scripts/test-services.sh stop >/dev/null 2>&1 || true; }
  if [ -n "${MYCNF:-}" ] && [ -n "${RUN:-}" ]; then
    for d in $(my -N -e "SHOW DATABASES LIKE 'rh\\_${RUN}\\_%'" 2>/dev/null); do my -e "DROP DATABASE \`$d\`" || true; done
    my -e "DROP USER IF EXISTS 'rh_${RUN}'@'127.0.0.1', 'rh_${RUN}_ro'@'127.0.0.1'" 2>/dev/null || true
  fi
  [ -n "$KEEP" ] || rm -rf "$WORK"
}
trap cleanup EXIT
# a command in a process group of its own (killed with its children at the end)
spawn() { setsid "$@" & PIDS+=($!); }

step S1 "services: MariaDB, Keystone, the Ironic venv, the client venv, bm2ironic"
if [ -z "${BM2IRONIC_TEST_MYSQL_ADMIN:-}" ] || [ -z "${BM2IRONIC_TEST_KEYSTONE_URL:-}" ]; then
  OWN_SERVICES=1
  eval "$(scripts/test-services.sh start)" || fail "MariaDB did not start (scripts/test-services.sh start)"
  eval "$(scripts/keystone.sh start)" || fail "Keystone did not start (scripts/keystone.sh start)"
fi
VENV=$(scripts/ironic.sh install) || fail "the Ironic venv (scripts/ironic.sh install)"
OSC=$(scripts/clients.sh osc) || fail "the openstack client venv (scripts/clients.sh osc)"
NOVACLIENT=$(scripts/novaclient.sh install) || fail "the python-novaclient 7.1.2 venv (scripts/novaclient.sh install)"
BIN=${BM2IRONIC_BIN:-}
if [ -z "$BIN" ]; then cargo build -q --locked && BIN=$ROOT/target/debug/bm2ironic; fi
KS=$BM2IRONIC_TEST_KEYSTONE_URL
# the admin connection, from the test services' URL (the password goes into a 0600 option file, not argv)
read -r MY_USER MY_PASS MY_HOST MY_PORT < <(python3 -c "
import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(p.username, u.unquote(p.password or ''), p.hostname, p.port or 3306)" "$BM2IRONIC_TEST_MYSQL_ADMIN")
MYCNF=$WORK/my.cnf
printf '[client]\nuser=%s\npassword=%s\nhost=%s\nport=%s\n' "$MY_USER" "$MY_PASS" "$MY_HOST" "$MY_PORT" > "$MYCNF"
chmod 600 "$MYCNF"
my() { mariadb --defaults-extra-file="$MYCNF" "$@"; }
my -e "SELECT 1" >/dev/null || fail "cannot log in to MariaDB as $MY_USER at $MY_HOST:$MY_PORT"
RUN=$(python3 -c "import secrets; print(secrets.token_hex(3))")
ok "run $RUN, $("$BIN" --version 2>/dev/null | head -1), $("$VENV/bin/pip" show ironic 2>/dev/null | sed -n 's/^Version: /ironic /p')"

# ---------------------------------------------------------------- Juno's nova-compute (steps 7-9)
# its venv (scripts/juno.sh nova-install, cached), and one Nova database made by Juno's own
# `nova-manage db sync` (about 50 s on MariaDB, in the background meanwhile): each load's Nova
# database is a copy of it
JUNO_NOVA=$(scripts/juno.sh nova-install 2>"$WORK/juno-nova-install.log") || fail "Juno's nova-compute venv (scripts/juno.sh nova-install): $(tail -3 "$WORK/juno-nova-install.log")"
my -e "CREATE DATABASE rh_${RUN}_junonova"
BM2_JUNO_DB_URL="mysql+pymysql://$MY_USER:$MY_PASS@$MY_HOST:$MY_PORT/rh_${RUN}_junonova?charset=utf8" \
  scripts/juno.sh nova-dbsync env >"$WORK/juno-nova-dbsync.log" 2>&1 &
NOVA_DBSYNC=$!
juno_nova_schema() {   # $1: a database: made a copy of it (with its rows: migrate_version, Juno's default flavors)
  if [ -n "$NOVA_DBSYNC" ]; then
    wait "$NOVA_DBSYNC" || fail "Juno's nova-manage db sync failed: $(tail -3 "$WORK/juno-nova-dbsync.log")"
    NOVA_DBSYNC=""
  fi
  mariadb-dump --defaults-extra-file="$MYCNF" "rh_${RUN}_junonova" | my "$1"
}
NOVA_BMC_ACTIONS=0   # the power actions steps 7-9 make on purpose (a machine switched off, Nova's stop)
# ---- the nova.conf `bm2ironic config` wrote, and what only the rehearsal adds on top (step 7)
JUNO_CONF=""
juno_nova_conf() {   # $1: db|api, $2: Ironic's port; JUNO_CONF: the nova.conf's path
  local v=$1 port=$2 nova=rh_${RUN}_${1}_nova dir=$WORK/$1/nova-compute conf token rc=0
  conf=$dir/nova.conf
  mkdir -p "$dir/state/lock" "$dir/state/instances"
  bm --nova-conf "$WORK/$v/etc/nova.conf" --ironic-url "http://127.0.0.1:$port" config --target juno --ironic-noauth \
    --host "$NEW_HOST" --write-nova "$conf" --json >"$dir/config.json" 2>"$dir/config.err" || rc=$?
  [ "$rc" = 0 ] || fail "bm2ironic config exit $rc: $(tail -3 "$dir/config.err")"
  grep -qx 'compute_driver = nova.virt.ironic.IronicDriver' "$conf" || fail "bm2ironic config wrote no 'compute_driver = nova.virt.ironic.IronicDriver' ($conf)"
  grep -qx "host = $NEW_HOST" "$conf" || fail "bm2ironic config wrote no 'host = $NEW_HOST' ($conf)"
  # Juno's driver asks Keystone v2.0 for a token (admin_username, admin_password, admin_url), which
  # Keystone 30 does not serve: it gets a system-scoped token from v3 instead (admin_auth_token).
  # `config` cannot write it (a token is made at run time and expires; it writes `noauth` with
  # --ironic-noauth), so the rehearsal appends it; oslo.config takes an option's last value
  token=$("$VENV/bin/python" - "$KS" <<'PY'
import sys, requests
body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "adminpass"}}}, "scope": {"system": {"all": True}}}}
print(requests.post(sys.argv[1] + "/auth/tokens", json=body, timeout=30).headers["X-Subject-Token"])
PY
) || fail "no Keystone token for nova-compute"
  cat >> "$conf" <<CONF

# ---- added by the rehearsal on top of what bm2ironic config wrote: where this nova-compute keeps
# its state and log; no broker (nova-compute calls its conductor in-process); fast periodic tasks
[DEFAULT]
state_path = $dir/state
lock_path = $dir/state/lock
instances_path = $dir/state/instances
log_file = $dir/nova-compute.log
debug = true
# Juno's defaults, and ironicclient/keystoneclient at INFO: at DEBUG they log each request's token
# and each node's driver_info with its IPMI password
default_log_levels = amqp=WARN,amqplib=WARN,boto=WARN,qpid=WARN,sqlalchemy=WARN,suds=INFO,oslo.messaging=INFO,iso8601=WARN,requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,websocket=WARN,keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,ironicclient=INFO,keystoneclient=INFO
rpc_backend = fake
rootwrap_config = ${JUNO_NOVA%/*}/nova-src/etc/nova/rootwrap.conf
sync_power_state_interval = 3
update_resources_interval = 3
periodic_fuzzy_delay = 0
heal_instance_info_cache_interval = -1
image_cache_manager_interval = -1
network_api_class = nova.network.api.API

[conductor]
use_local = True

# the venv has PyMySQL, not MySQL-python (a C build): the same database through pymysql
[database]
connection = mysql+pymysql://rh_${RUN}:$DB_PW@$MY_HOST:$MY_PORT/$nova?charset=utf8

[ironic]
admin_auth_token = $token
api_max_retries = 30
api_retry_interval = 2
CONF
  JUNO_CONF=$conf
}
# ---- end of the nova.conf block

juno_nova_compute() {   # $1: db|api, $2: Ironic's port, $3: the nova.conf: Juno's nova-compute on this load's Nova DB
  local v=$1 port=$2 nova=rh_${RUN}_${1}_nova dir=$WORK/$1/nova-compute conf=$3 i want before
  before=$(cat "$WORK"/bmc*.log 2>/dev/null | grep -c '^power ' || true)
  spawn scripts/juno.sh nova-compute "$conf" >"$dir/nova-compute.out" 2>&1
  local NOVA_PID=${PIDS[-1]}
  local rows="SELECT COUNT(DISTINCT hypervisor_hostname) FROM $nova.compute_nodes WHERE deleted = 0 AND hypervisor_type = 'ironic'"
  for i in $(seq 120); do [ "$(my -N -e "$rows")" = 7 ] && break; sleep 1; done
  [ "$(my -N -e "$rows")" = 7 ] || fail "nova-compute made $(my -N -e "$rows") compute_nodes row(s) of the Ironic driver, not 7 (log: $dir/nova-compute.log)"
  inst() { my -N -e "SELECT CONCAT(vm_state, ' ', power_state, ' ', COALESCE(task_state, '-'), ' ', deleted, ' ', host) FROM $nova.instances WHERE uuid = '$(uuid aaaaaaaa "$1")'"; }
  sleep 8   # two power syncs
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    [ "$inst" = - ] && continue
    want="active 1 - 0 $NEW_HOST"; [ "$inst" = S ] && want="stopped 4 - 0 $NEW_HOST"
    [ "$(inst "$id")" = "$want" ] || fail "instance of node $id: Nova has '$(inst "$id")', expected '$want'"
  done
  [ "$(( $(cat "$WORK"/bmc*.log | grep -c '^power ' || true) - before ))" = 0 ] || fail "nova-compute's takeover made a power action reach a BMC"
  # node 6's machine is switched off at its BMC: Ironic records it, Nova stops the instance
  IPMI_PASSWORD="$PW_PREFIX-6" ipmitool -I lanplus -H 127.0.3.6 -U admin -E power off >/dev/null || fail "ipmitool power off"
  want="stopped 4 - 0 $NEW_HOST"
  for i in $(seq 60); do [ "$(inst 6)" = "$want" ] && break; sleep 1; done
  [ "$(inst 6)" = "$want" ] || fail "instance of node 6 after its machine was switched off: Nova has '$(inst 6)', expected '$want'"
  ! grep -q Traceback "$dir/nova-compute.log" || fail "a traceback in nova-compute's log ($dir/nova-compute.log)"
  kill -TERM -- "-$NOVA_PID" 2>/dev/null || true
  for i in $(seq 25); do kill -0 "$NOVA_PID" 2>/dev/null || break; sleep 0.2; done
  # the machine as it was, for the steps after (Nova is stopped: it will not switch it off again)
  IPMI_PASSWORD="$PW_PREFIX-6" ipmitool -I lanplus -H 127.0.3.6 -U admin -E power on >/dev/null || fail "ipmitool power on"
  NOVA_BMC_ACTIONS=$(( NOVA_BMC_ACTIONS + $(cat "$WORK"/bmc*.log | grep -c '^power ' || true) - before ))
}

# ---------------------------------------------------------------- the cloud as nova baremetal left it
# node id -> BMC address, power, instance (R running, S stopped, - none), deleted
NODES=(
  "1 127.0.3.1 off - null"     # enrolled the way the original job did: deleted/task_state/instance NULL
  "2 127.0.3.2 off - null"
  "3 127.0.3.3 off - null"
  "4 127.0.3.4 off - 0"
  "5 127.0.3.5 on R 0"
  "6 127.0.3.6 on R 0"
  "7 127.0.3.7 off S 0"        # its instance is stopped: the machine is off and must stay off
  "8 127.0.3.8 off - 1"        # soft-deleted
)
uuid() { printf '%s-0000-4000-8000-%012d' "$1" "$2"; }
# two old baremetal compute hosts (docs/hosts.md): odd nodes on bm-compute-1, even ones on
# bm-compute-2 (nova_bm's service_host, Nova's instances.host and the compute_nodes' service);
# the Ironic driver's nova-compute runs as one new host
old_host() { echo "bm-compute-$(( 2 - $1 % 2 ))"; }
old_service() { echo $(( 2 - $1 % 2 )); }
NEW_HOST=ironic-compute
# the nova.conf is bm-compute-1's: its flavor_extra_specs name that host's cpu_arch only; the
# operator gives bm-compute-2's (plan, migrate and the wizard block on a node without one)
ARCH2=(--arch bm-compute-2=x86_64)
PW_PREFIX="bmc-secret-$RUN"   # distinctive: the end checks no output holds it
DB_PW="db-secret-$RUN"

# ---------------------------------------------------------------- the next reboot (#24): one machine is a VM
# Node $VM_NODE's machine is a QEMU VM (scripts/bootvm.sh: Debian's kernel, a busybox initramfs, a disk as
# nova baremetal left it, no bootloader) behind scripts/fakebmc.py --vm (IPMI power -> QEMU); the other
# machines stay pyghmi power states. The compute host's TFTP tree as nova baremetal left it (each
# instance's config, kernel and ramdisk; nova.conf [baremetal] tftp_root names it) serves its network
# until the migration, then the conductor's tftp_root does: $WORK/network-tftp, a symlink. After the
# SQL load's takeover, vm_reboot_step reboots it through Ironic and reads its marker on the serial console.
VM_NODE=6
VM_MAC=52:54:00:00:03:0$VM_NODE
NOVA_TFTP=$WORK/nova-tftpboot
VM_ACTIONS=0      # the power actions of that reboot (off, on): bmc_actions leaves them out
if [ -z "${BM2IRONIC_TEST_BOOT_DIR:-}" ]; then
  eval "$(scripts/bootvm.sh)" || fail "the boot test machine (scripts/bootvm.sh)"
fi
BOOT=$BM2IRONIC_TEST_BOOT_DIR
ROOT_UUID=$(cat "$BOOT/root-uuid"); MARKER=$(cat "$BOOT/marker")
vm_console() { tr -d '\r' <"$WORK/vm$VM_NODE/console.log" 2>/dev/null | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' || true; }
vm_markers() { vm_console | grep -c "$MARKER" || true; }
vm_wait_markers() {   # $1: how many; $2: seconds
  local i
  for i in $(seq $(($2 * 5))); do [ "$(vm_markers)" -ge "$1" ] && return 0; sleep 0.2; done
  return 1
}
vm_stage() {   # the nova baremetal tree of every instance, the network's TFTP view of it, the VM's BMC (on)
  # what nova baremetal left on the compute host for each instance's next boot (its PXE config, kernel,
  # ramdisk), copied here as the runbook's step 1b says; nova.conf's [baremetal] tftp_root names it
  local n id addr power inst del iu d
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    [ "$inst" = - ] && continue
    iu=$(uuid aaaaaaaa "$id"); d=$NOVA_TFTP/$iu
    mkdir -p "$d"
    # nova 2014.2 pxe_config.template as its deploy helper's switch_pxe_config left it
    printf '%s\n' "default boot" "" "label deploy" "kernel /tftpboot/$iu/deploy_kernel" \
      "append initrd=/tftpboot/$iu/deploy_ramdisk selinux=0 disk=cciss/c0d0,sda,hda,vda iscsi_target_iqn=iqn-$iu deployment_id=$id deployment_key=K3YK3Y0$id troubleshoot=0 nofb nomodeset vga=normal console=ttyS0" \
      "ipappend 3" "" "" "label boot" "kernel /tftpboot/$iu/kernel" \
      "append initrd=/tftpboot/$iu/ramdisk root=UUID=$ROOT_UUID ro nofb nomodeset vga=normal console=ttyS0" >"$d/config"
    # copies, not links: nothing written into the tree may reach the cached boot files
    cp "$BOOT/vmlinuz" "$d/kernel"; cp "$BOOT/initramfs" "$d/ramdisk"
  done
  # what the compute host's TFTP server served: the loader, the MAC link, /tftpboot/... names in the tree
  mkdir -p "$WORK/compute-host-tftp/pxelinux.cfg"
  cp "$BOOT/pxelinux.0" "$BOOT/ldlinux.c32" "$WORK/compute-host-tftp/"
  ln -s "$NOVA_TFTP" "$WORK/compute-host-tftp/tftpboot"
  ln -s "../tftpboot/$(uuid aaaaaaaa "$VM_NODE")/config" "$WORK/compute-host-tftp/pxelinux.cfg/01-${VM_MAC//:/-}"
  ln -s "$WORK/compute-host-tftp" "$WORK/network-tftp"
  cp "$BOOT/disk.img" "$WORK/vm$VM_NODE.img"
  read -r id addr power inst del <<<"${NODES[$((VM_NODE - 1))]}"
  [ "$id" = "$VM_NODE" ] && [ "$inst" = R ] && [ "$power" = on ] || fail "node $VM_NODE is not a running instance"
  spawn "$VENV/bin/python" scripts/fakebmc.py 623 admin "$PW_PREFIX-$id" "$addr" on --vm "$WORK/vm$id" \
    --disk "$WORK/vm$id.img" --tftp "$WORK/network-tftp" --mac "$VM_MAC" --accel "$(cat "$BOOT/accel")" >"$WORK/bmc$id.log" 2>&1
}
vm_reboot_step() {   # after the SQL load's takeover
  local node tftp cfg append last out actions
  node=$(uuid bbbbbbbb "$VM_NODE"); tftp=$WORK/$V/ironic/tftpboot
  step "6/$V" "next reboot: node $VM_NODE's VM rebooted through Ironic boots its instance"
  # the takeover (RamdiskDeploy.prepare) wrote the node's PXE config and its MAC link
  for _ in $(seq 150); do [ -s "$tftp/$node/config" ] && [ -L "$tftp/pxelinux.cfg/01-${VM_MAC//:/-}" ] && break; sleep 0.2; done
  cfg=$tftp/$node/config
  [ -s "$cfg" ] || fail "the conductor wrote no PXE config for node $VM_NODE ($cfg): $(grep -E ' (ERROR|WARNING) ' "$WORK/$V/ironic/ironic.log" | tail -3 | cut -c1-300)"
  [ "$(head -1 "$cfg")" = "default boot_ramdisk" ] || fail "node $VM_NODE's PXE config does not boot the instance: $(head -1 "$cfg")"
  append=$(sed -n '/^label boot_ramdisk/,/^$/s/^append //p' "$cfg")
  last=$(tr ' ' '\n' <<<"$append" | grep '^root=' | tail -1)
  [ "$last" = "root=UUID=$ROOT_UUID" ] || fail "node $VM_NODE's config boots $last, not root=UUID=$ROOT_UUID: $append"
  [ "$(readlink -f "$tftp/pxelinux.cfg/01-${VM_MAC//:/-}")" = "$(readlink -f "$cfg")" ] || fail "no MAC link to node $VM_NODE's config"
  # the instance ran meanwhile, booted by nova baremetal's config from the compute host
  vm_wait_markers 1 150 || fail "the VM never booted its instance from nova baremetal's config: $(vm_console | grep -v '^ *$' | tail -5)"
  [ "$(grep -c '^power ' "$WORK/bmc$VM_NODE.log")" = 0 ] || fail "a power action reached node $VM_NODE's machine before the reboot"
  # the end of the window: the network's TFTP server is the conductor's; the reboot
  ln -s "$tftp" "$WORK/network-tftp.new" && mv -T "$WORK/network-tftp.new" "$WORK/network-tftp"
  out=$("$OSC/bin/openstack" --os-cloud rehearsal baremetal node reboot "$node" 2>&1) || fail "openstack baremetal node reboot: $out"
  vm_wait_markers 2 150 || fail "node $VM_NODE did not boot again after the reboot: $(vm_console | grep -v '^ *$' | tail -5)"
  vm_console | grep "$MARKER" | tail -1 | grep -q "initrd=$node/ramdisk root=/dev/ram0 .*root=UUID=$ROOT_UUID ro" \
    || fail "node $VM_NODE booted, but not from the conductor's config: $(vm_console | grep "$MARKER" | tail -1)"
  actions=$(grep '^power ' "$WORK/bmc$VM_NODE.log" | tr '\n' ' ')
  [ "$actions" = "power off power on " ] || fail "the reboot's power actions were: $actions"
  VM_ACTIONS=2
  ok "booted from the conductor's PXE config (root=UUID=$ROOT_UUID), marker on the serial console"
}

step S2 "fake BMCs (pyghmi) on loopback, powered like their machines"
for n in "${NODES[@]}"; do
  read -r id addr power inst del <<<"$n"
  [ "$del" = 1 ] && continue
  [ "$id" = "$VM_NODE" ] && continue   # the VM's BMC: vm_stage
  spawn "$VENV/bin/python" scripts/fakebmc.py 623 admin "$PW_PREFIX-$id" "$addr" "$power" >"$WORK/bmc$id.log" 2>&1
done
vm_stage
bmc_power() { IPMI_PASSWORD="$PW_PREFIX-$1" ipmitool -I lanplus -H "$2" -U admin -E -N 1 -R 3 power status 2>&1 | sed -n 's/^Chassis Power is //p'; }
for n in "${NODES[@]}"; do
  read -r id addr power inst del <<<"$n"
  [ "$del" = 1 ] && continue
  for _ in $(seq 50); do [ -n "$(bmc_power "$id" "$addr")" ] && break; sleep 0.2; done
  [ "$(bmc_power "$id" "$addr")" = "$power" ] || fail "the fake BMC of node $id at $addr does not answer '$power' (log: $WORK/bmc$id.log)"
done
ok "7 BMCs on 127.0.3.1-7:623 (node $VM_NODE's a QEMU VM, booting its instance)"

# one set of databases per load (--via db, --via api): fresh each time
make_cloud() {   # $1: db|api
  local v=$1 bm=rh_${RUN}_${1}_nova_bm nova=rh_${RUN}_${1}_nova ir=rh_${RUN}_${1}_ironic
  my -e "CREATE DATABASE $bm; CREATE DATABASE $nova; CREATE DATABASE $ir CHARACTER SET utf8mb3;
    CREATE USER IF NOT EXISTS 'rh_${RUN}'@'127.0.0.1' IDENTIFIED BY '$DB_PW';
    CREATE USER IF NOT EXISTS 'rh_${RUN}_ro'@'127.0.0.1' IDENTIFIED BY '$DB_PW';
    GRANT ALL ON $nova.* TO 'rh_${RUN}'@'127.0.0.1'; GRANT ALL ON $ir.* TO 'rh_${RUN}'@'127.0.0.1';
    GRANT SELECT ON $bm.* TO 'rh_${RUN}_ro'@'127.0.0.1';"
  my "$bm" < assets/nova_bm/schema.mysql.sql
  {
    echo "INSERT INTO migrate_version VALUES ('nova_bm', '/usr/lib/python2.7/dist-packages/nova/virt/baremetal/db/sqlalchemy/migrate_repo', 10);"
    for n in "${NODES[@]}"; do
      read -r id addr power inst del <<<"$n"
      local iu=NULL ts=NULL name=NULL root=NULL d=$del
      [ "$inst" = - ] || { iu="'$(uuid aaaaaaaa "$id")'"; ts="'active'"; name="'instance-0000000$id'"; root=20480; }
      [ "$del" = 1 ] && ts="'deleted'"
      echo "INSERT INTO bm_nodes (id, created_at, updated_at, deleted, cpus, memory_mb, local_gb, pm_address, pm_user, pm_password, service_host, instance_uuid, task_state, uuid, instance_name, root_mb, swap_mb, ephemeral_mb, preserve_ephemeral) VALUES ($id, '2014-05-01 10:00:00', NULL, $d, 8, 16384, 500, '$addr', 'admin', '$PW_PREFIX-$id', '$(old_host "$id")', $iu, $ts, '$(uuid bbbbbbbb "$id")', $name, $root, 1024, 0, false);"
      local vif=NULL
      [ "$inst" = - ] || vif="'$(uuid cccccccc "$id")'"
      echo "INSERT INTO bm_interfaces (id, created_at, deleted, bm_node_id, address, vif_uuid) VALUES ($id, '2014-05-01 10:00:00', $([ "$del" = 1 ] && echo 1 || echo 0), $id, '52:54:00:00:03:0$id', $vif);"
    done
  } | my "$bm"
  # Juno Nova: the schema Juno's `nova-manage db sync` made (with its default flavors), a baremetal
  # flavor, the instances nova baremetal ran (images a URL Ironic can validate here: there is no
  # Glance) with what Juno reads of them, the baremetal driver's compute_nodes, the baremetal
  # nova-compute stopped an hour ago
  juno_nova_schema "$nova"
  local T="'2014-05-01 10:00:00'"
  my "$nova" <<SQL
INSERT INTO instance_types (created_at, name, id, memory_mb, vcpus, swap, flavorid, rxtx_factor, root_gb, ephemeral_gb, disabled, is_public, deleted) VALUES ($T, 'bm.large', 6, 16384, 8, 0, 'bm.large', 1.0, 20, 0, 0, 1, 0);
INSERT INTO instance_type_extra_specs (instance_type_id, \`key\`, value, deleted, created_at) VALUES (6, 'cpu_arch', 'x86_64', 0, $T), (6, 'baremetal:deploy_kernel_id', 'nova-bm-deploy-kernel', 0, $T), (6, 'baremetal:deploy_ramdisk_id', 'nova-bm-deploy-ramdisk', 0, $T), ((SELECT id FROM instance_types WHERE name = 'm1.small'), 'hw:cpu_policy', 'shared', 0, $T);
INSERT INTO services (created_at, updated_at, id, host, \`binary\`, topic, report_count, disabled, deleted) VALUES ($T, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 1, 'bm-compute-1', 'nova-compute', 'compute', 100, 0, 0), ($T, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 2, 'bm-compute-2', 'nova-compute', 'compute', 100, 0, 0);
SQL
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    [ "$del" = 1 ] && continue
    local used=0 u
    [ "$inst" = - ] || used=1
    echo "INSERT INTO compute_nodes (created_at, updated_at, service_id, vcpus, memory_mb, local_gb, vcpus_used, memory_mb_used, local_gb_used, hypervisor_type, hypervisor_version, cpu_info, free_ram_mb, free_disk_gb, current_workload, running_vms, hypervisor_hostname, deleted) VALUES ($T, $T, $(old_service "$id"), 8, 16384, 500, $((used * 8)), $((used * 16384)), $((used * 20)), 'baremetal', 1, 'baremetal cpu', 0, 0, 0, $used, '$(uuid bbbbbbbb "$id")', 0);" | my "$nova"
    [ "$inst" = - ] && continue
    local vm=active ps=1
    [ "$inst" = S ] && { vm=stopped; ps=4; }
    u=$(uuid aaaaaaaa "$id")
    {
      echo "INSERT INTO instances (created_at, updated_at, user_id, project_id, image_ref, launch_index, power_state, vm_state, memory_mb, vcpus, root_gb, ephemeral_gb, hostname, host, node, launched_on, display_name, instance_type_id, uuid, launched_at, locked, shutdown_terminate, disable_terminate, cleaned, deleted, config_drive, architecture, os_type, reservation_id, progress) VALUES ($T, $T, 'demo-user', 'demo-project', 'file://$WORK/image.qcow2', 0, $ps, '$vm', 16384, 8, 20, 0, 'instance-0000000$id', '$(old_host "$id")', '$(uuid bbbbbbbb "$id")', '$(old_host "$id")', 'instance-0000000$id', 6, '$u', $T, 0, 0, 0, 0, 0, '', 'x86_64', 'linux', 'r-0000000$id', 0);"
      echo "INSERT INTO instance_info_caches (created_at, network_info, instance_uuid, deleted) VALUES ($T, '[]', '$u', 0);"
      echo "INSERT INTO instance_extra (created_at, deleted, instance_uuid) VALUES ($T, 0, '$u');"
      local kv
      for kv in instance_type_id=6 instance_type_name=bm.large instance_type_memory_mb=16384 instance_type_vcpus=8 \
          instance_type_root_gb=20 instance_type_ephemeral_gb=0 instance_type_flavorid=bm.large instance_type_swap=0 \
          instance_type_rxtx_factor=1.0 instance_type_vcpu_weight= "image_base_image_ref=file://$WORK/image.qcow2"; do
        local val="'${kv#*=}'"; [ "$val" = "''" ] && val=NULL
        echo "INSERT INTO instance_system_metadata (created_at, instance_uuid, \`key\`, value, deleted) VALUES ($T, '$u', '${kv%%=*}', $val, 0);"
      done
    } | my "$nova"
  done
  mkdir -p "$WORK/$v/etc"
  cat > "$WORK/$v/etc/nova.conf" <<CONF
[DEFAULT]
host = bm-compute-1
compute_driver = nova.virt.baremetal.driver.BareMetalDriver

[database]
connection = mysql://rh_${RUN}:$DB_PW@$MY_HOST:$MY_PORT/$nova

[baremetal]
sql_connection = mysql://rh_${RUN}_ro:$DB_PW@$MY_HOST:$MY_PORT/$bm
power_manager = nova.virt.baremetal.ipmi.IPMI
deploy_kernel = nova-bm-deploy-kernel
deploy_ramdisk = nova-bm-deploy-ramdisk
flavor_extra_specs = cpu_arch:x86_64
tftp_root = $NOVA_TFTP
CONF
  chmod 600 "$WORK/$v/etc/nova.conf"
}

checksum() { my -N -e "CHECKSUM TABLE rh_${RUN}_$1_nova_bm.bm_nodes, rh_${RUN}_$1_nova_bm.bm_interfaces, rh_${RUN}_$1_nova_bm.migrate_version" | awk '{print $2}' | tr '\n' ' '; }
flavor_specs() { my -N -e "SELECT instance_type_id, \`key\`, value FROM rh_${RUN}_$1_nova.instance_type_extra_specs WHERE deleted = 0 ORDER BY 1, 2"; }

: > "$WORK/deploy.kernel"; : > "$WORK/deploy.initramfs"; echo image > "$WORK/image.qcow2"
KERNEL=file://$WORK/deploy.kernel
RAMDISK=file://$WORK/deploy.initramfs

# the Keystone side: a region of this run's own with Ironic's endpoint; a system-scoped cloud
PORT_BASE=$((6431))
cat > "$WORK/clouds.yaml" <<YAML
clouds:
  rehearsal:
    auth:
      auth_url: $KS
      username: admin
      password: adminpass
      user_domain_name: Default
      system_scope: all
    region_name: Rehearsal-$RUN
    interface: public
    identity_api_version: 3
YAML
chmod 600 "$WORK/clouds.yaml"
export OS_CLIENT_CONFIG_FILE=$WORK/clouds.yaml
unset OS_CLOUD OS_AUTH_URL OS_USERNAME OS_PASSWORD OS_PROJECT_NAME OS_TOKEN OS_SYSTEM_SCOPE || true
"$VENV/bin/python" - "$KS" "Rehearsal-$RUN" <<'PY' || fail "cannot create the region in Keystone"
import sys, requests
ks, region = sys.argv[1], sys.argv[2]
body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "adminpass"}}}, "scope": {"system": {"all": True}}}}
t = requests.post(ks + "/auth/tokens", json=body, timeout=30).headers["X-Subject-Token"]
h = {"X-Auth-Token": t}
requests.post(ks + "/regions", json={"region": {"id": region}}, headers=h, timeout=30)
PY
register_endpoint() {   # $1: Ironic's URL
  "$VENV/bin/python" - "$KS" "Rehearsal-$RUN" "$1" <<'PY'
import sys, requests
ks, region, url = sys.argv[1:4]
body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": "adminpass"}}}, "scope": {"system": {"all": True}}}}
t = requests.post(ks + "/auth/tokens", json=body, timeout=30).headers["X-Subject-Token"]
h = {"X-Auth-Token": t}
s = requests.get(ks + "/services?type=baremetal", headers=h, timeout=30).json()["services"]
sid = s[0]["id"] if s else requests.post(ks + "/services", json={"service": {"name": "ironic", "type": "baremetal"}}, headers=h, timeout=30).json()["service"]["id"]
for e in requests.get(ks + "/endpoints?region_id=" + region, headers=h, timeout=30).json()["endpoints"]:
    requests.delete(ks + "/endpoints/" + e["id"], headers=h, timeout=30)
r = requests.post(ks + "/endpoints", json={"endpoint": {"service_id": sid, "interface": "public", "url": url, "region_id": region}}, headers=h, timeout=30)
r.raise_for_status()
PY
}

IRONIC_PID=""
start_ironic() {   # $1: db|api  (Ironic behind Keystone, ipmi hardware type, power sync every 5 s)
  local v=$1 port=$2 dir=$WORK/$1/ironic
  spawn "$VENV/bin/ironic" --config-file "$dir/ironic.conf" >"$dir/ironic.out" 2>&1
  IRONIC_PID=${PIDS[-1]}
  for _ in $(seq 150); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ] && return 0
    sleep 0.2
  done
  tail -20 "$dir/ironic.log" >&2 || true
  return 1
}
stop_ironic() {
  [ -n "$IRONIC_PID" ] || return 0
  kill -TERM -- "-$IRONIC_PID" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$IRONIC_PID" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$IRONIC_PID" 2>/dev/null || true
  IRONIC_PID=""
}

bm() {   # bm2ironic with this load's config files and its own audit log
  "$BIN" --log-dir "$WORK/$V/audit" --state-dir "$WORK/$V/state" "$@"
}
bmc_actions() { local n; n=$(cat "$WORK"/bmc*.log 2>/dev/null | grep -c '^power ' || true); echo $((n - VM_ACTIONS - NOVA_BMC_ACTIONS)); }

rehearse() {   # $1: db|api
  V=$1
  local port=$((PORT_BASE + $([ "$V" = db ] && echo 0 || echo 1)))
  local base="http://127.0.0.1:$port" ir=rh_${RUN}_${V}_ironic
  local n_actions

  step "0/$V" "staging: nova_bm v10, Juno Nova DB, nova.conf ($V load)"
  make_cloud "$V"
  local sum_before flavors_before
  sum_before=$(checksum "$V"); flavors_before=$(flavor_specs "$V")
  ok "8 nodes (1 soft-deleted), 3 instances (1 stopped), bm.large and Juno's 5 default flavors"

  step "1/$V" "deploy kernel and ramdisk (files: there is no Glance here)"
  [ -f "$WORK/deploy.kernel" ] && [ -f "$WORK/deploy.initramfs" ] || fail "no deploy images"
  ok "$KERNEL"

  step "2/$V" "create the empty Ironic database: ironic-dbsync upgrade"
  mkdir -p "$WORK/$V/ironic"
  # file:// images Ironic may read: the instances' kernels and ramdisks (the copied tree) only. Not
  # the instances' image_source (file://$WORK/image.qcow2): Ironic 39's adopt fails on an allowed
  # file:// image_source ('str' object has no attribute 'url', images.is_source_a_path; docs/api-and-keystone.md)
  BM2_IRONIC_KEYSTONE=$KS BM2_IRONIC_SYNC_INTERVAL=5 BM2_IRONIC_IPMI_RETRY=5 BM2_IRONIC_FORCE_POWER_SYNC=false BM2_IRONIC_TAKEOVER_INTERVAL=2 \
    BM2_IRONIC_FILE_PATHS=$NOVA_TFTP BM2_IRONIC_PXE_LOADERS=$BOOT scripts/ironic.sh conf "$WORK/$V/ironic" "mysql+pymysql://rh_${RUN}:$DB_PW@$MY_HOST:$MY_PORT/$ir?charset=utf8" "$port" >/dev/null
  chmod 600 "$WORK/$V/ironic/ironic.conf"
  cp "$WORK/$V/ironic/ironic.conf" "$WORK/$V/etc/ironic.conf"
  "$VENV/bin/ironic-dbsync" --config-file "$WORK/$V/ironic/ironic.conf" upgrade >"$WORK/$V/dbsync.log" 2>&1 \
    || fail "ironic-dbsync upgrade failed: $(tail -3 "$WORK/$V/dbsync.log")"
  ok "$(my -N -e "SELECT version_num FROM $ir.alembic_version")"

  local CONFS=(--nova-conf "$WORK/$V/etc/nova.conf" --ironic-conf "$WORK/$V/etc/ironic.conf")
  local ARGS=(--deploy-kernel "$KERNEL" --deploy-ramdisk "$RAMDISK")

  step "3/$V" "maintenance window: no baremetal nova-compute running (plan)"
  local out rc=0
  out=$(bm plan "${CONFS[@]}" "${ARGS[@]}" "${ARCH2[@]}" --json 2>"$WORK/$V/plan.err") || rc=$?
  echo "$out" > "$WORK/$V/plan.json"
  [ "$rc" = 0 ] || fail "plan exit $rc (a blocking conflict?): $(tail -3 "$WORK/$V/plan.err")"
  ! grep -q nova-compute-running "$WORK/$V/plan.json" || fail "plan reports a running nova-compute"
  ok "plan exit 0"

  step "4/$V" "update the flavors (flavors --apply)"
  rc=0; bm flavors "${CONFS[@]}" "${ARGS[@]}" --apply --yes >"$WORK/$V/flavors.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "flavors --apply exit $rc: $(tail -3 "$WORK/$V/flavors.out")"
  [ "$(my -N -e "SELECT value FROM rh_${RUN}_${V}_nova.instance_type_extra_specs WHERE \`key\` = 'baremetal:deploy_kernel_id' AND deleted = 0")" = "$KERNEL" ] \
    || fail "the flavor's baremetal:deploy_kernel_id is not the new kernel"
  ok "bm.large points at the Ironic deploy images"

  if [ "$V" = api ]; then
    step "6/$V" "start Ironic (keystone auth, ipmi); the catalog names it"
    register_endpoint "$base" || fail "cannot register Ironic's endpoint in Keystone"
    start_ironic "$V" "$port" || fail "Ironic did not come up on $base (log: $WORK/$V/ironic/ironic.log)"
    ok "$base"
  fi

  step "5/$V" "load nova_bm into Ironic (migrate --via $V)"
  local mig=(migrate "${CONFS[@]}" "${ARGS[@]}" "${ARCH2[@]}" --yes --json --via "$V")
  [ "$V" = api ] && mig+=(--os-cloud rehearsal)
  rc=0; bm "${mig[@]}" >"$WORK/$V/migrate.json" 2>"$WORK/$V/migrate.err" || rc=$?
  [ "$rc" = 0 ] || fail "migrate exit $rc: $(tail -3 "$WORK/$V/migrate.err")"
  local nodes ports
  nodes=$(my -N -e "SELECT COUNT(*) FROM $ir.nodes"); ports=$(my -N -e "SELECT COUNT(*) FROM $ir.ports")
  [ "$nodes" = 7 ] && [ "$ports" = 7 ] || fail "Ironic holds $nodes nodes and $ports ports, not 7 and 7"
  [ "$(checksum "$V")" = "$sum_before" ] || fail "nova_bm changed (table checksums differ): the source must only be read"
  ok "7 nodes, 7 ports; nova_bm unchanged"

  if [ "$V" = db ]; then
    step "6/$V" "start Ironic (keystone auth, ipmi); the catalog names it"
    register_endpoint "$base" || fail "cannot register Ironic's endpoint in Keystone"
    start_ironic "$V" "$port" || fail "Ironic did not come up on $base (log: $WORK/$V/ironic/ironic.log)"
    ok "$base"
  fi

  step "6/$V" "takeover: every node's power read from its BMC (verify --takeover)"
  rc=0; bm verify --takeover --timeout 120s --os-cloud rehearsal "${CONFS[@]}" \
    --log "ironic=$WORK/$V/ironic/ironic.log" >"$WORK/$V/takeover.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "verify --takeover exit $rc: $(grep -E '^ *failing|^takeover:|^bm2ironic:' "$WORK/$V/takeover.out" | cut -c1-240 | tr '\n' ' ')"
  local want got
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    [ "$del" = 1 ] && continue
    got=$(my -N -e "SELECT CONCAT(provision_state, ' ', COALESCE(power_state, 'NULL'), ' ', COALESCE(instance_uuid, '-')) FROM $ir.nodes WHERE uuid = '$(uuid bbbbbbbb "$id")'")
    if [ "$inst" = - ]; then want="available power $power -"; else want="active power $power $(uuid aaaaaaaa "$id")"; fi
    [ "$got" = "$want" ] || fail "node $id: Ironic has '$got', expected '$want'"
    [ "$(bmc_power "$id" "$addr")" = "$power" ] || fail "node $id: its BMC is no longer '$power'"
  done
  n_actions=$(bmc_actions)
  [ "$n_actions" = 0 ] || fail "$n_actions power action(s) reached the fake BMCs: $(grep -h '^power ' "$WORK"/bmc*.log | sort | uniq -c | tr '\n' ' ')"
  ok "7 taken over; BMCs: 2 on, 5 off, no power action"

  step "6/$V" "no takeover errors in the conductor log (watch gates it)"
  rc=0; bm watch --log "ironic=$WORK/$V/ironic/ironic.log" --from-start --for 3s "${CONFS[@]}" >"$WORK/$V/watch.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "watch exit $rc: $(tail -5 "$WORK/$V/watch.out")"
  ok "$(tail -1 "$WORK/$V/watch.out" | cut -c1-60)"

  [ "$V" = db ] && vm_reboot_step

  step "6/$V" "clients through Keystone: openstack baremetal node list, port list"
  "$OSC/bin/openstack" --os-cloud rehearsal baremetal node list --long -f json >"$WORK/$V/osc-nodes.json" 2>"$WORK/$V/osc.err" \
    || fail "openstack baremetal node list: $(tail -2 "$WORK/$V/osc.err")"
  "$OSC/bin/openstack" --os-cloud rehearsal baremetal port list --long -f json >"$WORK/$V/osc-ports.json" 2>>"$WORK/$V/osc.err" \
    || fail "openstack baremetal port list: $(tail -2 "$WORK/$V/osc.err")"
  python3 - "$WORK/$V/osc-nodes.json" "$WORK/$V/osc-ports.json" <<'PY' || fail "the openstack client does not show what was migrated (above)"
import json, sys
nodes = {n["uuid"]: n for n in json.load(open(sys.argv[1]))}
ports = json.load(open(sys.argv[2]))
u = lambda p, i: f"{p}-0000-4000-8000-{i:012d}"
want = {1: ("available", "power off", None), 2: ("available", "power off", None), 3: ("available", "power off", None),
        4: ("available", "power off", None), 5: ("active", "power on", u("aaaaaaaa", 5)),
        6: ("active", "power on", u("aaaaaaaa", 6)), 7: ("active", "power off", u("aaaaaaaa", 7))}
bad = []
if len(nodes) != 7: bad.append(f"{len(nodes)} nodes listed, not 7")
for i, (ps, pw, inst) in want.items():
    n = nodes.get(u("bbbbbbbb", i))
    if not n: bad.append(f"node {i} missing"); continue
    got = (n["provision_state"], n["power_state"], n["instance_uuid"])
    if got != (ps, pw, inst): bad.append(f"node {i}: {got} != {(ps, pw, inst)}")
macs = sorted(p["address"] for p in ports)
if macs != [f"52:54:00:00:03:0{i}" for i in range(1, 8)]: bad.append(f"ports {macs}")
for b in bad: print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
  ok "7 nodes and 7 ports as expected"

  step "8/$V" "os-baremetal-nodes from Ironic: bm2ironic proxy, nova baremetal-node-list"
  local pport=$((18790 + $([ "$V" = db ] && echo 0 || echo 1)))
  # the operator's project-scoped admin token is checked; the proxy reads Ironic with its own
  # system-scoped credentials (a project-scoped token would see no node: they belong to no project)
  spawn "$BIN" --log-dir "$WORK/$V/audit" proxy --listen "127.0.0.1:$pport" --auth keystone \
    --ironic-token-mode service --os-cloud rehearsal >"$WORK/$V/proxy.out" 2>&1
  local PROXY_PID=${PIDS[-1]} i
  for i in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$pport/healthz")" = 200 ] && break; sleep 0.2; done
  novacl() {
    env -u OS_CLIENT_CONFIG_FILE OS_AUTH_URL="$KS" OS_USERNAME=admin OS_PASSWORD=adminpass OS_PROJECT_NAME=admin \
      OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3 PYTHONWARNINGS=ignore \
      "$NOVACLIENT/bin/nova" --os-compute-api-version 2.1 --endpoint-override "http://127.0.0.1:$pport/v2.1" "$@"
  }
  novacl baremetal-node-list >"$WORK/$V/nova-list.out" 2>&1 || fail "nova baremetal-node-list: $(tail -3 "$WORK/$V/nova-list.out"; tail -3 "$WORK/$V/proxy.out")"
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    if [ "$del" = 1 ]; then
      ! grep -q "$(uuid bbbbbbbb "$id")" "$WORK/$V/nova-list.out" || fail "nova baremetal-node-list shows the soft-deleted node $id"
    else
      grep -q "$(uuid bbbbbbbb "$id")" "$WORK/$V/nova-list.out" || fail "nova baremetal-node-list does not show node $id: $(cat "$WORK/$V/nova-list.out")"
    fi
  done
  novacl baremetal-interface-list "$(uuid bbbbbbbb 5)" >"$WORK/$V/nova-if.out" 2>&1 || fail "nova baremetal-interface-list: $(tail -3 "$WORK/$V/nova-if.out")"
  grep -q "52:54:00:00:03:05" "$WORK/$V/nova-if.out" || fail "nova baremetal-interface-list does not show node 5's MAC: $(cat "$WORK/$V/nova-if.out")"
  kill -TERM -- "-$PROXY_PID" 2>/dev/null || true
  ok "7 nodes listed, node 5's interface shown (novaclient 7.1.2 through Keystone)"

  # ---- steps 7 and 8 (docs/config.md, docs/hosts.md): the new nova.conf, the instances to its host
  step "7/$V" "config: nova.conf for the Ironic driver (bm2ironic config)"
  juno_nova_conf "$V" "$port"
  ok "$(grep -c '"action"' "$WORK/$V/nova-compute/config.json") change(s); compute_driver = nova.virt.ironic.IronicDriver, host = $NEW_HOST"

  step "8/$V" "hosts: instances of bm-compute-1, -2 to $NEW_HOST (hosts --apply)"
  local hosts_q="SELECT uuid, host, node FROM rh_${RUN}_${V}_nova.instances WHERE deleted = 0 ORDER BY uuid" hosts_before by_host
  hosts_before=$(my -N -e "$hosts_q" | md5sum)
  by_host=$(my -N -e "SELECT CONCAT(host, ': ', COUNT(*)) FROM rh_${RUN}_${V}_nova.instances WHERE deleted = 0 GROUP BY host ORDER BY host" | tr '\n' ',' | sed 's/,$//; s/,/, /g')
  [ "$(my -N -e "SELECT COUNT(DISTINCT host) FROM rh_${RUN}_${V}_nova.instances WHERE deleted = 0 AND host LIKE 'bm-compute-_'")" = 2 ] \
    || fail "the instances are not on two old hosts: $(my -N -e "$hosts_q" | tr '\t\n' ' ;')"
  rc=0; bm hosts "${CONFS[@]}" --to "$NEW_HOST" --apply --yes --json >"$WORK/$V/hosts.json" 2>"$WORK/$V/hosts.err" || rc=$?
  [ "$rc" = 0 ] || fail "hosts --apply exit $rc: $(tail -3 "$WORK/$V/hosts.err")"
  for n in "${NODES[@]}"; do
    read -r id addr power inst del <<<"$n"
    [ "$inst" = - ] && continue
    got=$(my -N -e "SELECT CONCAT(host, ' ', node) FROM rh_${RUN}_${V}_nova.instances WHERE uuid = '$(uuid aaaaaaaa "$id")'")
    [ "$got" = "$NEW_HOST $(uuid bbbbbbbb "$id")" ] || fail "instance of node $id after hosts --apply: host and node '$got'"
  done
  ok "3 instances (from $by_host) now on $NEW_HOST"
  # ---- end of steps 7 and 8

  step "7-9/$V" "Juno nova-compute (Ironic driver, Keystone token) takes the instances over; a machine switched off"
  juno_nova_compute "$V" "$port" "$JUNO_CONF"
  ok "7 compute_nodes rows; instances as their machines; node 6 switched off at its BMC: its instance stopped"

  step "5/$V" "verify (database or API against nova_bm)"
  local vargs=("${CONFS[@]}")
  [ "$V" = api ] && vargs+=(--os-cloud rehearsal)
  rc=0; bm verify "${vargs[@]}" >"$WORK/$V/verify.out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || fail "verify exit $rc: $(tail -5 "$WORK/$V/verify.out")"
  ok "exit 0"

  step "back/$V" "getting back: rollback (nodes, ports, flavors, the instances' hosts)"
  if [ "$V" = db ]; then
    stop_ironic   # the runbook: stop Ironic first; it has changed the nodes (power state), hence --force
    rc=0; bm rollback "${CONFS[@]}" --yes --force >"$WORK/$V/rollback.out" 2>&1 || rc=$?
  else
    rc=0; bm rollback "${CONFS[@]}" --os-cloud rehearsal --yes >"$WORK/$V/rollback.out" 2>&1 || rc=$?
    stop_ironic
  fi
  [ "$rc" = 0 ] || fail "rollback exit $rc: $(tail -5 "$WORK/$V/rollback.out")"
  nodes=$(my -N -e "SELECT COUNT(*) FROM $ir.nodes"); ports=$(my -N -e "SELECT COUNT(*) FROM $ir.ports")
  [ "$nodes" = 0 ] && [ "$ports" = 0 ] || fail "after rollback Ironic still holds $nodes nodes and $ports ports"
  # rollback with the Nova database (nova.conf [database]) restores the flavors of the same change set
  grep -q "^Restored 2 flavor spec(s)" "$WORK/$V/rollback.out" || fail "rollback did not restore the flavors: $(cat "$WORK/$V/rollback.out")"
  # ---- and the instances' hosts (hosts --apply of step 8), exactly: host and node as before
  grep -q "^Restored the host and node of 3 instance(s)" "$WORK/$V/rollback.out" || fail "rollback did not restore the instances' hosts: $(cat "$WORK/$V/rollback.out")"
  [ "$(my -N -e "$hosts_q" | md5sum)" = "$hosts_before" ] || fail "the instances' host and node are not as before: $(my -N -e "$hosts_q" | tr '\t\n' ' ;')"
  [ "$(flavor_specs "$V")" = "$flavors_before" ] || fail "the flavors are not as before: $(flavor_specs "$V" | tr '\t\n' ' ;')"
  n_actions=$(bmc_actions)
  [ "$n_actions" = 0 ] || fail "the rollback made $n_actions power action(s) reach the fake BMCs"
  [ "$(checksum "$V")" = "$sum_before" ] || fail "nova_bm changed"
  ok "Ironic empty, flavors and instances' hosts as before, no power action, nova_bm unchanged"

  step "10/$V" "end of the window: the audit log holds the run"
  local run_id
  run_id=$(grep -o '"run_id":"[^"]*"' "$WORK/$V/migrate.json" | head -1 | cut -d'"' -f4)
  [ -n "$run_id" ] || fail "migrate --json printed no run id"
  grep -q "$run_id" "$WORK/$V"/audit/bm2ironic.log.* || fail "the audit log does not name run $run_id"
  ok "run $run_id"
}

# the wizard through the same rehearsal, in a real terminal (tmux), on the databases of the SQL load
# (rolled back: Ironic empty, flavors as before). BM2_REHEARSAL_SHOTS=DIR keeps its screens as PNGs.
T() { tmux -L "bm2rh-$RUN" "$@"; }
screen() { T capture-pane -p -t wiz; }
wait_screen() {   # $1: text; fails after 60 s with the screen
  local i
  for i in $(seq 600); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  fail "the wizard never showed '$1'; its screen: $(screen | grep -v '^ *$' | head -30)"
}
keys() { local k; for k in "$@"; do T send-keys -t wiz "$k"; sleep 0.15; done; }
shot() {   # $1: name; the screen with its colours, rendered to DIR/rehearsal-$1.png
  [ -n "${BM2_REHEARSAL_SHOTS:-}" ] || return 0
  mkdir -p "$WORK/shots"
  T capture-pane -p -e -t wiz > "$WORK/shots/$1.ansi"
}
wizard() {
  V=db
  local ir=rh_${RUN}_db_ironic
  step "0/wizard" "the wizard (REHEARSAL) in tmux on the same databases"
  command -v tmux >/dev/null || fail "tmux is missing (scripts/test.sh installs it)"
  local sum_before
  sum_before=$(checksum db)
  T new-session -d -s wiz -x 120 -y 40 "env -u NO_COLOR TERM=xterm-256color $BIN --log-dir $WORK/wizard/audit wizard --rehearse --nova-conf $WORK/db/etc/nova.conf --ironic-conf $WORK/db/etc/ironic.conf --deploy-kernel $KERNEL --deploy-ramdisk $RAMDISK ${ARCH2[*]} --conductor-log $WORK/db/ironic/ironic.log; echo EXIT=\$?; sleep 600"
  wait_screen "Connections and options"
  wait_screen "nova_bm database"
  sleep 1; shot 1-connections
  keys Enter
  wait_screen "nova_bm: 8 nodes"
  shot 2-inventory
  keys n
  wait_screen "all decided"
  shot 3-conflicts
  keys n
  wait_screen "REHEARSAL"
  shot 4-flavors
  keys n
  wait_screen "Press Enter to start the rehearsal"
  shot 5-confirm
  keys Enter
  wait_screen "rehearsal done, rolled back"
  shot 6-progress
  keys Enter
  wait_screen "Nothing stayed"
  shot 7-summary
  keys q
  wait_screen "EXIT=0"
  T kill-server 2>/dev/null || true
  [ "$(my -N -e "SELECT COUNT(*) FROM $ir.nodes")" = 0 ] || fail "the wizard's rehearsal left nodes in Ironic"
  [ "$(checksum db)" = "$sum_before" ] || fail "nova_bm changed"
  ok "connections, inventory (8 nodes), conflicts, flavors, confirm, progress, summary; nothing stayed"
  if [ -n "${BM2_REHEARSAL_SHOTS:-}" ]; then
    step "shots" "the wizard's screens to $BM2_REHEARSAL_SHOTS"
    local py=${BM2_SHOT_VENV:-/tmp/bm2ironic-shot-venv}/bin/python
    [ -x "$py" ] || { python3 -m venv "${py%/bin/python}" && "${py%/bin/python}/bin/pip" install -q --disable-pip-version-check pillow; }
    "$py" scripts/ansi2png.py "$WORK/shots" "$BM2_REHEARSAL_SHOTS" rehearsal- >/dev/null || fail "rendering the screenshots (scripts/ansi2png.py)"
    ok "$(ls "$WORK/shots" | wc -l) screens"
  fi
}

[ "$VIA" = api ] || rehearse db
[ "$VIA" = api ] || [ -n "${BM2_REHEARSAL_NO_WIZARD:-}" ] || wizard
[ "$VIA" = db ] || rehearse api

step end "no secret in any output (BMC and database passwords, Keystone's)"
leaks=$(grep -rlaF -e "$PW_PREFIX" -e "$DB_PW" -e adminpass "$WORK"/db "$WORK"/api 2>/dev/null \
  | grep -v -e '/etc/' -e '/ironic/ironic.conf$' -e '/ironic/ironic.log$' -e '/ironic/ironic.out$' -e '/nova-compute/nova.conf$' || true)
[ -z "$leaks" ] || fail "a password appears in: $leaks"
ok "outputs, reports and audit logs searched"
table
echo
echo "REHEARSAL PASSED: $VIA"
