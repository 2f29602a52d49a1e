//! What the wizard keeps of its background work, for the screens to draw: the load's progress (from
//! `Msg::Load`), the followed logs (`Msg::Logs`) and the flavors' planned change (`Msg::Flavors`).
//! Plain state changed by messages: no keys, no drawing. The progress, logs and flavors screens show
//! it, the summary and the run report read it. It lives apart from those screens so that the
//! messages and the screens' shared `DrawCtx` (`screens/page.rs`) can name it without importing a
//! screen.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

pub use crate::core::logs::follow::{LogLevel as Level, LogLine};
use crate::core::logs::watch::node_uuids;
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::flavors::SpecChange;
use crate::core::migrate::load_sql::BATCH;
use crate::core::migrate::plan::Plan;
use crate::core::migrate::steps::{Ended, Outcome, Planned};
use crate::core::migrate::timing::{human_ms, Throughput};

/// A load that ended: the plan it loaded (made again against the API's view on that path) and the
/// outcome the core decided. The screens, the next steps and the run report read it; none of them
/// decides again how the run ended.
#[derive(Debug)]
pub struct Finished {
    pub planned: Planned,
    pub outcome: Outcome,
}

impl Finished {
    /// The load's counts, when it got as far as to have them.
    pub fn summary(&self) -> Option<&LoadSummary> {
        self.outcome.summary.as_ref()
    }
}

/// The diff the Nova DB needs, and whether it was applied.
#[derive(Debug, Clone, Default)]
pub struct FlavorView {
    pub schema: String,
    /// where the flavors were read: which database, its URL redacted
    pub source: String,
    pub what: String,
    pub changes: Vec<SpecChange>,
    pub applied: Option<String>,
}

/// Nodes kept on the screen (the oldest go first).
pub const PROGRESS_KEEP: usize = 2000;

/// Where one node of the load is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowStatus {
    Queued,
    Writing,
    Done,
    /// written, then rolled back with the rest (a rehearsal)
    RolledBack,
    Skipped(String),
    /// the load failed and was rolled back: the error
    Failed(String),
    /// `--via api`: the provision state the node has reached so far (enroll, manageable, ...)
    Api(String),
    /// `--via api`: this node's step failed (Ironic's error); the others went on, a rerun resumes it
    NodeFailed(String),
}

impl RowStatus {
    /// Not yet written.
    pub fn is_open(&self) -> bool {
        matches!(self, RowStatus::Queued | RowStatus::Writing | RowStatus::Api(_))
    }
}

impl std::fmt::Display for RowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowStatus::Queued => f.write_str("queued"),
            RowStatus::Writing => f.write_str("writing"),
            RowStatus::Done => f.write_str("done"),
            RowStatus::RolledBack => f.write_str("done (rolled back: rehearsal)"),
            RowStatus::Skipped(reason) => write!(f, "skipped: {reason}"),
            RowStatus::Failed(e) => write!(f, "failed, rolled back: {e}"),
            RowStatus::Api(state) => write!(f, "{state}"),
            RowStatus::NodeFailed(e) => write!(f, "failed (rerun resumes it): {e}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeProgress {
    pub nova_bm_id: i64,
    pub uuid: String,
    pub status: RowStatus,
}

#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub run_id: String,
    pub rehearse: bool,
    pub total: usize,
    pub done: usize,
    /// wall time since the load started (the runtime's clock while it runs, the load's own at the end)
    pub elapsed: Duration,
    /// nodes/s over a moving window, from the load's own clock
    pub throughput: Throughput,
    pub nodes: VecDeque<NodeProgress>,
    /// the load's end: the core's outcome, or why no plan could be made
    pub finished: Option<Result<Arc<Finished>, String>>,
    pub cancel_asked: bool,
    pub cancelling: bool,
    /// the node list's first row when the operator scrolled it (None: it follows the work)
    pub list_top: Option<usize>,
    /// the first row and the height of the list at the last drawing (the drawing learns them)
    pub list_shown: Shown,
}

/// What a drawing showed of a list (its first row, its height), for the keys that scroll it; atomic
/// so that a `Progress` may be shared (tests keep one in a static).
#[derive(Debug, Default)]
pub struct Shown(std::sync::atomic::AtomicUsize, std::sync::atomic::AtomicUsize);

impl Clone for Shown {
    fn clone(&self) -> Shown {
        let s = Shown::default();
        s.set(self.get());
        s
    }
}

impl Shown {
    pub fn get(&self) -> (usize, usize) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.0.load(Relaxed), self.1.load(Relaxed))
    }

    pub fn set(&self, (top, h): (usize, usize)) {
        use std::sync::atomic::Ordering::Relaxed;
        self.0.store(top, Relaxed);
        self.1.store(h, Relaxed);
    }
}

impl Progress {
    /// The load starts: every node to write is queued, the first batch is being written.
    pub fn start(rehearse: bool, plan: Option<&Plan>) -> Progress {
        let mut p = Progress { rehearse, ..Default::default() };
        if let Some(plan) = plan {
            for (i, n) in plan.to_write().take(PROGRESS_KEEP).enumerate() {
                let status = if i < BATCH { RowStatus::Writing } else { RowStatus::Queued };
                p.nodes.push_back(NodeProgress {
                    nova_bm_id: n.nova_bm_id,
                    uuid: n.uuid.clone().unwrap_or_default(),
                    status,
                });
            }
        }
        p
    }

    pub fn on_event(&mut self, ev: LoadEvent) {
        match ev {
            LoadEvent::Started { run_id, nodes, rehearse, .. } => {
                self.run_id = run_id.to_string();
                self.total = nodes;
                self.rehearse = rehearse;
            }
            LoadEvent::Node { nova_bm_id, uuid, status } => {
                let status = match status {
                    NodeStatus::Written => RowStatus::Done,
                    NodeStatus::Skipped { reason } => RowStatus::Skipped(crate::core::text::shown_line(&reason).into()),
                    NodeStatus::Failed { error } => RowStatus::NodeFailed(crate::core::text::shown_line(&error).into()),
                };
                match self.nodes.iter_mut().find(|n| n.nova_bm_id == nova_bm_id) {
                    Some(n) => n.status = status,
                    None => {
                        if self.nodes.len() >= PROGRESS_KEEP {
                            self.nodes.pop_front();
                        }
                        self.nodes.push_back(NodeProgress { nova_bm_id, uuid, status });
                    }
                }
            }
            LoadEvent::Progress { done, total, elapsed_ms } => {
                self.done = done;
                self.total = total;
                self.throughput.push(elapsed_ms, done);
                // the next batch is being written now
                for n in self.nodes.iter_mut().filter(|n| n.status == RowStatus::Queued).take(BATCH) {
                    n.status = RowStatus::Writing;
                }
            }
            LoadEvent::NodeState { nova_bm_id, state, .. } => {
                if let Some(n) = self.nodes.iter_mut().find(|n| n.nova_bm_id == nova_bm_id) {
                    n.status = RowStatus::Api(state);
                }
            }
            // the audit log and --json keep the timings; the screen shows the throughput
            LoadEvent::Timings { .. } | LoadEvent::Summary(_) => {}
        }
    }

    /// The load ended: each row shown as the outcome says (rolled back with the transaction, or
    /// left where it stood through the API).
    pub fn finish(&mut self, r: Result<Arc<Finished>, String>) {
        match &r {
            Ok(f) => {
                if let Some(s) = f.summary() {
                    self.elapsed = Duration::from_secs_f64(s.elapsed_ms.max(0.0) / 1000.0);
                    self.done = s.created;
                }
                match &f.outcome.ended {
                    Ended::Rehearsed => {
                        for n in self.nodes.iter_mut().filter(|n| n.status == RowStatus::Done) {
                            n.status = RowStatus::RolledBack;
                        }
                    }
                    // the transaction rolled back: nothing of it stayed
                    Ended::RolledBack(e) | Ended::NotStarted(e) => {
                        for n in self.nodes.iter_mut().filter(|n| n.status == RowStatus::Done || n.status.is_open()) {
                            n.status = RowStatus::Failed(e.to_string());
                        }
                    }
                    // through the API each row stays where the node stood
                    _ => {}
                }
            }
            // no plan could be made (or the job itself failed): nothing was kept
            Err(e) => {
                for n in self.nodes.iter_mut().filter(|n| n.status == RowStatus::Done || n.status.is_open()) {
                    n.status = RowStatus::Failed(e.clone());
                }
            }
        }
        self.cancelling = false;
        self.cancel_asked = false;
        self.finished = Some(r);
    }

    /// The outcome, once the load ended with one.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.finished {
            Some(Ok(f)) => Some(&f.outcome),
            _ => None,
        }
    }

    /// Nodes per second: over the moving window while the load runs, over the whole load at the end.
    pub fn rate(&self) -> Option<f64> {
        match self.finished.as_ref().map(|r| r.as_ref().map(|f| f.summary())) {
            Some(Ok(Some(s))) if s.elapsed_ms > 0.0 && s.created > 0 => Some(s.created as f64 * 1000.0 / s.elapsed_ms),
            Some(_) => None,
            None => self.throughput.rate(),
        }
    }

    /// The time left, in words.
    pub fn eta(&self) -> String {
        match (&self.finished, self.throughput.eta_s(self.total)) {
            (Some(_), _) => "done".into(),
            (None, _) if self.total > 0 && self.done >= self.total => "now".into(),
            (None, Some(s)) => human_ms(s * 1000.0),
            (None, None) => "-".into(),
        }
    }
}

/// Lines kept (the oldest go first).
pub const LOG_CAPACITY: usize = 5000;
/// Error records kept apart (the oldest go first).
pub const PINNED_CAPACITY: usize = 500;

/// An error record of the takeover, kept apart from the scrolling lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedError {
    pub source: String,
    /// `12:00:01 ERROR message`
    pub text: String,
    /// the node uuids it names (lower case)
    pub nodes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Logs {
    pub lines: VecDeque<LogLine>,
    pub follow: bool,
    /// index of the top line when not following
    pub scroll: usize,
    /// (name, path) of the followed files
    pub files: Vec<(String, String)>,
    /// every error record seen, oldest first (at most [`PINNED_CAPACITY`])
    pub pinned: VecDeque<PinnedError>,
}

impl Default for Logs {
    fn default() -> Self {
        Logs { lines: VecDeque::new(), follow: true, scroll: 0, files: Vec::new(), pinned: VecDeque::new() }
    }
}

impl Logs {
    pub fn push(&mut self, lines: Vec<LogLine>) {
        for mut l in lines {
            // a conductor's line can hold anything: kept as the screens show it (core/text.rs)
            if let std::borrow::Cow::Owned(t) = crate::core::text::shown_line(&l.text) {
                l.text = t;
            }
            if l.level == Level::Error && l.starts_record {
                if self.pinned.len() >= PINNED_CAPACITY {
                    self.pinned.pop_front();
                }
                self.pinned.push_back(PinnedError {
                    source: l.source.clone(),
                    text: l.compact(),
                    nodes: node_uuids(&l.text),
                });
            }
            if self.lines.len() >= LOG_CAPACITY {
                self.lines.pop_front();
                self.scroll = self.scroll.saturating_sub(1);
            }
            self.lines.push_back(l);
        }
    }

    /// Error records (a traceback counts once), those scrolled away included.
    pub fn errors(&self) -> usize {
        self.pinned.len()
    }

    /// The node uuids named by an error record.
    pub fn nodes_with_errors(&self) -> std::collections::BTreeSet<&str> {
        self.pinned.iter().flat_map(|e| e.nodes.iter().map(String::as_str)).collect()
    }

    /// Stops following and shows the first error line still kept; false when there is none.
    pub fn show_first_error(&mut self) -> bool {
        match (0..self.lines.len()).find(|&i| self.is_error(i)) {
            Some(i) => {
                self.follow = false;
                self.scroll = i;
                true
            }
            None => false,
        }
    }

    pub(crate) fn is_error(&self, i: usize) -> bool {
        self.lines[i].level == Level::Error && self.lines[i].starts_record
    }
}
