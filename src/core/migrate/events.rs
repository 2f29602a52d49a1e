//! The events of a load, once: the words both loaders speak (the CLI prints them, `--json` as
//! NDJSON, the wizard draws them), the summary it ends with, and what every load does the same way
//! before it writes (the nodes it will not write, reported as skipped). The SQL loader is
//! `load_sql/`, the REST adopt loader `load_api/`.

use std::time::Instant;

use chrono::NaiveDateTime;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::core::ironic::api::timings::Timing;
use crate::core::migrate::plan::{NodeAction, Plan};
use crate::core::migrate::run::RunId;
use crate::core::migrate::timing::ms;

/// The current time as the run records and the summaries keep it (UTC, no zone).
pub fn now() -> NaiveDateTime {
    chrono::Utc::now().naive_utc()
}

/// Progress of a load, for the CLI (a line or NDJSON) and the TUI.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LoadEvent {
    Started {
        run_id: RunId,
        nodes: usize,
        ports: usize,
        rehearse: bool,
    },
    Node {
        nova_bm_id: i64,
        uuid: String,
        status: NodeStatus,
    },
    /// `--via api`: a node reached a provision state on its way (enroll, manageable, active, ...)
    NodeState {
        nova_bm_id: i64,
        uuid: String,
        state: String,
    },
    /// after each batch; `elapsed_ms` since the load started
    Progress {
        done: usize,
        total: usize,
        elapsed_ms: f64,
    },
    /// `--via api`, before the summary: the time of Ironic's requests and of the conductor's work
    /// seen by polling, by kind (core/ironic/api/timings.rs)
    Timings {
        calls: Vec<Timing>,
    },
    Summary(LoadSummary),
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    Written,
    Skipped {
        reason: String,
    },
    /// `--via api`: a step failed (Ironic's last_error); the node stays where it is, a rerun resumes
    Failed {
        error: String,
    },
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadSummary {
    pub run_id: RunId,
    pub rehearse: bool,
    pub committed: bool,
    pub read: usize,
    pub created: usize,
    pub skipped: usize,
    pub already_migrated: usize,
    pub maintenance: usize,
    pub ports: usize,
    pub errors: usize,
    /// wall time from the start of the load to the end of its commit (or rollback)
    pub elapsed_ms: f64,
    /// of which writing (every batch and the run record)
    pub load_ms: f64,
    /// of which the commit (a rehearsal: the rollback, and putting the id counters back)
    pub commit_ms: f64,
    pub plan_checksum: String,
    /// when the load started and ended (UTC)
    pub started_at: NaiveDateTime,
    pub finished_at: NaiveDateTime,
}

impl LoadSummary {
    /// The counts the plan already knows, before anything is written (nothing committed yet).
    pub fn begin(plan: &Plan, run_id: &RunId, rehearse: bool) -> LoadSummary {
        LoadSummary {
            run_id: run_id.clone(),
            rehearse,
            committed: false,
            read: plan.nodes.len(),
            created: 0,
            skipped: plan.summary.skip + plan.summary.blocked,
            already_migrated: plan.summary.already_migrated,
            maintenance: plan.summary.maintenance,
            ports: 0,
            errors: 0,
            elapsed_ms: 0.0,
            load_ms: 0.0,
            commit_ms: 0.0,
            plan_checksum: plan.checksum.clone(),
            started_at: now(),
            finished_at: now(),
        }
    }

    /// A plan with nothing to write ends here, on either path: no run is recorded and nothing is
    /// committed (`committed` stays false: the faces say "nothing to write", not "committed").
    pub fn nothing_to_write(mut self, started: Instant, events: &UnboundedSender<LoadEvent>) -> LoadSummary {
        self.elapsed_ms = ms(started.elapsed());
        self.load_ms = self.elapsed_ms;
        self.finished_at = now();
        let _ = events.send(LoadEvent::Summary(self.clone()));
        self
    }
}

/// Every node the plan does not write, as a `skipped` event with its reason (already migrated, or
/// its conflicts' codes).
pub fn send_skipped(plan: &Plan, events: &UnboundedSender<LoadEvent>) {
    for n in plan.nodes.iter().filter(|n| !matches!(n.action, NodeAction::Create | NodeAction::Replace)) {
        let reason = match n.action {
            NodeAction::AlreadyMigrated => "already migrated".to_string(),
            _ => n.conflicts.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", "),
        };
        let _ = events.send(LoadEvent::Node {
            nova_bm_id: n.nova_bm_id,
            uuid: n.uuid.clone().unwrap_or_default(),
            status: NodeStatus::Skipped { reason },
        });
    }
}
