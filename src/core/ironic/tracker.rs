//! The takeover check's bookkeeping, without I/O: each node's last answer from the API and its BMC
//! errors from the logs in, its status (taken over, held, waiting, failing) and the changes of
//! status out, with the node's log records collapsed.

use std::collections::HashMap;
use std::time::Duration;

use chrono::NaiveDateTime;

use super::verdict::{Counts, Ending, NodeTakeover, TakeoverState};
use crate::core::logs::collapse::{self, Collapsed};
use crate::core::logs::oslo::LogLevel;
use crate::core::logs::watch::Record;

/// A node's BMC errors seen in the logs: the most specific entry, the time of the latest, and
/// whether the API showed the node taken over when the first one came.
#[derive(Debug, Clone)]
struct LogFailure {
    entry: Collapsed,
    latest: Option<NaiveDateTime>,
    after_taken_over: bool,
}

impl LogFailure {
    /// Ironic has taken the node over since these errors: it was still waiting when they came, or
    /// Ironic changed it after the latest one (a power state read, maintenance unset).
    fn outdated_by(&self, api: &NodeTakeover) -> bool {
        taken_over(api.state)
            && (!self.after_taken_over || matches!((api.updated_at, self.latest), (Some(u), Some(l)) if u > l))
    }
}

fn taken_over(s: TakeoverState) -> bool {
    matches!(s, TakeoverState::Ok | TakeoverState::HeldInMaintenance)
}

#[derive(Debug, Clone)]
struct Tracked {
    /// the API's last verdict (`waiting` before the first answer)
    api: NodeTakeover,
    log_failure: Option<LogFailure>,
    records: Vec<Collapsed>,
    /// the status last reported
    shown: TakeoverState,
    /// why a node ended undecided
    ended: Option<(TakeoverState, String)>,
}

impl Tracked {
    fn status(&self) -> (TakeoverState, Vec<String>) {
        let mut problems = self.api.problems.clone();
        let log = self.log_failure.as_ref().map(|f| f.entry.summary());
        let state = match (self.api.state, log) {
            (TakeoverState::Failed, log) => {
                problems.extend(log);
                TakeoverState::Failed
            }
            (_, Some(log)) => {
                problems = vec![log];
                TakeoverState::Failed
            }
            (state, None) => state,
        };
        match &self.ended {
            Some((end, why)) if state == TakeoverState::Pending => {
                problems.push(why.clone());
                (*end, problems)
            }
            _ => (state, problems),
        }
    }
}

/// The check's bookkeeping, without I/O: API verdicts and log records in, status changes out.
#[derive(Debug, Clone)]
pub struct Tracker {
    nodes: Vec<Tracked>,
    index: HashMap<String, usize>,
}

fn decided(s: TakeoverState) -> bool {
    s != TakeoverState::Pending
}

impl Tracker {
    pub fn new(uuids: &[String]) -> Tracker {
        let nodes: Vec<Tracked> = uuids
            .iter()
            .map(|u| Tracked {
                api: NodeTakeover::waiting(u),
                log_failure: None,
                records: vec![],
                shown: TakeoverState::Pending,
                ended: None,
            })
            .collect();
        let index = uuids.iter().enumerate().map(|(i, u)| (u.to_ascii_lowercase(), i)).collect();
        Tracker { nodes, index }
    }

    /// The API's verdict on one node. BMC errors logged before Ironic took the node over are
    /// history once it has (see [`LogFailure::outdated_by`]).
    pub fn api(&mut self, verdict: NodeTakeover) {
        let Some(&i) = self.index.get(&verdict.uuid.to_ascii_lowercase()) else { return };
        let n = &mut self.nodes[i];
        if n.log_failure.as_ref().is_some_and(|f| f.outdated_by(&verdict)) {
            n.log_failure = None;
        }
        n.api = verdict;
    }

    /// A log record: kept (collapsed) with every migrated node it names when it is a warning or
    /// worse; a takeover error (see the patterns) makes those nodes failing, unless Ironic has
    /// taken the node over and changed it since the record was written.
    pub fn record(&mut self, r: &Record) {
        if r.level < LogLevel::Warning && !r.takeover_error {
            return;
        }
        for u in &r.nodes {
            let Some(&i) = self.index.get(u) else { continue };
            let n = &mut self.nodes[i];
            collapse::add(&mut n.records, r);
            if !r.takeover_error {
                continue;
            }
            let entry = Collapsed::new(r);
            let after_taken_over = taken_over(n.api.state);
            if after_taken_over && matches!((n.api.updated_at, r.time), (Some(u), Some(t)) if u > t) {
                continue;
            }
            match &mut n.log_failure {
                Some(f) => {
                    if entry.rank() > f.entry.rank() {
                        f.entry = entry;
                    }
                    f.latest = f.latest.max(r.time);
                }
                None => n.log_failure = Some(LogFailure { entry, latest: r.time, after_taken_over }),
            }
        }
    }

    /// The nodes whose status changed since the last call: (uuid, status, reason).
    pub fn changes(&mut self) -> Vec<(String, TakeoverState, Option<String>)> {
        let mut out = Vec::new();
        for n in &mut self.nodes {
            let (state, problems) = n.status();
            if state != n.shown {
                n.shown = state;
                out.push((n.api.uuid.clone(), state, problems.first().cloned()));
            }
        }
        out
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for n in &self.nodes {
            match n.status().0 {
                TakeoverState::Ok => c.taken_over += 1,
                TakeoverState::HeldInMaintenance => c.held += 1,
                TakeoverState::Pending => c.waiting += 1,
                TakeoverState::Failed => c.failing += 1,
            }
        }
        c
    }

    pub fn all_decided(&self) -> bool {
        self.nodes.iter().all(|n| decided(n.status().0))
    }

    pub fn any_failing(&self) -> bool {
        self.nodes.iter().any(|n| n.status().0 == TakeoverState::Failed)
    }

    /// Ends the check: a node still waiting fails at the deadline, and stays waiting (undecided)
    /// otherwise, with why.
    pub fn end(&mut self, ending: Ending, timeout: Duration) {
        for n in &mut self.nodes {
            let why = match ending {
                Ending::Deadline => (
                    TakeoverState::Failed,
                    format!(
                        "not taken over within {}s (power state {}, conductor {})",
                        timeout.as_secs(),
                        n.api.power_state.as_deref().unwrap_or("never read"),
                        n.api.conductor.as_deref().unwrap_or("none")
                    ),
                ),
                Ending::FirstFailure => {
                    (TakeoverState::Pending, "not decided: the check stopped at the first failing node".into())
                }
                Ending::Cancelled => (TakeoverState::Pending, "not decided: the check was stopped".into()),
                Ending::AllDecided => continue,
            };
            n.ended = Some(why);
        }
    }

    /// Every node as it stands, its records most specific first.
    pub fn nodes(&self) -> Vec<NodeTakeover> {
        self.nodes
            .iter()
            .map(|n| {
                let (state, problems) = n.status();
                let mut log_errors = n.records.clone();
                collapse::sort_most_specific(&mut log_errors);
                NodeTakeover { state, problems, log_errors, ..n.api.clone() }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ironic::verdict::judge;
    use chrono::{DateTime, Local};
    use serde_json::json;

    const A: &str = "bbbbbbbb-0000-4000-8000-000000000001";
    const B: &str = "bbbbbbbb-0000-4000-8000-000000000004";

    fn ok(u: &str) -> NodeTakeover {
        judge(u, &json!({"power_state": "power off", "provision_state": "available", "conductor": "c1"}))
    }

    fn waiting(u: &str) -> NodeTakeover {
        judge(u, &json!({"power_state": null, "provision_state": "available", "conductor": "c1"}))
    }

    /// A record as the watcher gives it, classified by the built-in patterns.
    fn rec(line: &str) -> Record {
        use crate::core::logs::watch::{finish, Patterns, RecordBuilder};
        let mut b = RecordBuilder::new("ironic");
        b.push(line);
        let migrated = [A.to_string(), B.to_string()].into();
        finish(b.flush().unwrap(), &Patterns::default_set(), &migrated)
    }

    fn retry(u: &str, sec: u32) -> Record {
        rec(&format!("2026-11-30 18:02:{sec:02}.453 1 WARNING ironic.drivers.modules.ipmitool [None req-{sec}aaaaaaaa - - - - - -] IPMI Error encountered, retrying \"ipmitool -p 16593 -f /tmp/tmp{sec}xyzab power status\" for node {u}. Error: Unexpected error while running command."))
    }

    #[test]
    fn a_bmc_error_in_the_logs_fails_a_waiting_node_at_once() {
        let mut t = Tracker::new(&[A.to_string(), B.to_string()]);
        t.api(ok(A));
        t.api(waiting(B));
        assert_eq!(t.changes(), vec![(A.to_string(), TakeoverState::Ok, None)]);
        assert!(!t.all_decided());
        for s in 40..49 {
            t.record(&retry(B, s));
        }
        let ch = t.changes();
        assert_eq!(ch.len(), 1, "one event for the change, not one per record: {ch:?}");
        assert_eq!((ch[0].0.as_str(), ch[0].1), (B, TakeoverState::Failed));
        assert!(ch[0].2.as_deref().unwrap().starts_with("bmc-error: IPMI Error encountered, retrying"), "{ch:?}");
        assert!(t.all_decided() && t.any_failing());
        // the final error outranks the retries as the reason; the records are collapsed
        t.record(&rec(&format!("2026-11-30 18:02:57.034 1 ERROR ironic.drivers.modules.ipmitool [None req-1 - - - - - -] IPMI Error while attempting \"ipmitool -f /tmp/tmp3kb_giwr power status\" for node {B}. Error: x")));
        assert!(t.changes().is_empty(), "still failing: no new event");
        let nodes = t.nodes();
        assert!(nodes[1].problems[0].contains("IPMI Error while attempting"), "{:?}", nodes[1].problems);
        assert_eq!(nodes[1].log_errors.len(), 2);
        assert_eq!((nodes[1].log_errors[0].level, nodes[1].log_errors[1].count), (LogLevel::Error, 9));
        assert!(nodes[0].log_errors.is_empty());
    }

    /// Taken over, Ironic's last change to the node at `updated` (UTC, as the API writes it).
    fn ok_at(u: &str, updated: &str) -> NodeTakeover {
        judge(
            u,
            &json!({"power_state": "power off", "provision_state": "available", "conductor": "c1", "updated_at": updated}),
        )
    }

    #[test]
    fn errors_before_ironic_took_the_node_over_are_history_and_later_ones_fail_it() {
        // the log and the API's updated_at are compared in local time: build the records from it
        let at = |utc: &str| {
            let t = DateTime::parse_from_rfc3339(utc).unwrap().with_timezone(&Local).naive_local();
            let line = format!("{} 1 WARNING ironic.drivers.modules.ipmitool [-] IPMI Error encountered, retrying \"ipmitool power status\" for node {A}.", t.format("%Y-%m-%d %H:%M:%S%.3f"));
            rec(&line)
        };
        let mut t = Tracker::new(&[A.to_string(), B.to_string()]);
        t.api(ok_at(A, "2026-11-30T18:02:50+00:00"));
        t.record(&at("2026-11-30T18:02:45+00:00"));
        assert_eq!(t.counts().taken_over, 1, "an error older than the power state read is history");
        assert_eq!(t.nodes()[0].log_errors.len(), 1, "and stays with the node");
        t.record(&at("2026-11-30T18:03:00+00:00"));
        assert_eq!(t.counts().failing, 1, "the BMC failed after the takeover");
        t.api(ok_at(A, "2026-11-30T18:02:50+00:00"));
        assert_eq!(t.counts().failing, 1, "the stale power state does not clear it");
        t.api(ok_at(A, "2026-11-30T18:03:10+00:00"));
        assert_eq!(t.counts().failing, 0, "Ironic changed the node since (maintenance unset, power read)");
        // a node still waiting when its BMC errors came recovers once Ironic reads its power state
        t.api(waiting(B));
        t.record(&retry(B, 2));
        assert_eq!(t.counts().failing, 1);
        t.api(ok(B));
        assert_eq!(t.counts().taken_over, 2);
        let ch = t.changes();
        assert_eq!(ch.len(), 2, "{ch:?}");
    }

    #[test]
    fn the_end_decides_what_is_still_waiting() {
        let mut t = Tracker::new(&[A.to_string(), B.to_string()]);
        t.api(ok(A));
        t.api(waiting(B));
        t.changes();
        let mut f = t.clone();
        f.end(Ending::FirstFailure, Duration::from_secs(90));
        assert!(f.changes().is_empty(), "undecided stays waiting");
        assert!(f.nodes()[1].problems[0].contains("first failing node"));
        t.end(Ending::Deadline, Duration::from_secs(90));
        assert_eq!(t.changes()[0].1, TakeoverState::Failed);
        assert!(t.nodes()[1].problems[0].contains("not taken over within 90s (power state never read"));
    }
}
