//! The plan: a pure function from (nova_bm inventory, target state, Nova facts, options, resolutions)
//! to every node's fate, every conflict and every row to write. No I/O. Here: the types and the driver;
//! rules in `checks/` (docs/conflicts.md), rows in `rows.rs` (docs/mapping.md), invariants in `properties.rs`.

mod checks;
#[cfg(test)]
mod properties;
mod rows;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::core::db::conf::BaremetalConf;
use crate::core::ironic::target::{TargetKind, TargetState};
use crate::core::migrate::conflict::{Conflict, ConflictCode, Resolutions};
use crate::core::source::model::{BmNode, Inventory, InventoryNode};
use crate::core::source::nova::NovaFacts;
use checks::{Checks, Fate};
use rows::{build_node, build_port};
pub use rows::{DriverInfo, IronicNode, IronicPort, PowerManager};

/// Namespace of the uuids we generate (stable, so a rehearsal and the real run agree).
const BM2IRONIC_NS: uuid::Uuid = uuid::Uuid::from_u128(0x6b6d_3269_726f_4e69_8c00_6e6f_7661_626d);

/// A uuid as Ironic stores it (lower-case, hyphenated), or None when the text is not a uuid.
pub fn normalize_uuid(raw: &str) -> Option<String> {
    let t = raw.trim();
    // the hyphenated form only: Nova and Ironic never store the simple or braced forms
    if t.len() != 36 {
        return None;
    }
    uuid::Uuid::parse_str(t).ok().map(|u| u.hyphenated().to_string())
}

/// How free nodes arrive in modern Ironic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FreeState {
    #[default]
    Available,
    Manageable,
    Enroll,
}

impl std::str::FromStr for FreeState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "available" => Ok(FreeState::Available),
            "manageable" => Ok(FreeState::Manageable),
            "enroll" => Ok(FreeState::Enroll),
            _ => Err(format!("'{s}' is not a free state (available, manageable, enroll)")),
        }
    }
}

impl FreeState {
    fn as_str(self) -> &'static str {
        match self {
            FreeState::Available => "available",
            FreeState::Manageable => "manageable",
            FreeState::Enroll => "enroll",
        }
    }
}

/// Everything the operator tells the plan besides resolutions.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    pub default_arch: Option<String>,
    pub arch_by_host: BTreeMap<String, String>,
    pub resource_class: Option<String>,
    pub free_state: FreeState,
    /// nova.conf `[baremetal]` (power manager and its settings; cpu_arch of `conf_host`)
    pub baremetal: BaremetalConf,
    /// nova.conf `[DEFAULT] host`: the host whose `flavor_extra_specs` cpu_arch the conf gives
    pub conf_host: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeAction {
    Create,
    /// delete the Ironic node holding this uuid, then create ours
    Replace,
    Skip,
    AlreadyMigrated,
    /// an unresolved blocking conflict
    Blocked,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodePlan {
    pub nova_bm_id: i64,
    pub uuid: Option<String>,
    pub service_host: Option<String>,
    pub action: NodeAction,
    pub conflicts: Vec<ConflictCode>,
    pub node: Option<IronicNode>,
    pub ports: Vec<IronicPort>,
    /// Ironic id of the node a `replace` deletes.
    pub replaces: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanSummary {
    pub create: usize,
    pub skip: usize,
    pub already_migrated: usize,
    pub blocked: usize,
    pub maintenance: usize,
    pub active: usize,
    pub ports: usize,
    pub blocking: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SourceCounts {
    pub nodes: usize,
    pub live: usize,
    pub soft_deleted: usize,
    pub interfaces: usize,
    pub orphan_interfaces: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetInfo {
    pub kind: TargetKind,
    pub schema: String,
    pub existing_nodes: usize,
    pub existing_ports: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub source: SourceCounts,
    pub target: TargetInfo,
    pub nodes: Vec<NodePlan>,
    pub conflicts: Vec<Conflict>,
    pub warnings: Vec<String>,
    pub summary: PlanSummary,
    /// sha256 of what would be written (passwords excluded): the same plan, the same checksum.
    pub checksum: String,
}

impl Plan {
    pub fn blocking(&self) -> usize {
        self.summary.blocking
    }
    pub fn to_write(&self) -> impl Iterator<Item = &NodePlan> {
        self.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace))
    }
}

/// Builds the plan. Pure: the same inputs give the same plan (and checksum). The conflicts come in
/// the order they are raised: the run's Nova check, then node by node, then the run's last checks.
pub fn plan(
    inv: &Inventory,
    target: &TargetState,
    nova: Option<&NovaFacts>,
    opts: &PlanOptions,
    resolutions: &Resolutions,
) -> Plan {
    let mut cx = Checks::new(inv, target, nova, opts, resolutions);
    cx.nova_compute_running(inv);
    let nodes: Vec<NodePlan> = inv.nodes.iter().map(|entry| plan_node(&mut cx, entry, nova, opts)).collect();
    cx.orphan_interfaces(inv);
    cx.missing_deploy_images(&nodes);

    let kind = cx.kind;
    let conflicts = cx.into_conflicts();
    let warnings = warnings(&nodes, kind, opts);
    let summary = summarise(&nodes, &conflicts);
    let s = inv.summary();
    let checksum = checksum(&nodes);
    Plan {
        source: SourceCounts {
            nodes: s.nodes,
            live: s.live,
            soft_deleted: s.soft_deleted,
            interfaces: s.interfaces,
            orphan_interfaces: s.orphan_interfaces,
        },
        target: TargetInfo {
            kind,
            schema: target.schema.schema.clone(),
            existing_nodes: target.nodes.len(),
            existing_ports: target.ports.len(),
        },
        nodes,
        conflicts,
        warnings,
        summary,
        checksum,
    }
}

/// One nova_bm row: the checks in the order their conflicts are raised, then its rows.
fn plan_node(cx: &mut Checks, entry: &InventoryNode, nova: Option<&NovaFacts>, opts: &PlanOptions) -> NodePlan {
    let n = &entry.node;
    let mut f = Fate::new(n);
    if cx.deleted(entry, &mut f).is_break() {
        return finish(n, f, None, Vec::new());
    }
    cx.uuid(n, &mut f);
    if cx.uuid_in_ironic(n, &mut f).is_break() {
        return finish(n, f, None, Vec::new());
    }
    cx.instance_uuid(n, &mut f);
    cx.task_state(n, &mut f);
    cx.duplicate_instance(n, &mut f);
    cx.instance_missing_in_nova(n, &mut f);
    cx.instance_in_ironic(n, &mut f);
    cx.power(n, &mut f);
    let arch = cx.arch(n, &mut f);
    let cleaned = cx.sizes(n, &mut f);
    cx.interfaces(entry, &mut f);

    let n_write = cleaned.as_ref().unwrap_or(n);
    let node = if matches!(f.action, NodeAction::Create) {
        f.uuid.as_deref().map(|u| build_node(n_write, u, &f, arch.as_deref(), &cx.power, cx.kind, nova, opts))
    } else {
        None
    };
    let ports = match &node {
        Some(node) => entry
            .interfaces
            .iter()
            .filter(|i| !i.deleted && !f.skipped_interfaces.contains(&i.id))
            .filter_map(|i| build_port(i, node, f.keep_instance, cx.kind))
            .collect(),
        None => Vec::new(),
    };
    if f.replaces.is_some() && f.action == NodeAction::Create {
        f.action = NodeAction::Replace;
    }
    finish(n, f, node, ports)
}

fn finish(n: &BmNode, f: Fate, node: Option<IronicNode>, ports: Vec<IronicPort>) -> NodePlan {
    NodePlan {
        nova_bm_id: n.id,
        uuid: f.uuid,
        service_host: n.service_host.clone(),
        action: f.action,
        conflicts: f.codes,
        node,
        ports,
        replaces: f.replaces,
    }
}

/// What the operator should know that is no conflict.
fn warnings(nodes: &[NodePlan], kind: TargetKind, opts: &PlanOptions) -> Vec<String> {
    let mut warnings = Vec::new();
    let without_image = nodes
        .iter()
        .filter_map(|n| n.node.as_ref())
        .filter(|n| n.instance_uuid.is_some() && n.instance_info.get("image_source").is_none())
        .count();
    if without_image > 0 {
        warnings.push(format!(
            "{without_image} node(s) with an instance get no instance_info.image_source (give --nova-db): Ironic cannot tear them down later (LP#1368984)"
        ));
    }
    if kind == TargetKind::Modern && opts.resource_class.is_none() && nodes.iter().any(|n| n.node.is_some()) {
        warnings.push("no --resource-class: modern Nova schedules bare metal by resource class; nodes get none".into());
    }
    warnings
}

fn summarise(nodes: &[NodePlan], conflicts: &[Conflict]) -> PlanSummary {
    let mut summary = PlanSummary::default();
    for n in nodes {
        match n.action {
            NodeAction::Create | NodeAction::Replace => summary.create += 1,
            NodeAction::Skip => summary.skip += 1,
            NodeAction::AlreadyMigrated => summary.already_migrated += 1,
            NodeAction::Blocked => summary.blocked += 1,
        }
        if let Some(node) = &n.node {
            summary.maintenance += node.maintenance as usize;
            summary.active += (node.provision_state.as_deref() == Some("active")) as usize;
        }
        summary.ports += n.ports.len();
    }
    summary.blocking = conflicts.iter().filter(|c| c.is_unresolved_blocking()).count();
    summary
}

/// sha256 of what would be written (passwords excluded): the JSON array of `[uuid, action, node,
/// ports]` per node, hashed one node at a time (the same bytes as the whole array serialised at once,
/// without holding it: at 100k nodes that copy was most of the plan's memory).
fn checksum(nodes: &[NodePlan]) -> String {
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.update(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut h = Hashing(Sha256::new());
    h.0.update(b"[");
    for (k, n) in nodes.iter().enumerate() {
        if k > 0 {
            h.0.update(b",");
        }
        // through a Value, as before: its objects serialise with their keys sorted
        let _ = serde_json::to_writer(&mut h, &json!([n.uuid, n.action, n.node, n.ports]));
    }
    h.0.update(b"]");
    hex::encode(h.0.finalize())
}
