//! The takeover check: follows every migrated node until it is taken over (a power state read from
//! its BMC, a conductor, no error or fault) or failing (Ironic's fault or error, its BMC's errors in
//! the followed logs), and reports each change of status as a [`TakeoverEvent`].

use std::time::{Duration, Instant};

use chrono::{DateTime, Local, NaiveDateTime};
use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use super::tracker::Tracker;
use crate::core::ironic::api::{ApiError, IronicApi};
use crate::core::logs::collapse::Collapsed;
use crate::core::logs::watch::Watcher;

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

/// The API's answer about one node as a verdict: a node the API does not know (HTTP 4xx) fails; an
/// API that does not answer leaves it waiting, with why.
fn verdict(uuid: &str, answer: Result<Value, ApiError>) -> NodeTakeover {
    match answer {
        Ok(v) => judge(uuid, &v),
        Err(e) => {
            let mut n = NodeTakeover::waiting(uuid);
            if matches!(e, ApiError::Status { status: 400..=499, .. }) {
                n.state = TakeoverState::Failed;
            }
            n.problems.push(e.to_string());
            n
        }
    }
}

/// How many nodes are asked about at once.
const CONCURRENT_GETS: usize = 8;

/// How often the logs are read.
const LOG_TICK: Duration = Duration::from_millis(250);

/// Follows `uuids` until each is taken over or failing, `opts.fail_fast` and one is failing,
/// `opts.timeout` passes (a node still waiting then fails), or `cancel`. `logs` (opened at the
/// run's end) are read to their current end after the API's first answers, then followed. Events
/// go to `events` (a closed receiver is fine).
pub async fn check(
    api: &IronicApi,
    uuids: &[String],
    opts: CheckOptions,
    mut logs: Option<Watcher>,
    events: &UnboundedSender<TakeoverEvent>,
    cancel: &CancellationToken,
) -> TakeoverOutcome {
    let started = Instant::now();
    let send = |e: TakeoverEvent| {
        let _ = events.send(e);
    };
    send(TakeoverEvent::Started { nodes: uuids.len(), timeout: opts.timeout });
    let mut t = Tracker::new(uuids);
    let mut first = true;
    let mut next_poll = started;
    let mut last_progress: Option<(Instant, Counts)> = None;
    let ending = loop {
        let polled = Instant::now() >= next_poll;
        if polled {
            // owned uuids: a future borrowing the closure's argument is not Send for every lifetime
            let answers: Vec<NodeTakeover> = futures::stream::iter(uuids.iter().cloned())
                .map(|u| async move { verdict(&u, api.node(&u).await) })
                .buffered(CONCURRENT_GETS)
                .collect()
                .await;
            for a in answers {
                t.api(a);
            }
            next_poll = Instant::now() + opts.poll;
        }
        if let Some(w) = &mut logs {
            // first what the logs hold since the run (after the first answers: an error older
            // than Ironic's last change to a taken-over node is history), then what is appended
            for r in if first { w.catch_up() } else { w.poll(false) } {
                t.record(&r);
            }
        }
        first = false;
        let elapsed = started.elapsed();
        for (uuid, state, reason) in t.changes() {
            send(TakeoverEvent::Node { uuid, state, reason, elapsed });
        }
        // the counts when they change, after each poll, and every second (the elapsed time moves)
        let counts = t.counts();
        if polled || last_progress.is_none_or(|(at, c)| c != counts || at.elapsed() >= Duration::from_secs(1)) {
            send(TakeoverEvent::Progress(Counts { elapsed, timeout: opts.timeout, ..counts }));
            last_progress = Some((Instant::now(), counts));
        }
        if t.all_decided() {
            break Ending::AllDecided;
        }
        if opts.fail_fast && t.any_failing() {
            break Ending::FirstFailure;
        }
        if elapsed >= opts.timeout {
            break Ending::Deadline;
        }
        tokio::select! {
            _ = cancel.cancelled() => break Ending::Cancelled,
            _ = tokio::time::sleep(LOG_TICK) => {}
        }
    };
    if let Some(w) = &mut logs {
        for r in w.poll(true) {
            t.record(&r);
        }
    }
    t.end(ending, opts.timeout);
    let elapsed = started.elapsed();
    for (uuid, state, reason) in t.changes() {
        send(TakeoverEvent::Node { uuid, state, reason, elapsed });
    }
    send(TakeoverEvent::Progress(Counts { elapsed, timeout: opts.timeout, ..t.counts() }));
    TakeoverOutcome { nodes: t.nodes(), ending, elapsed }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn judging_nodes() {
        let ok =
            json!({"power_state": "power off", "provision_state": "active", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &ok).state, TakeoverState::Ok);
        let pending =
            json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &pending).state, TakeoverState::Pending);
        let fault = json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": true, "fault": "power failure", "maintenance_reason": "During sync_power_state, max retries exceeded"});
        let j = judge("u", &fault);
        assert_eq!(j.state, TakeoverState::Failed);
        assert!(j.problems[0].contains("power failure"));
        let held = json!({"power_state": null, "provision_state": "active", "maintenance": true, "maintenance_reason": "bm2ironic: nova_bm task_state was 'building'"});
        assert_eq!(judge("u", &held).state, TakeoverState::HeldInMaintenance);
        let err = json!({"power_state": "power on", "provision_state": "active", "conductor": "c1", "last_error": "Failed to prepare to deploy", "maintenance": false});
        assert_eq!(judge("u", &err).state, TakeoverState::Failed);
    }

    #[test]
    fn an_api_that_does_not_answer_leaves_the_node_waiting() {
        let down = ApiError::Unreachable { url: "u".into(), reason: "refused".into() };
        assert_eq!(verdict("u", Err(down)).state, TakeoverState::Pending);
        let gone = ApiError::Status { url: "u".into(), status: 404, body: "not found".into() };
        assert_eq!(verdict("u", Err(gone)).state, TakeoverState::Failed);
    }
}
