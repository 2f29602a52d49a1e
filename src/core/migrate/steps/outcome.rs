//! How a migration ended, decided once, here: the owned result of the migrate use case that the
//! CLI prints, the wizard draws and the run report states. Every sentence about an ending (the
//! outcome line, each node's fate, what a rollback would do, the exit) is made from this value, so
//! the faces cannot disagree about what stayed in Ironic. The endings are listed in docs/runs.md.

use std::collections::HashMap;

use super::error::StepError;
use crate::core::kind::{HasKind, Kind};
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{NodeAction, NodePlan};
use crate::core::migrate::run::{RunId, RunKind};
use crate::core::migrate::timing::Phases;
use crate::core::migrate::verify::VerifyReport;

/// How a migration ended.
#[derive(Debug)]
pub enum Ended {
    /// nothing was written: blocking conflicts, the face did not go ahead, or an error before the
    /// first write
    NotStarted(StepError),
    /// the plan had nothing to write: no run was recorded
    NothingToWrite,
    /// the database: the transaction committed
    Committed,
    /// the database: everything was written, then rolled back (a rehearsal)
    Rehearsed,
    /// the database: the load failed or was cancelled and its transaction rolled back; the target
    /// is as it was
    RolledBack(StepError),
    /// the API: every node reached its planned state
    Adopted,
    /// the API: the load went to its end, but some nodes failed (`failed`: uuid and Ironic's
    /// error) or were interrupted; what was done stays in Ironic (`left`), a rerun resumes
    PartlyAdopted { failed: Vec<(String, String)>, interrupted: bool, left: Vec<NodeLeft> },
    /// the API: the load stopped before its end (Ironic stopped answering, the record could not be
    /// written); what was done stays in Ironic (`left`)
    Stopped { error: StepError, left: Vec<NodeLeft> },
}

/// A node the API load left in Ironic, and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLeft {
    pub uuid: String,
    pub nova_bm_id: i64,
    /// the last provision state seen, or "failed (...)"
    pub state: String,
}

/// The migrate use case's result: how it ended, the load's counts, the verification made before
/// the target closed, the phases' times.
#[derive(Debug)]
pub struct Outcome {
    pub kind: RunKind,
    pub ended: Ended,
    /// the load's counts (None: no load ran, or it stopped without them)
    pub summary: Option<LoadSummary>,
    /// the run the load began (its id from its first event): recorded unless the database rolled
    /// it back
    pub run: Option<RunId>,
    /// the run verified for the report (`MigrateRequest::verify`): what it found, or why it could
    /// not be verified
    pub verify: Option<Result<VerifyReport, String>>,
    pub phases: Phases,
}

impl Outcome {
    /// The run this migration recorded (None when it recorded none).
    pub fn run_id(&self) -> Option<&RunId> {
        match &self.ended {
            Ended::Committed | Ended::Adopted | Ended::PartlyAdopted { .. } | Ended::Stopped { .. } => {
                self.run.as_ref()
            }
            _ => None,
        }
    }

    /// The run the report is about: the one recorded, or the rehearsal's (written, then rolled
    /// back: its id names the report and the audit log's records).
    pub fn reported_run(&self) -> Option<&RunId> {
        self.run_id().or(self.run.as_ref().filter(|_| self.rehearsal()))
    }

    /// Everything planned is in Ironic now, as planned.
    pub fn complete(&self) -> bool {
        matches!(self.ended, Ended::Committed | Ended::Adopted)
    }

    /// Something this run wrote stays in Ironic (a rollback has something to do).
    pub fn left_something(&self) -> bool {
        match &self.ended {
            Ended::Committed => true,
            Ended::Adopted => self.summary.as_ref().is_some_and(|s| s.created > 0),
            Ended::PartlyAdopted { left, .. } | Ended::Stopped { left, .. } => !left.is_empty(),
            _ => false,
        }
    }

    pub fn rehearsal(&self) -> bool {
        matches!(self.ended, Ended::Rehearsed)
    }

    /// The error that ended it, when one did.
    pub fn error(&self) -> Option<&StepError> {
        match &self.ended {
            Ended::NotStarted(e) | Ended::RolledBack(e) | Ended::Stopped { error: e, .. } => Some(e),
            _ => None,
        }
    }

    /// How the run ended, in one line (the report's outcome, the summary screen's first line).
    pub fn line(&self) -> String {
        let (created, ports) = self.summary.as_ref().map_or((0, 0), |s| (s.created, s.ports));
        let run = self.run.as_ref().map_or_else(|| "-".to_string(), |r| r.to_string());
        match &self.ended {
            Ended::NotStarted(e) => format!("not started: {e}"),
            Ended::NothingToWrite => "nothing to write".into(),
            Ended::Committed => format!("committed: {created} nodes and {ports} ports written in one transaction"),
            Ended::Rehearsed => {
                format!("rehearsal: {created} nodes and {ports} ports written, then rolled back; nothing stayed")
            }
            Ended::RolledBack(e) => format!("failed and rolled back, the target is as it was: {e}"),
            Ended::Adopted => format!("done through the Ironic API: {created} nodes changed, {ports} ports"),
            Ended::PartlyAdopted { failed, interrupted, left } => format!(
                "partly done through the Ironic API: {created} nodes changed, {} failed{}; {} node(s) of this run are in Ironic, where they stand (rerun `bm2ironic migrate --via api` to resume run {run}, or `bm2ironic rollback --run {run}`)",
                failed.len(),
                if *interrupted { ", the others interrupted" } else { "" },
                left.len(),
            ),
            Ended::Stopped { error, left } => format!(
                "stopped part-way through the Ironic API: {} node(s) left in Ironic (rerun `bm2ironic migrate --via api` to resume run {run}, or `bm2ironic rollback --run {run}`): {error}",
                left.len()
            ),
        }
    }

    /// What happened to one node of the plan.
    pub fn node_line(&self, n: &NodePlan) -> String {
        let writes = matches!(n.action, NodeAction::Create | NodeAction::Replace);
        match n.action {
            NodeAction::Skip => {
                return format!(
                    "not written: skipped ({})",
                    n.conflicts.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
                )
            }
            NodeAction::AlreadyMigrated => return "not written: already migrated by an earlier run".into(),
            NodeAction::Blocked => return "not written: blocked by an undecided conflict".into(),
            _ if !writes => return "not written".into(),
            _ => {}
        }
        let uuid = n.uuid.as_deref().unwrap_or_default();
        let left = |left: &[NodeLeft]| left.iter().find(|l| l.uuid == uuid).map(|l| l.state.clone());
        match &self.ended {
            Ended::NotStarted(_) => "not written: the load did not start".into(),
            Ended::NothingToWrite => "not written".into(),
            Ended::Committed => "written".into(),
            Ended::Rehearsed => "written, then rolled back (rehearsal)".into(),
            Ended::RolledBack(_) => "not written: the load failed and was rolled back".into(),
            Ended::Adopted => "written through the API".into(),
            Ended::PartlyAdopted { failed, left: l, .. } => match (failed.iter().find(|(u, _)| u == uuid), left(l)) {
                (Some((_, e)), _) => format!("failed through the API, left where it is: {e}"),
                (None, Some(s)) if s.starts_with("written") => "written through the API".into(),
                (None, Some(s)) => format!("interrupted, left in Ironic in state {s} (a rerun resumes it)"),
                (None, None) => "not started (a rerun resumes it)".into(),
            },
            Ended::Stopped { left: l, .. } => match left(l) {
                Some(s) if s.starts_with("written") => "written through the API".into(),
                Some(s) => format!("not finished, left in Ironic in state {s} (a rerun resumes it)"),
                None => "not started: the run stopped (a rerun resumes it)".into(),
            },
        }
    }

    /// How the faces end: None when the migration did all it was asked; else the kind (exit code)
    /// and what to tell the operator.
    pub fn failure(&self) -> Option<(Kind, String)> {
        let run = self.run.as_ref().map_or_else(|| "-".to_string(), |r| r.to_string());
        match &self.ended {
            Ended::NothingToWrite | Ended::Committed | Ended::Rehearsed | Ended::Adopted => None,
            Ended::NotStarted(e) | Ended::RolledBack(e) | Ended::Stopped { error: e, .. } => {
                Some((e.kind(), e.to_string()))
            }
            Ended::PartlyAdopted { failed, interrupted, .. } if failed.is_empty() => Some((
                Kind::Runtime,
                format!(
                    "run {run} interrupted{}: the nodes not finished were left where they stood; rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`",
                    if *interrupted { "" } else { " (some nodes did not settle)" }
                ),
            )),
            Ended::PartlyAdopted { failed, interrupted, .. } => Some((
                Kind::Runtime,
                format!(
                    "run {run}{}: {} node(s) failed and were left where they are (Ironic's errors above); fix the input and rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`",
                    if *interrupted { " (interrupted)" } else { "" },
                    failed.len()
                ),
            )),
        }
    }
}

/// Watches a load's events as they pass to the face: which nodes were begun, where each one stands,
/// which failed (the API path's nodes left in Ironic when the load does not finish).
#[derive(Default)]
pub struct Tally {
    pub started: bool,
    pub run: Option<RunId>,
    states: HashMap<String, (i64, String)>,
    pub failed: Vec<(String, String)>,
}

impl Tally {
    pub fn see(&mut self, ev: &LoadEvent) {
        match ev {
            LoadEvent::Started { run_id, .. } => {
                self.started = true;
                self.run = Some(run_id.clone());
            }
            LoadEvent::NodeState { nova_bm_id, uuid, state } => {
                self.states.insert(uuid.clone(), (*nova_bm_id, state.clone()));
            }
            LoadEvent::Node { nova_bm_id, uuid, status: NodeStatus::Written } => {
                let state = match self.states.get(uuid) {
                    Some((_, s)) => format!("written ({s})"),
                    None => "written".into(),
                };
                self.states.insert(uuid.clone(), (*nova_bm_id, state));
            }
            LoadEvent::Node { nova_bm_id, uuid, status: NodeStatus::Failed { error } } => {
                self.failed.push((uuid.clone(), error.clone()));
                let state = match self.states.get(uuid) {
                    Some((_, s)) => format!("failed ({s})"),
                    None => "failed".into(),
                };
                self.states.insert(uuid.clone(), (*nova_bm_id, state));
            }
            _ => {}
        }
    }

    /// The nodes that reached Ironic (any state seen), by uuid.
    pub fn left(&self) -> Vec<NodeLeft> {
        let mut v: Vec<NodeLeft> = self
            .states
            .iter()
            .map(|(uuid, (id, state))| NodeLeft { uuid: uuid.clone(), nova_bm_id: *id, state: state.clone() })
            .collect();
        v.sort_by(|a, b| a.nova_bm_id.cmp(&b.nova_bm_id).then(a.uuid.cmp(&b.uuid)));
        v
    }
}
