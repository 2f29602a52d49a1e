//! The plan: a pure function from (nova_bm inventory, target state, Nova facts, options, resolutions)
//! to every node's fate, every conflict and every row to write. No I/O. Here: the driver; what the
//! plan is made of in `model.rs`, the operator's options in `options.rs`, a node's fate in
//! `fate.rs`, uuids in `uuids.rs`, rules in `checks/` (docs/conflicts.md), rows in `rows.rs`
//! (docs/mapping.md), the checksum in `checksum.rs`, invariants in `properties.rs`.

mod boot;
mod checks;
mod checksum;
mod fate;
mod model;
mod options;
#[cfg(test)]
mod properties;
mod rows;
pub use rows::{size_is_possible, MAX_SIZE};
mod uuids;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::core::ironic::target::{TargetKind, TargetState};
use crate::core::migrate::conflict::{Conflict, Resolutions};
use crate::core::source::model::{BmNode, Inventory, InventoryNode};
use crate::core::source::nova::NovaFacts;
use checks::{Checks, Lookups};
use checksum::Checksum;
use fate::Fate;
use rows::{build_rows, driver_of, provision_state_of, RowContext, RowSpec};

pub use boot::{BootHow, NextBoot};
pub use fate::NodeAction;
pub use model::{MissingOptions, NodePlan, Plan, PlanSummary, SourceCounts, TargetInfo, WriteSummary};
pub use options::{FreeState, PlanOptions};
pub use rows::{DriverInfo, IronicNode, IronicPort, PowerManager, Rows};
pub use uuids::normalize_uuid;

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
    let lookups = Lookups::new(inv, target, nova, opts, resolutions, threads > 1);
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
    let mut warnings = warnings(&nodes, (without_image, nova.is_some()), kind, opts);
    warnings.extend(bad_values(inv, &nodes));
    let summary = summarise(&nodes, &conflicts);
    // the counts only (`Inventory::summary` also groups by host and state)
    let soft_deleted = inv.nodes.iter().filter(|n| n.node.deleted).count();
    Plan {
        source: SourceCounts {
            nodes: inv.nodes.len(),
            live: inv.nodes.len() - soft_deleted,
            soft_deleted,
            interfaces: inv.nodes.iter().map(|n| n.interfaces.len()).sum::<usize>() + inv.orphan_interfaces.len(),
            orphan_interfaces: inv.orphan_interfaces.len(),
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

/// Nodes per piece of `nodes_pass`; a piece's checksum JSON is about 1 MB. Up to
/// `2 * threads` pieces wait to be hashed: at 2,048 nodes a piece the peak RSS of `plan` at 100k was
/// 8 MB higher, and no faster
const ROWS_CHUNK: usize = 1024;
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
/// `chunk` nodes, each with its own `Checks` over the shared lookups; on more than one thread,
/// `threads` workers take the next piece as they finish one while this thread takes the pieces
/// back in order and hashes them (the hash cannot be split). Nodes, conflicts and checksum bytes
/// are taken in order: the same plan (and conflicts in the same order) whatever the threads.
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
    let total = inv.nodes.len();
    let pieces = total.div_ceil(chunk);
    let piece = |k: usize| {
        let range = k * chunk..((k + 1) * chunk).min(total);
        let mut cx = lookups.checks(opts, nova, resolutions);
        let mut nodes: Vec<NodePlan> = range.map(|k| plan_node(&mut cx, k, &inv.nodes[k], nova)).collect();
        let (bytes, without_image) = rows_piece(inv, &mut nodes, ctx);
        Piece { nodes, conflicts: cx.into_conflicts(), bytes, without_image }
    };
    let mut out = NodesPass {
        nodes: Vec::with_capacity(total),
        conflicts: Vec::new(),
        checksum: String::new(),
        without_image: 0,
    };
    let mut sum = Checksum::new();
    let mut take = |p: Piece| {
        out.nodes.extend(p.nodes);
        out.conflicts.extend(p.conflicts);
        sum.chunk(&p.bytes);
        out.without_image += p.without_image;
    };
    if threads == 1 || pieces < 2 {
        (0..pieces).map(piece).for_each(&mut take);
    } else {
        in_order_on_threads(pieces, threads, &piece, &mut take);
    }
    out.checksum = sum.finish();
    out
}

/// One piece's share of `NodesPass`.
struct Piece {
    nodes: Vec<NodePlan>,
    conflicts: Vec<Conflict>,
    bytes: Vec<u8>,
    without_image: usize,
}

/// `make(0..count)` on `threads` workers, each result handed to `take` on this thread in index
/// order as soon as it and all before it are done. Workers stay at most `2 * threads` pieces
/// ahead of `take` (what waits to be taken is memory). A worker's panic is resumed here.
fn in_order_on_threads<T: Send>(
    count: usize,
    threads: usize,
    make: &(dyn Fn(usize) -> T + Sync),
    take: &mut dyn FnMut(T),
) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{mpsc, Condvar, Mutex};
    let window = 2 * threads;
    let next = AtomicUsize::new(0);
    // how many results `take` has had, and a wake-up for workers waiting to get that far
    let taken = (Mutex::new(0usize), Condvar::new());
    // a worker (or `take`) panicked: what was awaited never comes, so no one waits for `taken` any more
    let failed = AtomicBool::new(false);
    struct OnPanic<'a>(&'a AtomicBool, &'a (Mutex<usize>, Condvar));
    impl Drop for OnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                let _held = self.1 .0.lock().unwrap_or_else(|e| e.into_inner());
                self.0.store(true, Ordering::SeqCst);
                self.1 .1.notify_all();
            }
        }
    }
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<(usize, T)>();
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let tx = tx.clone();
                let (next, taken, failed) = (&next, &taken, &failed);
                s.spawn(move || {
                    let _guard = OnPanic(failed, taken);
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= count {
                            break;
                        }
                        {
                            let mut t = taken.0.lock().unwrap_or_else(|e| e.into_inner());
                            while k >= *t + window && !failed.load(Ordering::SeqCst) {
                                t = taken.1.wait(t).unwrap_or_else(|e| e.into_inner());
                            }
                        }
                        if failed.load(Ordering::SeqCst) || tx.send((k, make(k))).is_err() {
                            break;
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        // `take` panicking here would leave workers waiting for it: they are woken the same way
        let _guard = OnPanic(&failed, &taken);
        let mut waiting = BTreeMap::new();
        let mut want = 0;
        // ends when every worker is gone: all done, or one panicked (resumed below)
        for (k, result) in rx {
            waiting.insert(k, result);
            while let Some(result) = waiting.remove(&want) {
                take(result);
                want += 1;
                *taken.0.lock().unwrap_or_else(|e| e.into_inner()) = want;
                taken.1.notify_all();
            }
        }
        for w in workers {
            if let Err(e) = w.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
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
    cx.bmc(n, &mut f);
    let arch = cx.arch(n, &mut f);
    cx.sizes(n, &mut f);
    cx.juno_instance_info(n, &mut f);
    cx.boot(n, &mut f);
    cx.interfaces(entry, &mut f);
    cx.flavor(n, &mut f, arch.as_deref());

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
        next_boot: f.boot.filter(|_| spec.is_some()),
        index,
        spec,
    }
}

/// What the operator should know that is no conflict.
/// `without_image`: how many nodes with an instance get no image, and whether Nova's database was read
/// (the remedy differs: give it, or look at those instances in it).
fn warnings(
    nodes: &[NodePlan],
    (without_image, nova_read): (usize, bool),
    kind: TargetKind,
    opts: &PlanOptions,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if without_image > 0 {
        // "(give --nova-db)" was said with the Nova database connected too
        let remedy = if nova_read { "Nova's instances hold no image_ref for them" } else { "give --nova-db" };
        warnings.push(format!(
            "{without_image} node(s) with an instance get no instance_info.image_source ({remedy}): Ironic cannot tear them down later (LP#1368984)"
        ));
    }
    if kind == TargetKind::Modern && opts.resource_class.is_none() && nodes.iter().any(|n| n.write.is_some()) {
        warnings.push("no --resource-class: modern Nova schedules bare metal by resource class; nodes get none".into());
    }
    warnings
}

/// At most this many rows are named one by one for a value they hold that is not what its column
/// should (the rest are counted).
const BAD_VALUES_NAMED: usize = 20;

/// The rows written with a value left out because it was not what its column holds (a timestamp
/// that is no date, read as NULL: Ironic gets NULL there), one warning per row. Rows not written
/// (a skipped soft-deleted node, a skipped or blocked one) are not named: nothing of them is written.
fn bad_values(inv: &Inventory, nodes: &[NodePlan]) -> Vec<String> {
    let mut out = Vec::new();
    let mut more = 0usize;
    for n in nodes {
        let Some(entry) = inv.nodes.get(n.index) else { continue };
        if !matches!(n.action, NodeAction::Create | NodeAction::Replace | NodeAction::Blocked) {
            continue;
        }
        let mut said: Vec<String> =
            entry.node.bad_values.iter().map(|b| format!("bm_nodes row id {}: {b}", n.nova_bm_id)).collect();
        for i in entry.interfaces.iter().filter(|i| !i.deleted) {
            said.extend(i.bad_values.iter().map(|b| format!("bm_interfaces row id {}: {b}", i.id)));
        }
        if said.is_empty() {
            continue;
        }
        if out.len() >= BAD_VALUES_NAMED {
            more += 1;
            continue;
        }
        out.push(format!(
            "nova_bm node {}: {}: read as NULL, and written so (the rest of the row is mapped as usual)",
            n.nova_bm_id,
            said.join("; ")
        ));
    }
    if more > 0 {
        out.push(format!("{more} more node(s) hold values that are not what their column should: read as NULL (see `inventory --json`, `bad_values`)"));
    }
    out
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

#[cfg(test)]
mod warnings_tests {
    use super::*;
    use crate::core::demo::fixture::Fixture;
    use crate::core::ironic::target::TargetSchema;
    use crate::core::migrate::conflict::{Action, ConflictCode};
    use crate::core::source::nova::NovaInstance;

    /// Instances without an image: "(give --nova-db)" only when Nova's database was not read (the
    /// wizard said it with Nova connected).
    #[test]
    fn the_missing_image_warning_names_the_remedy_that_applies() {
        let f = Fixture::bench(8, 1);
        let inv = Arc::new(Inventory::join(f.nodes, f.interfaces));
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let opts = PlanOptions {
            default_arch: Some("x86_64".into()),
            deploy_kernel: Some("k".into()),
            deploy_ramdisk: Some("r".into()),
            resource_class: Some("baremetal".into()),
            ..Default::default()
        };
        let nova = NovaFacts {
            instances: inv
                .nodes
                .iter()
                .filter_map(|n| n.node.instance_uuid.clone().map(|u| (n.node.service_host.clone(), u)))
                .map(|(host, uuid)| {
                    let i = NovaInstance {
                        uuid: uuid.clone(),
                        image_ref: None,
                        root_gb: None,
                        ephemeral_gb: None,
                        node: None,
                        host,
                        vm_state: Some("active".into()),
                        deleted: false,
                        kernel_id: None,
                        ramdisk_id: None,
                    };
                    (uuid, i)
                })
                .collect(),
            ..Default::default()
        };
        // instances boot as they do (no TFTP tree here): their nodes are written
        let mut res = Resolutions::default();
        res.defaults.insert(ConflictCode::UnknownBoot, Action::LocalBoot);
        let image_warning = |p: &Plan| p.warnings.iter().find(|w| w.contains("image_source")).cloned();
        let without = plan(&inv, &target, None, &opts, &res);
        let with = plan(&inv, &target, Some(&nova), &opts, &res);
        let w = image_warning(&without).expect("instances without an image");
        assert!(w.contains("give --nova-db"), "{w}");
        let w = image_warning(&with).expect("Nova holds no image_ref for them");
        assert!(!w.contains("give --nova-db") && w.contains("no image_ref"), "{w}");
    }
}
