//! The takeover's words, without I/O: a node's status and the verdict on Ironic's answer about it
//! (`judge`), the counts, the events the check sends and how it ends. `takeover.rs` runs the check,
//! `tracker.rs` keeps its bookkeeping; the faces draw these.

use std::time::Duration;

use chrono::{DateTime, Local, NaiveDateTime};
use serde::Serialize;
use serde_json::Value;

use crate::core::logs::collapse::Collapsed;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TakeoverState {
    Ok,
    /// held in maintenance by the migration's own decision (not a failure)
    HeldInMaintenance,
    /// not decided yet (no power state read so far)
    Pending,
    Failed,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeTakeover {
    pub uuid: String,
    pub state: TakeoverState,
    pub power_state: Option<String>,
    pub provision_state: Option<String>,
    pub conductor: Option<String>,
    pub problems: Vec<String>,
    /// the log records naming this node (WARNING and above), collapsed, most specific first
    pub log_errors: Vec<Collapsed>,
    /// when Ironic last changed the node (a power state read, maintenance set or unset), in local
    /// time like the logs
    #[serde(skip)]
    pub updated_at: Option<NaiveDateTime>,
}

impl NodeTakeover {
    /// A node the check knows nothing about yet (or whose API answer was not a node).
    pub(crate) fn waiting(uuid: &str) -> NodeTakeover {
        NodeTakeover {
            uuid: uuid.into(),
            state: TakeoverState::Pending,
            power_state: None,
            provision_state: None,
            conductor: None,
            problems: vec![],
            log_errors: vec![],
            updated_at: None,
        }
    }
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).filter(|x| !x.is_empty()).map(String::from)
}

/// Judges one node from `GET /v1/nodes/{uuid}`.
pub fn judge(uuid: &str, v: &Value) -> NodeTakeover {
    let power = s(v, "power_state");
    let prov = s(v, "provision_state");
    let conductor = s(v, "conductor");
    let mut problems = Vec::new();
    let maintenance = v.get("maintenance").and_then(|m| m.as_bool()).unwrap_or(false);
    let reason = s(v, "maintenance_reason").unwrap_or_default();
    if let Some(fault) = s(v, "fault") {
        problems.push(format!("Ironic put it in maintenance ({fault}): {reason}"));
    }
    if let Some(e) = s(v, "last_error") {
        problems.push(format!("last_error: {e}"));
    }
    let p = prov.as_deref().unwrap_or("");
    if p.ends_with("failed") || p == "error" {
        problems.push(format!("provision state {p}"));
    }
    let state = if !problems.is_empty() {
        TakeoverState::Failed
    } else if maintenance && reason.starts_with("bm2ironic:") {
        TakeoverState::HeldInMaintenance
    } else if maintenance {
        problems.push(format!("in maintenance: {reason}"));
        TakeoverState::Failed
    } else if power.is_none() || conductor.is_none() || p.ends_with("ing") || p.contains("wait") {
        TakeoverState::Pending
    } else if power.as_deref() == Some("error") {
        problems.push("power state error".into());
        TakeoverState::Failed
    } else {
        TakeoverState::Ok
    };
    NodeTakeover {
        uuid: uuid.into(),
        state,
        power_state: power,
        provision_state: prov,
        conductor,
        problems,
        log_errors: Vec::new(),
        updated_at: s(v, "updated_at")
            .and_then(|t| DateTime::parse_from_rfc3339(&t).ok())
            .map(|t| t.with_timezone(&Local).naive_local()),
    }
}

/// The counts of a check in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub taken_over: usize,
    pub held: usize,
    pub waiting: usize,
    pub failing: usize,
    pub elapsed: Duration,
    pub timeout: Duration,
}

/// `m:ss`.
fn clock(d: Duration) -> String {
    format!("{}:{:02}", d.as_secs() / 60, d.as_secs() % 60)
}

impl std::fmt::Display for Counts {
    /// `3 taken over, 1 waiting, 1 failing - 0:14 elapsed, deadline 5:00` (the held ones when any).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} taken over", self.taken_over)?;
        if self.held > 0 {
            write!(f, ", {} held in maintenance", self.held)?;
        }
        write!(
            f,
            ", {} waiting, {} failing - {} elapsed, deadline {}",
            self.waiting,
            self.failing,
            clock(self.elapsed),
            clock(self.timeout)
        )
    }
}

/// What the check reports while it runs (the CLI prints it, the wizard draws it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TakeoverEvent {
    /// the check starts on `nodes` nodes and waits `timeout` at most
    Started { nodes: usize, timeout: Duration },
    /// a node's status changed (every node starts waiting; a failing node says why)
    Node { uuid: String, state: TakeoverState, reason: Option<String>, elapsed: Duration },
    /// the counts, after every poll of the API and at least every second
    Progress(Counts),
}

/// Why the check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ending {
    /// every node is taken over (or held) or failing
    AllDecided,
    /// a node is failing and the check was asked to stop at the first one
    FirstFailure,
    Deadline,
    Cancelled,
}

/// The end of a check: every node as last seen, and why and when it ended.
#[derive(Debug, Clone)]
pub struct TakeoverOutcome {
    pub nodes: Vec<NodeTakeover>,
    pub ending: Ending,
    pub elapsed: Duration,
}

/// How the check runs.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    /// how long it waits at most for every node to be decided
    pub timeout: Duration,
    /// how often it asks the API about every node
    pub poll: Duration,
    /// end at the first failing node
    pub fail_fast: bool,
}
