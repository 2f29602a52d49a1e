//! The rules about the run rather than one node: `nova-compute-running` (raised first),
//! `orphan-interface` for interfaces whose node does not exist and `missing-deploy-images` (raised
//! last). See docs/conflicts.md.

use std::collections::BTreeSet;

use super::Checks;
use crate::core::migrate::conflict::{ConflictCode, Subject};
use crate::core::migrate::plan::fate::NodeAction;
use crate::core::migrate::plan::model::NodePlan;
use crate::core::source::model::Inventory;

impl Checks<'_> {
    /// `nova-compute-running`: nova-compute services still heartbeating on the baremetal hosts.
    pub(crate) fn nova_compute_running(&mut self, inv: &Inventory) {
        let Some(facts) = self.nova else { return };
        let hosts: BTreeSet<&str> =
            inv.nodes.iter().filter(|n| !n.node.deleted).filter_map(|n| n.node.service_host.as_deref()).collect();
        for h in hosts {
            if let Some((_, why)) = facts.running_compute(h) {
                self.d.raise(
                    ConflictCode::NovaComputeRunning,
                    Subject::Host { host: h.to_string() },
                    None,
                    format!("nova-compute on {h} {why} (stop it before the load)"),
                );
            }
        }
    }

    /// `orphan-interface`: interfaces pointing at a nova_bm node that does not exist.
    pub(crate) fn orphan_interfaces(&mut self, inv: &Inventory) {
        for i in &inv.orphan_interfaces {
            self.d.raise(
                ConflictCode::OrphanInterface,
                Subject::Interface { nova_bm_id: i.bm_node_id.unwrap_or(-1), interface_id: i.id },
                None,
                format!(
                    "interface {} ({}) points at nova_bm node {} which does not exist",
                    i.id,
                    i.address.as_deref().unwrap_or("-"),
                    i.bm_node_id.map(|v| v.to_string()).unwrap_or_else(|| "NULL".into())
                ),
            );
        }
    }

    /// `missing-deploy-images`: nodes to write (or blocked) but no deploy kernel and ramdisk given.
    pub(crate) fn missing_deploy_images(&mut self, nodes: &[NodePlan]) {
        let writes_any =
            nodes.iter().any(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace | NodeAction::Blocked));
        if writes_any && (self.opts.deploy_kernel.is_none() || self.opts.deploy_ramdisk.is_none()) {
            self.d.raise(ConflictCode::MissingDeployImages, Subject::Run, None, "no Ironic deploy kernel/ramdisk given: nodes would fail validation (give --deploy-kernel and --deploy-ramdisk)".into());
        }
    }
}
