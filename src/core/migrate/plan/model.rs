//! What the plan is made of: every node's fate (`NodePlan`) with the short facts of what is written
//! for it (`WriteSummary`), the counts (`SourceCounts`, `TargetInfo`, `PlanSummary`), and `Plan`,
//! which builds a node's rows again from the inventory it was made from when they are written.

use std::sync::Arc;

use serde::Serialize;

use super::boot::NextBoot;
use super::fate::NodeAction;
use super::rows::{build_rows, RowContext, RowSpec, Rows};
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::{Conflict, ConflictCode};
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
    pub fn to_write(&self) -> impl Iterator<Item = &NodePlan> {
        self.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace))
    }
}
