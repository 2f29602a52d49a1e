//! Step 6, the migration: the load's progress (every node queued, writing, done or failed), and
//! beside it on a wide terminal the takeover logs.

use std::collections::VecDeque;
use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Gauge, Paragraph};
use ratatui::Frame;

use super::logs::Logs;
use super::{Ctx, Out, Page, Screen};
use crate::core::migrate::load_sql::{LoadEvent, LoadSummary, NodeStatus, BATCH};
use crate::core::migrate::plan::Plan;
use crate::tui::app::Effect;
use crate::tui::chrome::{short_uuid, spinner};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::theme::Theme;

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
    pub elapsed: Duration,
    pub nodes: VecDeque<NodeProgress>,
    pub finished: Option<Result<LoadSummary, String>>,
    pub cancel_asked: bool,
    pub cancelling: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Cancel,
    Logs,
    Summary,
    YesCancel,
    Keep,
}

static CANCEL: Binding<Act> = Binding { keys: &[(ch('c'), Act::Cancel)], label: "c", what: "cancel", bar: Bar::Yes };
static LOGS: Binding<Act> = Binding { keys: &[(ch('L'), Act::Logs)], label: "L", what: "logs", bar: Bar::Yes };
static SUMMARY: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Summary)],
    label: "Enter",
    what: "summary (when done)",
    bar: Bar::Yes,
};
static RUNNING: [&Binding<Act>; 3] = [&CANCEL, &LOGS, &SUMMARY];
static YES: Binding<Act> = Binding {
    keys: &[(ch('y'), Act::YesCancel), (ch('Y'), Act::YesCancel)],
    label: "y",
    what: "cancel the load",
    bar: Bar::Yes,
};
/// Any other key keeps going.
static KEEP: Binding<Act> = Binding { keys: &[], label: "n", what: "keep going", bar: Bar::Yes };
static ASKING: [&Binding<Act>; 2] = [&YES, &KEEP];

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
                self.run_id = run_id;
                self.total = nodes;
                self.rehearse = rehearse;
            }
            LoadEvent::Node { nova_bm_id, uuid, status } => {
                let status = match status {
                    NodeStatus::Written => RowStatus::Done,
                    NodeStatus::Skipped { reason } => RowStatus::Skipped(reason),
                    NodeStatus::Failed { error } => RowStatus::NodeFailed(error),
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
            LoadEvent::Progress { done, total } => {
                self.done = done;
                self.total = total;
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
            LoadEvent::Summary(_) => {}
        }
    }

    /// The load ended (committed, rehearsed, or failed and rolled back).
    pub fn finish(&mut self, r: Result<LoadSummary, String>) {
        match &r {
            Ok(s) => {
                self.elapsed = Duration::from_millis(s.elapsed_ms);
                self.done = s.created;
                if s.rehearse {
                    for n in self.nodes.iter_mut().filter(|n| n.status == RowStatus::Done) {
                        n.status = RowStatus::RolledBack;
                    }
                }
            }
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

    pub fn render(&self, f: &mut Frame, area: Rect, theme: Theme, tick: usize, logs: &Logs) {
        let (main, logs_area) = if area.width >= 110 {
            let [a, b] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
            (a, Some(b))
        } else {
            (area, None)
        };
        let [gauge, stats, list] =
            Layout::vertical([Constraint::Length(3), Constraint::Length(3), Constraint::Min(3)]).areas(main);
        let ratio = match (self.total, &self.finished) {
            (0, Some(_)) => 1.0,
            (0, None) => 0.0,
            (t, _) => self.done as f64 / t as f64,
        };
        f.render_widget(
            Gauge::default()
                .block(Block::bordered().title(format!(
                    " {} run {} ",
                    if self.rehearse { "Rehearsal" } else { "Live" },
                    short_uuid(Some(&self.run_id))
                )))
                .gauge_style(theme.good())
                .ratio(ratio.clamp(0.0, 1.0))
                .label(format!("{}/{} nodes", self.done, self.total)),
            gauge,
        );
        let secs = self.elapsed.as_secs_f64();
        let rate = if secs > 0.0 { self.done as f64 / secs } else { 0.0 };
        let eta = if rate > 0.0 && self.total > self.done {
            format!("{:.0}s", (self.total - self.done) as f64 / rate)
        } else {
            "-".into()
        };
        let state = match &self.finished {
            None if self.cancelling => Span::styled("cancelling: rolling back…", theme.warn()),
            None => Span::styled(format!("{} writing", spinner(tick)), theme.warn()),
            Some(Ok(s)) if s.committed => Span::styled("committed (Enter: summary)", theme.good()),
            Some(Ok(s)) if s.rehearse => Span::styled("rehearsal done, rolled back (Enter: summary)", theme.good()),
            Some(Ok(_)) => Span::styled("nothing to write (Enter: summary)", theme.good()),
            Some(Err(e)) => Span::styled(format!("FAILED, rolled back: {e}"), theme.bad()),
        };
        f.render_widget(
            Paragraph::new(vec![
                Line::from(format!(" {rate:.0} nodes/s   elapsed {secs:.3}s   ETA {eta}")),
                Line::from(vec![Span::raw(" "), state]),
            ])
            .block(Block::new().borders(Borders::LEFT | Borders::RIGHT | Borders::BOTTOM)),
            stats,
        );
        let h = list.height.saturating_sub(2) as usize;
        // in plan order, the window kept on the work in progress (or on the end once finished)
        let first_open = self.nodes.iter().position(|n| n.status.is_open());
        let start = match first_open {
            Some(i) => i.saturating_sub(h / 3),
            None => self.nodes.len().saturating_sub(h),
        };
        let lines: Vec<Line> = self
            .nodes
            .iter()
            .skip(start)
            .take(h)
            .map(|n| {
                let st = match n.status {
                    RowStatus::Failed(_) | RowStatus::NodeFailed(_) => theme.bad(),
                    RowStatus::Done | RowStatus::RolledBack => theme.good(),
                    RowStatus::Writing | RowStatus::Api(_) => theme.warn(),
                    RowStatus::Queued | RowStatus::Skipped(_) => theme.dim(),
                };
                Line::from(vec![
                    Span::raw(format!(" {:>5} {} ", n.nova_bm_id, short_uuid(Some(&n.uuid)))),
                    Span::styled(n.status.to_string(), st),
                ])
            })
            .collect();
        f.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(format!(" Nodes: {} to write ", self.total))),
            list,
        );
        if let Some(l) = logs_area {
            logs.render(f, l, theme, "Takeover watch");
        }
    }
}

impl Page for Progress {
    type Act = Act;

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if self.cancel_asked {
            ASKING.to_vec()
        } else {
            RUNNING.to_vec()
        }
    }

    fn act(&mut self, act: Act, cx: &Ctx) -> Vec<Out> {
        match act {
            Act::YesCancel => {
                self.cancel_asked = false;
                self.cancelling = true;
                return vec![Out::Effect(Effect::Cancel)];
            }
            Act::Keep => self.cancel_asked = false,
            Act::Cancel if cx.running => self.cancel_asked = true,
            Act::Logs => return vec![Out::Go(Screen::Logs)],
            Act::Summary if self.finished.is_some() => return vec![Out::Go(Screen::Summary)],
            Act::Cancel | Act::Summary => {}
        }
        vec![]
    }

    /// While the cancel question is open, any other key keeps the load going.
    fn other(&mut self, _key: KeyEvent, cx: &Ctx) -> Vec<Out> {
        if self.cancel_asked {
            return self.act(Act::Keep, cx);
        }
        vec![]
    }
}

#[cfg(test)]
mod api_tests {
    use super::*;

    #[test]
    fn api_states_show_per_node() {
        let mut p = Progress::default();
        p.nodes.push_back(NodeProgress { nova_bm_id: 7, uuid: "u7".into(), status: RowStatus::Queued });
        for state in ["enroll", "verifying", "manageable", "active"] {
            p.on_event(LoadEvent::NodeState { nova_bm_id: 7, uuid: "u7".into(), state: state.into() });
            assert_eq!(p.nodes[0].status.to_string(), state);
        }
        p.on_event(LoadEvent::Node {
            nova_bm_id: 7,
            uuid: "u7".into(),
            status: NodeStatus::Failed { error: "adopt failed: x".into() },
        });
        assert_eq!(p.nodes[0].status.to_string(), "failed (rerun resumes it): adopt failed: x");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::screens::fixture;
    use crate::tui::session::Mode;

    #[test]
    fn queued_writing_done_failed() {
        let s = fixture::session(Mode::Rehearsal);
        let mut p = Progress::start(true, s.plan.as_ref());
        assert!(!p.nodes.is_empty() && p.nodes.iter().all(|n| n.status == RowStatus::Writing));
        let first = p.nodes[0].clone();
        p.on_event(LoadEvent::Node { nova_bm_id: first.nova_bm_id, uuid: first.uuid, status: NodeStatus::Written });
        assert_eq!(p.nodes[0].status, RowStatus::Done);
        p.finish(Err("lock wait timeout".into()));
        assert!(p.nodes.iter().all(|n| n.status == RowStatus::Failed("lock wait timeout".into())));
    }

    #[test]
    fn cancel_asks_first() {
        let s = fixture::session(Mode::Rehearsal);
        let mut cx = fixture::ctx(&s);
        cx.running = true;
        let mut p = Progress::start(true, s.plan.as_ref());
        p.on_key(ch('c').event(), &cx);
        assert!(p.cancel_asked);
        p.on_key(ch('x').event(), &cx);
        assert!(!p.cancel_asked && !p.cancelling);
        p.on_key(ch('c').event(), &cx);
        assert_eq!(p.on_key(ch('Y').event(), &cx), vec![Out::Effect(Effect::Cancel)]);
        assert!(p.cancelling);
        assert!(p.on_key(code(KeyCode::Enter).event(), &cx).is_empty(), "no summary before the end");
    }

    #[test]
    fn snapshot() {
        let s = fixture::session(Mode::Rehearsal);
        let mut p = Progress::start(true, s.plan.as_ref());
        p.run_id = "0123abcd-0000-4000-8000-000000000000".into();
        p.total = p.nodes.len();
        p.elapsed = Duration::from_millis(500);
        for i in 0..5 {
            let n = p.nodes[i].clone();
            p.on_event(LoadEvent::Node { nova_bm_id: n.nova_bm_id, uuid: n.uuid, status: NodeStatus::Written });
        }
        p.on_event(LoadEvent::Progress { done: 5, total: p.total });
        let text = fixture::render(100, 16, |f| p.render(f, f.area(), Theme { color: false }, 1, &Logs::default()));
        insta::assert_snapshot!(text);
    }
}
