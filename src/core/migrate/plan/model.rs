//! What the plan is made of: every node's fate (`NodePlan`) with the short facts of what is written
//! for it (`WriteSummary`), the counts (`SourceCounts`, `TargetInfo`, `PlanSummary`), and `Plan`,
//! which builds a node's rows again from the inventory it was made from when they are written.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::boot::NextBoot;
use super::fate::NodeAction;
use super::rows::{build_rows, RowContext, RowSpec, Rows};
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::{Conflict, ConflictCode, Subject};
use crate::core::source::model::Inventory;

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
    /// how its instance boots after the takeover (written nodes that keep an instance)
    #[serde(skip_serializing_if = "Option::is_none")]
    /// (shared with the row spec it is written from: one copy per instance, not two)
    pub next_boot: Option<Arc<NextBoot>>,
    /// its place in the inventory the plan was made from
    #[serde(skip)]
    pub(super) index: usize,
    #[serde(skip)]
    pub(super) spec: Option<RowSpec>,
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
    pub(super) inventory: Arc<Inventory>,
    #[serde(skip)]
    pub(super) ctx: RowContext,
}

impl Plan {
    /// The rows written for this node (None when nothing is), built from the inventory the plan was
    /// made from: the same rows each time, and the ones the checksum covers.
    /// What the BMC check read before this plan (`given` false: no check).
    pub fn bmc(&self) -> &crate::core::bmc::BmcFacts {
        &self.ctx.opts.bmc
    }

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
    /// The options this plan cannot go on without: undecided conflicts that only an option fixes
    /// (the deploy images; an architecture, unless `missing-arch=skip` was decided). None when
    /// nothing is missing.
    pub fn missing_options(&self) -> Option<MissingOptions> {
        let open = |code| self.conflicts.iter().filter(move |c| c.code == code && c.action.is_none());
        let deploy_images = open(ConflictCode::MissingDeployImages).next().is_some();
        let mut arch_hosts = BTreeMap::new();
        for c in open(ConflictCode::MissingArch) {
            let id = match c.subject {
                Subject::Node { nova_bm_id } => nova_bm_id,
                _ => continue,
            };
            let host = self.nodes.iter().find(|n| n.nova_bm_id == id).and_then(|n| n.service_host.clone());
            *arch_hosts.entry(host.unwrap_or_else(|| "(no host)".into())).or_insert(0) += 1;
        }
        (deploy_images || !arch_hosts.is_empty()).then_some(MissingOptions { deploy_images, arch_hosts })
    }
    pub fn to_write(&self) -> impl Iterator<Item = &NodePlan> {
        self.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace))
    }
}

/// Options a plan needs and was not given ([`Plan::missing_options`]): said at once, in a few lines,
/// instead of at the bottom of every node's conflicts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingOptions {
    /// no deploy kernel and ramdisk, with nodes to write
    pub deploy_images: bool,
    /// hosts whose nodes have no cpu_arch known, and how many nodes each
    pub arch_hosts: BTreeMap<String, usize>,
}

impl std::fmt::Display for MissingOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the plan needs options that were not given:")?;
        if self.deploy_images {
            f.write_str("\n  --deploy-kernel REF and --deploy-ramdisk REF: Ironic's deploy images (every node's driver_info names them)")?;
        }
        if !self.arch_hosts.is_empty() {
            let nodes: usize = self.arch_hosts.values().sum();
            let hosts: Vec<String> = self
                .arch_hosts
                .iter()
                .take(5)
                .map(|(h, n)| format!("{}: {n}", crate::core::text::visible_line(h)))
                .collect();
            let more = self.arch_hosts.len().saturating_sub(5);
            let more = if more > 0 { format!(" and {more} host(s) more") } else { String::new() };
            write!(
                f,
                "\n  --default-arch ARCH, or --arch HOST=ARCH per host: no cpu_arch is known for {nodes} node(s) ({}{more})",
                hosts.join(", ")
            )?;
        }
        f.write_str("\ngive them as flags or in bm2ironic.toml (docs/project-file.md)")?;
        if !self.arch_hosts.is_empty() {
            f.write_str("; or `--resolve missing-arch=skip` to leave the nodes without an arch out")?;
        }
        Ok(())
    }
}
