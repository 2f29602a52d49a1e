//! The run report's BMC check section (issue #51): what `--check-bmc` read before the plan and when
//! (docs/commands.md, "plan --check-bmc").

use serde::Serialize;

use crate::core::migrate::plan::Plan;

/// The BMC check's results in the report: when they were read and what each node's BMC said.
#[derive(Debug, Clone, Serialize)]
pub struct BmcSection {
    pub summary: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub readings: Vec<BmcRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BmcRow {
    pub nova_bm_id: i64,
    pub address: String,
    pub user: String,
    /// `on`, `off`, or the failure with ipmitool's words
    pub read: String,
    pub guid: Option<String>,
    pub read_at: String,
}

pub(super) fn section(plan: &Plan) -> Option<BmcSection> {
    let f = plan.bmc();
    f.given.then(|| BmcSection {
        summary: f.summary(),
        started_at: f.started_at.map(|t| t.to_rfc3339()),
        finished_at: f.finished_at.map(|t| t.to_rfc3339()),
        readings: f
            .readings
            .iter()
            .map(|(id, r)| BmcRow {
                nova_bm_id: *id,
                address: r.address.clone(),
                user: r.user.clone(),
                read: r.outcome(),
                guid: r.guid.clone(),
                read_at: r.read_at.to_rfc3339(),
            })
            .collect(),
    })
}
