//! The plan: a pure function from (nova_bm inventory, target state, Nova facts, options, resolutions)
//! to every node's fate, every conflict and every row to write. No I/O. Here: the types and the driver;
//! rules in `checks/` (docs/conflicts.md), rows in `rows.rs` (docs/mapping.md), invariants in `properties.rs`.

mod checks;
mod checksum;
#[cfg(test)]
mod properties;
mod rows;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::core::db::conf::BaremetalConf;
use crate::core::ironic::target::{TargetKind, TargetState};
use crate::core::migrate::conflict::{Conflict, ConflictCode, Resolutions};
use crate::core::source::model::{BmNode, Inventory, InventoryNode};
use crate::core::source::nova::NovaFacts;
use checks::{Checks, Fate, Lookups};
use checksum::Checksum;
use rows::{build_rows, driver_of, provision_state_of, RowContext, RowSpec};
pub use rows::{DriverInfo, IronicNode, IronicPort, PowerManager, Rows};

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
    pub fn as_str(self) -> &'static str {
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

/// One nova_bm node's fate. Its rows are not kept (at 100k nodes they were most of the plan's
/// memory): `Plan::rows` builds them from the inventory when a loader or a screen needs them.
#[derive(Debug, Clone, Serialize)]
pub struct NodePlan {
    pub nova_bm_id: i64,
    pub uuid: Option<String>,
    pub service_host: Option<String>,
    pub action: NodeAction,
    pub conflicts: Vec<ConflictCode>,
    /// what is written for it, in short; None when nothing is
    pub write: Option<WriteSummary>,
    /// Ironic id of the node a `replace` deletes.
    pub replaces: Option<i64>,
    /// its place in the inventory the plan was made from
    #[serde(skip)]
    index: usize,
    #[serde(skip)]
    spec: Option<RowSpec>,
}

/// The few facts of a node's rows that tables and summaries show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WriteSummary {
    pub driver: &'static str,
    pub provision_state: Option<&'static str>,
    pub maintenance: bool,
    pub ports: usize,
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
    /// what the rows are built from: the inventory planned, and the options
    #[serde(skip)]
    inventory: Arc<Inventory>,
    #[serde(skip)]
    ctx: RowContext,
}

impl Plan {
    /// The rows written for this node (None when nothing is), built from the inventory the plan was
    /// made from: the same rows each time, and the ones the checksum covers.
    pub fn rows(&self, n: &NodePlan) -> Option<Rows> {
        let spec = n.spec.as_ref()?;
        let uuid = n.uuid.as_deref()?;
        let entry = self.inventory.nodes.get(n.index)?;
        Some(build_rows(entry, uuid, spec, &self.ctx))
    }
    /// The nodes written, with their rows (built as the iterator reaches them).
    pub fn rows_to_write(&self) -> impl Iterator<Item = (&NodePlan, Rows)> {
        self.to_write().filter_map(move |n| self.rows(n).map(|r| (n, r)))
    }
    pub fn blocking(&self) -> usize {
        self.summary.blocking
    }
    pub fn to_write(&self) -> impl Iterator<Item = &NodePlan> {
        self.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace))
    }
}

/// Builds the plan. Pure: the same inputs give the same plan (and checksum). The conflicts come in
/// the order they are raised: the run's Nova check, then node by node, then the run's last checks.
/// Each node's rows are built once here (for the checksum, the warnings and the summary) and
/// dropped; `Plan::rows` builds them again when they are written.
pub fn plan(
    inv: &Arc<Inventory>,
    target: &TargetState,
    nova: Option<&NovaFacts>,
    opts: &PlanOptions,
    resolutions: &Resolutions,
) -> Plan {
    let threads = if inv.nodes.len() >= PARALLEL_FROM {
        std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4)
    } else {
        1 // a few tens of milliseconds: not worth a thread's memory (each has its own malloc arena)
    };
    plan_on(inv, target, nova, opts, resolutions, threads, ROWS_CHUNK)
}

/// `plan` on `threads` threads, in pieces of `chunk` nodes: the same plan whatever they are.
fn plan_on(
    inv: &Arc<Inventory>,
    target: &TargetState,
    nova: Option<&NovaFacts>,
    opts: &PlanOptions,
    resolutions: &Resolutions,
    threads: usize,
    chunk: usize,
) -> Plan {
    let lookups = Lookups::new(inv, target, nova, opts, resolutions);
    let mut cx = lookups.checks(opts, nova, resolutions);
    cx.nova_compute_running(inv);
    let ctx = RowContext { opts: opts.clone(), power: cx.power.clone(), kind: cx.kind };
    // the checks and rows of every node, in pieces on every core, taken in order
    let pass = nodes_pass(inv, &lookups, nova, opts, resolutions, &ctx, (threads, chunk));
    let nodes = pass.nodes;
    let without_image = pass.without_image;
    let checksum = pass.checksum;
    cx.extend_conflicts(pass.conflicts);
    cx.orphan_interfaces(inv);
    cx.missing_deploy_images(&nodes);

    let kind = cx.kind;
    let conflicts = cx.into_conflicts();
    let warnings = warnings(&nodes, without_image, kind, opts);
    let summary = summarise(&nodes, &conflicts);
    let s = inv.summary();
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
        inventory: Arc::clone(inv),
        ctx,
    }
}

/// Nodes per piece of `nodes_pass`; a piece's checksum JSON is about 2 MB.
const ROWS_CHUNK: usize = 2048;
/// From how many nodes `nodes_pass` uses every core.
const PARALLEL_FROM: usize = 16 * ROWS_CHUNK;

/// What the pass over the nodes gives.
struct NodesPass {
    nodes: Vec<NodePlan>,
    /// raised node by node, in the nodes' order
    conflicts: Vec<Conflict>,
    checksum: String,
    without_image: usize,
}

/// The checks of every node, then its rows, built once (and dropped) for its `WriteSummary` and the
/// checksum (sha256 of every node's `[uuid, action, node, ports]`, see `checksum`). Pieces of
/// `chunk` nodes go to `threads` threads, a wave at a time, each piece with its own `Checks` over
/// the shared lookups; their nodes, conflicts and checksum bytes are taken in order: the same plan
/// (and conflicts in the same order) whatever the number of threads.
fn nodes_pass(
    inv: &Inventory,
    lookups: &Lookups,
    nova: Option<&NovaFacts>,
    opts: &PlanOptions,
    resolutions: &Resolutions,
    ctx: &RowContext,
    (threads, chunk): (usize, usize),
) -> NodesPass {
    let (threads, chunk) = (threads.max(1), chunk.max(1));
    let piece = |range: std::ops::Range<usize>| {
        let mut cx = lookups.checks(opts, nova, resolutions);
        let mut nodes: Vec<NodePlan> = range.map(|k| plan_node(&mut cx, k, &inv.nodes[k], nova)).collect();
        let (bytes, without_image) = rows_piece(inv, &mut nodes, ctx);
        (nodes, cx.into_conflicts(), bytes, without_image)
    };
    let mut out = NodesPass {
        nodes: Vec::with_capacity(inv.nodes.len()),
        conflicts: Vec::new(),
        checksum: String::new(),
        without_image: 0,
    };
    let mut sum = Checksum::new();
    let total = inv.nodes.len();
    let mut start = 0;
    while start < total {
        let ranges: Vec<std::ops::Range<usize>> = (0..threads)
            .map(|t| (start + t * chunk).min(total)..(start + (t + 1) * chunk).min(total))
            .filter(|r| !r.is_empty())
            .collect();
        start = (start + threads * chunk).min(total);
        let mut ranges = ranges.into_iter();
        let first = ranges.next();
        let results = std::thread::scope(|s| {
            let others: Vec<_> = ranges.map(|r| s.spawn(|| piece(r))).collect();
            let mut results: Vec<_> = first.map(&piece).into_iter().collect();
            for h in others {
                results.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            results
        });
        for (nodes, conflicts, bytes, without_image) in results {
            out.nodes.extend(nodes);
            out.conflicts.extend(conflicts);
            sum.chunk(&bytes);
            out.without_image += without_image;
        }
    }
    out.checksum = sum.finish();
    out
}

/// The rows of one piece of `nodes_pass`: its nodes' `WriteSummary`s, and their elements of the
/// checksum, comma-separated.
fn rows_piece(inv: &Inventory, nodes: &mut [NodePlan], ctx: &RowContext) -> (Vec<u8>, usize) {
    let mut bytes = Vec::with_capacity(nodes.len() * 1024);
    let mut without_image = 0usize;
    for (k, np) in nodes.iter_mut().enumerate() {
        let rows = match (&np.spec, np.uuid.as_deref(), inv.nodes.get(np.index)) {
            (Some(spec), Some(uuid), Some(entry)) => Some(build_rows(entry, uuid, spec, ctx)),
            _ => None,
        };
        if let (Some(r), Some(spec)) = (&rows, &np.spec) {
            np.write = Some(WriteSummary {
                driver: driver_of(spec, ctx),
                provision_state: provision_state_of(spec, ctx),
                maintenance: r.node.maintenance,
                ports: r.ports.len(),
            });
            without_image += usize::from(r.node.instance_uuid.is_some() && spec.image_source.is_none());
        }
        if k > 0 {
            bytes.push(b',');
        }
        checksum::encode_node(&mut bytes, np, rows.as_ref());
    }
    (bytes, without_image)
}

/// One nova_bm row: the checks in the order their conflicts are raised, then what its rows are
/// built from.
fn plan_node(cx: &mut Checks, index: usize, entry: &InventoryNode, nova: Option<&NovaFacts>) -> NodePlan {
    let n = &entry.node;
    let mut f = Fate::new(n);
    if cx.deleted(entry, &mut f).is_break() {
        return finish(n, index, f, None);
    }
    cx.uuid(n, &mut f);
    if cx.uuid_in_ironic(n, &mut f).is_break() {
        return finish(n, index, f, None);
    }
    cx.instance_uuid(n, &mut f);
    cx.task_state(n, &mut f);
    cx.duplicate_instance(n, &mut f);
    cx.instance_missing_in_nova(n, &mut f);
    cx.instance_in_ironic(n, &mut f);
    cx.power(n, &mut f);
    let arch = cx.arch(n, &mut f);
    cx.sizes(n, &mut f);
    cx.interfaces(entry, &mut f);

    let spec = (matches!(f.action, NodeAction::Create) && f.uuid.is_some()).then(|| RowSpec::new(n, &f, arch, nova));
    if f.replaces.is_some() && f.action == NodeAction::Create {
        f.action = NodeAction::Replace;
    }
    finish(n, index, f, spec)
}

fn finish(n: &BmNode, index: usize, f: Fate, spec: Option<RowSpec>) -> NodePlan {
    NodePlan {
        nova_bm_id: n.id,
        uuid: f.uuid,
        service_host: n.service_host.clone(),
        action: f.action,
        conflicts: f.codes,
        write: None,
        replaces: f.replaces,
        index,
        spec,
    }
}

/// What the operator should know that is no conflict.
fn warnings(nodes: &[NodePlan], without_image: usize, kind: TargetKind, opts: &PlanOptions) -> Vec<String> {
    let mut warnings = Vec::new();
    if without_image > 0 {
        warnings.push(format!(
            "{without_image} node(s) with an instance get no instance_info.image_source (give --nova-db): Ironic cannot tear them down later (LP#1368984)"
        ));
    }
    if kind == TargetKind::Modern && opts.resource_class.is_none() && nodes.iter().any(|n| n.write.is_some()) {
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
        if let Some(w) = &n.write {
            summary.maintenance += usize::from(w.maintenance);
            summary.active += usize::from(w.provision_state == Some("active"));
            summary.ports += w.ports;
        }
    }
    summary.blocking = conflicts.iter().filter(|c| c.is_unresolved_blocking()).count();
    summary
}
