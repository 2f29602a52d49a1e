#!/usr/bin/env bash
# ironic.sh: a real Ironic (PyPI `ironic`) for the tests, in a cached venv.
#
# Usage: scripts/ironic.sh install            create the venv (cached in $BM2_IRONIC_VENV) and print its path
#        scripts/ironic.sh conf DIR DB_URL PORT  write DIR/ironic.conf for a throw-away all-in-one Ironic
#                                               (noauth, rpc_transport=none, loopback only)
# With BM2_IRONIC_KEYSTONE=http://127.0.0.1:PORT/v3 the conf has auth_strategy = keystone behind that
# Keystone (service user ironic/ironicpass of scripts/keystone.sh; tokens validated on every request).
# The netboot of migrated instances (#24: `ramdisk` deploy, `pxe` boot, pxelinux for BIOS nodes, the
# config under DIR/tftpboot/<node uuid>/ and pxelinux.cfg/01-<mac> links) takes, optionally:
#   BM2_IRONIC_FILE_PATHS=DIR[,DIR]   where file:// kernels and ramdisks may come from ([conductor]
#                                     file_url_allowed_paths; Ironic refuses any other path)
#   BM2_IRONIC_PXE_LOADERS=DIR        copy DIR/pxelinux.0 and DIR/ldlinux.c32 into the TFTP root at start
#                                     ([pxe] loader_file_paths; the operator's tftp server setup otherwise)
#   BM2_IRONIC_TAKEOVER_INTERVAL=S    how often the conductor takes over ACTIVE nodes that are not its
#                                     own yet ([conductor] sync_local_state_interval, 180 s by default)
# A new deploy with ironic-python-agent (#46: `direct` deploy, cleaning; scripts/ipa-ramdisk.sh) takes:
#   BM2_IRONIC_API_HOST=NAME          the host name in the API URL the agent is given
#                                     ([service_catalog] endpoint_override; 127.0.0.1 by default)
#   BM2_IRONIC_HTTP_URL=URL           [deploy] http_url, where the agent fetches the image the conductor
#                                     cached into DIR/httpboot (something must serve it there)
#   BM2_IRONIC_AUTOMATED_CLEAN=true   cleaning after every tear-down (false by default); the cleaning
#                                     is the metadata erase only (erase_devices_priority = 0)
#   BM2_IRONIC_GLANCE=URL             images from this Glance, read as Keystone's admin (with
#   BM2_IRONIC_GLANCE_KEYSTONE=URL    BM2_IRONIC_GLANCE_PASSWORD, project admin) at this Keystone v3;
#                                     md5 checksums accepted (Glance 15 has no os_hash_*)
# The tests call `ironic-dbsync` and `ironic` from the venv themselves, with such a conf.
set -euo pipefail

VENV=${BM2_IRONIC_VENV:-/tmp/bm2ironic-ironic-venv}
SPEC=${BM2_IRONIC_SPEC:-ironic==39.0.0}
export PYTHONWARNINGS=ignore
log() { echo "[ironic] $*" >&2; }

install() {
  # the ipmi hardware type refuses to load without ipmitool
  command -v ipmitool >/dev/null 2>&1 || { . "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"; apt_ensure ipmitool; }
  if [ ! -x "$VENV/bin/ironic" ] || [ "$(cat "$VENV/.spec" 2>/dev/null)" != "$SPEC+pyghmi" ]; then
    log "creating $VENV with $SPEC (about a minute, cached afterwards)"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip
    "$VENV/bin/pip" install -q --disable-pip-version-check "$SPEC" PyMySQL psycopg2-binary pyghmi
    echo "$SPEC+pyghmi" > "$VENV/.spec"
  fi
  echo "$VENV"
}

conf() {
  local dir=$1 db=$2 port=$3
  mkdir -p "$dir"/{state,locks,tftpboot/master_images,httpboot}
  local ks=${BM2_IRONIC_KEYSTONE:-} strategy=noauth
  [ -z "$ks" ] || strategy=keystone
  local loaders="" l=${BM2_IRONIC_PXE_LOADERS:-}
  [ -z "$l" ] || loaders="loader_file_paths = pxelinux.0:$l/pxelinux.0,ldlinux.c32:$l/ldlinux.c32
"
  cat > "$dir/ironic.conf" <<CONF
[DEFAULT]
auth_strategy = $strategy
rpc_transport = none
host = bm2ironic-test-conductor
enabled_hardware_types = fake-hardware,ipmi,manual-management
enabled_boot_interfaces = fake,pxe
enabled_deploy_interfaces = fake,direct,ramdisk
enabled_management_interfaces = fake,ipmitool,noop
enabled_power_interfaces = fake,ipmitool
enabled_console_interfaces = no-console,fake
enabled_inspect_interfaces = no-inspect,fake
enabled_raid_interfaces = no-raid,fake
enabled_rescue_interfaces = no-rescue,fake
enabled_vendor_interfaces = no-vendor,fake,ipmitool
enabled_bios_interfaces = no-bios,fake
enabled_firmware_interfaces = no-firmware,fake
enabled_network_interfaces = noop
enabled_storage_interfaces = noop
default_network_interface = noop
log_file = $dir/ironic.log
debug = false
state_path = $dir/state

[database]
connection = $db

[api]
host_ip = 127.0.0.1
port = $port
api_workers = 1

[conductor]
automated_clean = ${BM2_IRONIC_AUTOMATED_CLEAN:-false}
graceful_shutdown_timeout = 5
# test BMC addresses are 127.0.0.1 only
sync_power_state_interval = ${BM2_IRONIC_SYNC_INTERVAL:-60}
power_state_sync_max_retries = 2
# true (Ironic's default): a machine found in another power state than recorded is put back
force_power_state_during_sync = ${BM2_IRONIC_FORCE_POWER_SYNC:-true}
# the takeover of ACTIVE nodes (deploy.prepare: the ramdisk deploy writes their PXE config)
sync_local_state_interval = ${BM2_IRONIC_TAKEOVER_INTERVAL:-180}
file_url_allowed_paths = /var/lib/ironic${BM2_IRONIC_FILE_PATHS:+,$BM2_IRONIC_FILE_PATHS}

[ipmi]
# give up on an unreachable BMC quickly (default 60 s per command): tests wait on it
command_retry_timeout = ${BM2_IRONIC_IPMI_RETRY:-10}
min_command_interval = ${BM2_IRONIC_IPMI_INTERVAL:-1}

[oslo_concurrency]
lock_path = $dir/locks

[json_rpc]
auth_strategy = noauth
host_ip = 127.0.0.1

[pxe]
tftp_root = $dir/tftpboot
tftp_master_path = $dir/tftpboot/master_images
# the images a deploy caches (not /var/lib/ironic)
images_path = $dir/images
instance_master_path = $dir/master_images
$loaders
[deploy]
http_root = $dir/httpboot
http_url = ${BM2_IRONIC_HTTP_URL:-http://127.0.0.1:8088}
# cleaning erases the disks' metadata (partition tables, file system signatures), not every block
erase_devices_priority = 0
erase_devices_metadata_priority = 10

[agent]
certificates_path = $dir/certificates
# Glance 15's images have an md5 checksum only
allow_md5_checksum = $([ -n "${BM2_IRONIC_GLANCE:-}" ] && echo true || echo false)

[dhcp]
dhcp_provider = none

[service_catalog]
auth_type = none
endpoint_override = http://${BM2_IRONIC_API_HOST:-127.0.0.1}:$port
CONF
  if [ -n "$ks" ]; then
    cat >> "$dir/ironic.conf" <<CONF

[keystone_authtoken]
www_authenticate_uri = $ks
auth_url = $ks
auth_type = password
username = ironic
password = ironicpass
user_domain_name = Default
project_name = service
project_domain_name = Default
interface = public
# no cache: a token revoked in Keystone is refused at once
token_cache_time = -1
CONF
  fi
  if [ -n "${BM2_IRONIC_GLANCE:-}" ]; then
    cat >> "$dir/ironic.conf" <<CONF

[glance]
auth_type = password
auth_url = ${BM2_IRONIC_GLANCE_KEYSTONE:?with BM2_IRONIC_GLANCE}
username = admin
password = ${BM2_IRONIC_GLANCE_PASSWORD:?with BM2_IRONIC_GLANCE}
project_name = admin
user_domain_name = Default
project_domain_name = Default
endpoint_override = $BM2_IRONIC_GLANCE
CONF
  fi
  echo "$dir/ironic.conf"
}

case "${1:-}" in
  install) install ;;
  conf) shift; conf "$@" ;;
  *) echo "usage: $0 install | conf DIR DB_URL PORT" >&2; exit 2 ;;
esac
