#!/usr/bin/env bash
# rehearse-upgrade.sh STEP: the commands of docs/upgrade-runbook.md, one runbook step at a time, as an
# operator runs them on staging, with the cloud's own config files. Read it beside the runbook: each
# step below names its section. It only runs the commands and stops (non-zero) at the first that
# fails; it stages nothing and checks nothing.
#
# tests/it/rehearsal.rs runs it end to end on one machine (scripts/test.sh, in CI): it builds the cloud
# as nova baremetal left it (nova_bm v10 and a Juno Nova database on MariaDB, fake BMCs, a QEMU machine,
# the real Ironic behind the real Keystone, Juno's Nova: API, scheduler, conductor, nova-compute),
# calls the steps in the runbook's order for both loads at once (VIA=db and VIA=api, each on a cloud
# of its own), and checks what each step did itself: database rows, Ironic's and Nova's API answers,
# the BMCs' power, the machine's console. Its README: docs/upgrade-runbook.md, "The whole runbook,
# rehearsed on one machine".
#
# Usage: scripts/rehearse-upgrade.sh STEP [ARG]
#   dbsync         2.   the empty Ironic database (ironic-dbsync upgrade)
#   plan           3.   the plan; exit 3 while a conflict blocks          -> $OUT/plan.json
#   flavors        4.   the flavors point at the new deploy images
#   migrate        5.   nova_bm into Ironic, by SQL (VIA=db) or Ironic's API (VIA=api) -> $OUT/migrate.json
#   takeover       6.   verify --takeover, then watch the conductor log    -> $OUT/takeover.txt, watch.txt
#   clients        6.   the openstack client through Keystone              -> $OUT/nodes.json, ports.json
#   reboot NODE    9b.  one reboot through Ironic
#   nova-list NODE 8.   os-baremetal-nodes through `bm2ironic proxy` (python-novaclient) -> $OUT/nova-*.txt
#   config         7.   nova.conf for the Ironic driver                    -> $NEW_NOVA_CONF
#   hosts          8.   the instances of the old compute hosts to NEW_HOST -> $OUT/hosts.json
#   smoke CMD...   9c.  one of Nova's own commands: `nova CMD...` as the operator runs it -> $OUT/smoke-CMD.txt
#   verify         5.   verify against nova_bm                             -> $OUT/verify.txt
#   rollback       back. getting back (VIA=db: Ironic stopped first, hence --force) -> $OUT/rollback.txt
#   wizard         0.   the wizard's rehearsal on the same files (a terminal)
#
# Inputs (environment):
#   NOVA_CONF, IRONIC_CONF   the old nova.conf ([database], [baremetal]) and the new ironic.conf
#   DEPLOY_KERNEL, DEPLOY_RAMDISK   step 1's deploy images (Glance ids, or file:// URLs)
#   ARCH                     HOST=ARCH for a host whose cpu_arch nova.conf does not give (optional)
#   VIA                      db or api: how step 5 loads (default db)
#   OS_CLOUD                 the cloud (clouds.yaml, OS_CLIENT_CONFIG_FILE) whose catalog names Ironic
#   IRONIC_URL, IRONIC_LOG   Ironic's API (config), the conductor's log (takeover, wizard)
#   NEW_HOST, NEW_NOVA_CONF  the Ironic driver's nova-compute host, and where its nova.conf goes
#   PROXY_URL, NOVA_RC       `bm2ironic proxy`, and an openrc (OS_AUTH_URL, ...) for python-novaclient
#   NOVA_API_RC, NOVA_API    step 9c: an openrc for Nova's own API and its `nova` client (on a real
#                            cloud the admin openrc and any nova; the rehearsal's is the admin openrc
#                            of a Keystone that serves v2.0, with Juno's python-novaclient 2.20.0)
#   OUT                      where the outputs go (default: .); the audit log in $OUT/audit
#   BM2IRONIC_BIN, IRONIC_DBSYNC, OPENSTACK, NOVA   the programs (default: from PATH)
set -euo pipefail

step=${1:?usage: $0 STEP [ARG] (the steps and their inputs: the top of this file)}
OUT=${OUT:-.}
VIA=${VIA:-db}
BIN=${BM2IRONIC_BIN:-bm2ironic}
mkdir -p "$OUT"
CONFS=(--nova-conf "${NOVA_CONF:?the old nova.conf (the inputs: the top of this file)}"
  --ironic-conf "${IRONIC_CONF:?the new ironic.conf (the inputs: the top of this file)}")
IMAGES=(--deploy-kernel "${DEPLOY_KERNEL:?the deploy kernel of step 1}" --deploy-ramdisk "${DEPLOY_RAMDISK:?the deploy ramdisk of step 1}")
ARCHS=()
[ -z "${ARCH:-}" ] || ARCHS=(--arch "$ARCH")

# bm2ironic with its audit log and state directory beside the outputs
bm() { "$BIN" --log-dir "$OUT/audit" --state-dir "$OUT/state" "$@"; }

case "$step" in
  dbsync)   # 2. Create the empty Ironic database
    "${IRONIC_DBSYNC:-ironic-dbsync}" --config-file "$IRONIC_CONF" upgrade
    ;;
  plan)     # 3. Start the maintenance window: no baremetal nova-compute may run (the plan says so)
    bm plan "${CONFS[@]}" "${IMAGES[@]}" "${ARCHS[@]}" --json >"$OUT/plan.json"
    ;;
  flavors)  # 4. Update the flavors
    bm flavors "${CONFS[@]}" "${IMAGES[@]}" --apply --yes
    ;;
  migrate)  # 5. Load nova_bm into Ironic (by SQL before Ironic starts, or through its API)
    via=(--via "$VIA")
    [ "$VIA" = db ] || via+=(--os-cloud "$OS_CLOUD")
    bm migrate "${CONFS[@]}" "${IMAGES[@]}" "${ARCHS[@]}" "${via[@]}" --yes --json >"$OUT/migrate.json"
    ;;
  takeover) # 6. Start Ironic; watch the takeover
    bm verify --takeover --timeout 120s --os-cloud "$OS_CLOUD" "${CONFS[@]}" --log "ironic=$IRONIC_LOG" >"$OUT/takeover.txt"
    bm watch --log "ironic=$IRONIC_LOG" --from-start --for 3s "${CONFS[@]}" >"$OUT/watch.txt"
    ;;
  clients)  # 6. The operator's own look, through Keystone
    "${OPENSTACK:-openstack}" --os-cloud "$OS_CLOUD" baremetal node list --long -f json >"$OUT/nodes.json"
    "${OPENSTACK:-openstack}" --os-cloud "$OS_CLOUD" baremetal port list --long -f json >"$OUT/ports.json"
    ;;
  reboot)   # 9b. Before the window closes: one reboot
    "${OPENSTACK:-openstack}" --os-cloud "$OS_CLOUD" baremetal node reboot "${2:?usage: $0 reboot NODE}"
    ;;
  nova-list) # 8. Nova's os-baremetal-nodes answered from Ironic by `bm2ironic proxy` (runs as a service)
    (
      # shellcheck disable=SC1090
      . "$NOVA_RC"
      unset OS_CLOUD OS_CLIENT_CONFIG_FILE
      nova() { "${NOVA:-nova}" --os-compute-api-version 2.1 --endpoint-override "$PROXY_URL/v2.1" "$@"; }
      nova baremetal-node-list >"$OUT/nova-nodes.txt"
      nova baremetal-interface-list "${2:?usage: $0 nova-list NODE}" >"$OUT/nova-interfaces.txt"
    )
    ;;
  config)   # 7. nova.conf for the Ironic driver (Juno's: the token is added at run time)
    bm --nova-conf "$NOVA_CONF" --ironic-url "$IRONIC_URL" config --target juno --ironic-noauth \
      --host "$NEW_HOST" --write-nova "$NEW_NOVA_CONF" --json >"$OUT/config.json"
    ;;
  hosts)    # 8. nova-compute: the instances of the old compute hosts move to the new one
    bm hosts "${CONFS[@]}" --to "$NEW_HOST" --apply --yes --json >"$OUT/hosts.json"
    ;;
  smoke)    # 9c. Before the window closes: Nova runs the cloud (one command of the section at a time)
    shift
    [ $# -gt 0 ] || { echo "usage: $0 smoke NOVA-COMMAND [ARGS] (runbook 9c)" >&2; exit 2; }
    (
      # shellcheck disable=SC1090
      . "${NOVA_API_RC:?an openrc for the Nova API (the inputs: the top of this file)}"
      unset OS_CLOUD OS_CLIENT_CONFIG_FILE
      "${NOVA_API:-nova}" "$@" >"$OUT/smoke-$1.txt"
    )
    ;;
  verify)   # 5. (after the load) verify Ironic against nova_bm
    via=()
    [ "$VIA" = db ] || via=(--os-cloud "$OS_CLOUD")
    bm verify "${CONFS[@]}" "${via[@]}" >"$OUT/verify.txt"
    ;;
  rollback) # Getting back: nodes, ports, flavors, the instances' hosts
    if [ "$VIA" = db ]; then
      # Ironic is stopped first; it has changed the nodes (their power state): --force
      bm rollback "${CONFS[@]}" --yes --force >"$OUT/rollback.txt"
    else
      # through Ironic's API, before it is stopped
      bm rollback "${CONFS[@]}" --os-cloud "$OS_CLOUD" --yes >"$OUT/rollback.txt"
    fi
    ;;
  wizard)   # 0. Rehearse on staging: the wizard, the same files
    bm wizard --rehearse --nova-conf "$NOVA_CONF" --ironic-conf "$IRONIC_CONF" "${IMAGES[@]}" "${ARCHS[@]}" \
      --conductor-log "$IRONIC_LOG"
    ;;
  *)
    echo "$0: no step '$step' (the steps: the top of this file)" >&2
    exit 2
    ;;
esac
