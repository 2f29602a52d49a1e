//! Step 6, the migration: every node queued, writing, done or failed; nodes/s over a moving window,
//! its sparkline, the time left; beside it (wide terminals) the takeover logs, their error records
//! pinned above them (`e` shows them; the nodes they name are marked in the list). The state,
//! `Progress`, is in `tui/work.rs` (the summary and the run report read it too); this file holds
//! its keys and its drawing.

use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph, Sparkline};
use ratatui::Frame;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::core::migrate::steps::{Ended, Outcome};
use crate::core::migrate::timing::{human_ms, human_rate};
use crate::core::text::visible_line;
use crate::tui::chrome::{short_uuid, spinner, wrap_words};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::theme::Theme;
use crate::tui::work::Logs;
pub use crate::tui::work::{NodeProgress, Progress, RowStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Cancel,
    Logs,
    Errors,
    Summary,
    YesCancel,
    Keep,
    Up,
    Down,
    PageUp,
    PageDown,
    Follow,
}

static CANCEL: Binding<Act> = Binding { keys: &[(ch('c'), Act::Cancel)], label: "c", what: "cancel", bar: Bar::Yes };
static LOGS: Binding<Act> = Binding { keys: &[(ch('L'), Act::Logs)], label: "L", what: "logs", bar: Bar::Yes };
static ERRORS: Binding<Act> = Binding {
    keys: &[(ch('e'), Act::Errors)],
    label: "e",
    what: "takeover errors in the logs",
    bar: Bar::As("e", "errors"),
};
static SUMMARY: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Summary)],
    label: "Enter",
    what: "summary (when done)",
    bar: Bar::Yes,
};
static SCROLL: Binding<Act> = Binding {
    keys: &[
        (code(KeyCode::Up), Act::Up),
        (code(KeyCode::Down), Act::Down),
        (ch('k'), Act::Up),
        (ch('j'), Act::Down),
        (code(KeyCode::PageUp), Act::PageUp),
        (code(KeyCode::PageDown), Act::PageDown),
    ],
    label: "↑/↓ j/k PgUp/PgDn",
    what: "scroll the nodes",
    bar: Bar::As("↑/↓", "scroll"),
};
static FOLLOW: Binding<Act> =
    Binding { keys: &[(ch('f'), Act::Follow)], label: "f", what: "follow the work again", bar: Bar::Yes };
static RUNNING: [&Binding<Act>; 5] = [&CANCEL, &LOGS, &ERRORS, &SUMMARY, &SCROLL];
static SCROLLED: [&Binding<Act>; 6] = [&CANCEL, &LOGS, &ERRORS, &SUMMARY, &SCROLL, &FOLLOW];
static YES: Binding<Act> = Binding {
    keys: &[(ch('y'), Act::YesCancel), (ch('Y'), Act::YesCancel)],
    label: "y",
    what: "cancel the load",
    bar: Bar::Yes,
};
/// Any other key keeps going.
static KEEP: Binding<Act> = Binding { keys: &[], label: "n", what: "keep going", bar: Bar::Yes };
static ASKING: [&Binding<Act>; 2] = [&YES, &KEEP];

/// The takeover logs beside the progress: the error records pinned on top (the newest that fit),
/// the followed lines below them.
fn render_logs(f: &mut Frame, area: Rect, theme: Theme, logs: &Logs) {
    let n = logs.pinned.len();
    if n == 0 {
        logs.draw_pane(f, area, theme, "Takeover watch");
        return;
    }
    let width = area.width.saturating_sub(2) as usize;
    let rows: Vec<Line> = logs
        .pinned
        .iter()
        .rev()
        .take(4)
        .rev()
        .flat_map(|e| {
            let mut w = wrap_words(&e.text, width.saturating_sub(3));
            if w.len() > 2 {
                w.truncate(2);
                w[1].push('…');
            }
            w.into_iter()
                .enumerate()
                .map(|(i, w)| Line::from(Span::styled(format!("{}{w}", if i == 0 { "" } else { "  " }), theme.bad())))
                .collect::<Vec<_>>()
        })
        .collect();
    let pinned_h = (rows.len() as u16 + 2).min(area.height / 2);
    let [top, rest] = Layout::vertical([Constraint::Length(pinned_h), Constraint::Min(3)]).areas(area);
    let title = format!(" Takeover errors: {n}{} (e: in the logs) ", if n > 4 { ", the last 4" } else { "" });
    f.render_widget(
        Paragraph::new(rows).block(Block::bordered().border_style(theme.bad()).title(Span::styled(title, theme.bad()))),
        top,
    );
    logs.draw_pane(f, rest, theme, "Takeover watch");
}

impl Page for Progress {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, tick, logs) = (cx.theme, cx.tick, cx.logs);
        let (main, logs_area) = if area.width >= 110 {
            let [a, b] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
            (a, Some(b))
        } else {
            (area, None)
        };
        let [gauge, stats, list] =
            Layout::vertical([Constraint::Length(3), Constraint::Length(6), Constraint::Min(3)]).areas(main);
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
        let state = match &self.finished {
            None if self.cancelling => Span::styled("cancelling: rolling back…", theme.warn()),
            None => Span::styled(format!("{} writing", spinner(tick)), theme.warn()),
            Some(Ok(f)) => {
                let o = &f.outcome;
                let style = if o.failure().is_some() { theme.bad() } else { theme.good() };
                Span::styled(format!("{} (Enter: summary)", visible_line(&short_outcome(o))), style)
            }
            Some(Err(e)) => Span::styled(format!("FAILED, nothing written: {e}"), theme.bad()),
        };
        let rate = self.rate().map(human_rate).unwrap_or_else(|| "-".into());
        let errors = logs.errors();
        let error_line = if errors > 0 {
            Line::from(Span::styled(
                format!(
                    " ⚠ {errors} takeover error(s): e shows them{}",
                    if logs_area.is_some() { " (pinned on the right)" } else { "" }
                ),
                theme.bad(),
            ))
        } else {
            Line::from("")
        };
        // a box of its own (it hung open under the gauge's, and read as a lost top border)
        let block = Block::bordered().title(" Rate ");
        let inner = block.inner(stats);
        f.render_widget(block, stats);
        let [l1, l2, l3, l4] = Layout::vertical([Constraint::Length(1); 4]).areas(inner);
        f.render_widget(
            Paragraph::new(format!(
                " {rate} nodes/s   elapsed {}   ETA {}",
                human_ms(self.elapsed.as_secs_f64() * 1000.0),
                self.eta()
            )),
            l1,
        );
        let [label, spark] = Layout::horizontal([Constraint::Length(12), Constraint::Min(1)]).areas(l2);
        f.render_widget(Paragraph::new(Span::styled(" nodes/s ", theme.dim())), label);
        // the latest batches that fit, each bar one batch's rate
        let bars: Vec<u64> = self.throughput.per_batch.iter().map(|r| r.round() as u64).collect();
        let bars = &bars[bars.len().saturating_sub(spark.width as usize)..];
        f.render_widget(Sparkline::default().data(bars).style(theme.good()), spark);
        f.render_widget(Paragraph::new(Line::from(vec![Span::raw(" "), state])), l3);
        f.render_widget(Paragraph::new(error_line), l4);

        let h = list.height.saturating_sub(2) as usize;
        // in plan order, the window kept on the work in progress (or on the end once finished)
        // the window: on the work in progress; at the end, on the first node a takeover error names
        let failing = logs.nodes_with_errors();
        let first_open = self.nodes.iter().position(|n| n.status.is_open());
        let first_failing = self.nodes.iter().position(|n| failing.contains(n.uuid.as_str()));
        let start = match (self.list_top, first_open, first_failing) {
            (Some(top), _, _) => top.min(self.nodes.len().saturating_sub(h)),
            (None, Some(i), _) => i.saturating_sub(h / 3),
            (None, None, Some(i)) => i.saturating_sub(h / 3).min(self.nodes.len().saturating_sub(h)),
            (None, None, None) => self.nodes.len().saturating_sub(h),
        };
        self.list_shown.set((start, h));
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
                let mut row = vec![
                    Span::raw(format!(" {:>5} {} ", n.nova_bm_id, short_uuid(Some(&n.uuid)))),
                    Span::styled(n.status.to_string(), st),
                ];
                if failing.contains(n.uuid.as_str()) {
                    row.push(Span::styled("  ⚠ takeover error", theme.bad()));
                }
                Line::from(row)
            })
            .collect();
        f.render_widget(Paragraph::new(lines).block(Block::bordered().title(self.list_title(start, h))), list);
        if let Some(l) = logs_area {
            render_logs(f, l, theme, logs);
        }
    }

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if self.cancel_asked {
            ASKING.to_vec()
        } else if self.list_top.is_some() {
            SCROLLED.to_vec()
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
            Act::Errors => return vec![Out::ShowErrors],
            Act::Summary if self.finished.is_some() => return vec![Out::Go(Screen::Summary)],
            Act::Cancel | Act::Summary => {}
            Act::Up => self.scroll_by(-1),
            Act::Down => self.scroll_by(1),
            Act::PageUp => self.scroll_by(-10),
            Act::PageDown => self.scroll_by(10),
            Act::Follow => self.list_top = None,
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

impl Progress {
    /// The node list scrolled by `by` rows from where it is shown (it then stays there: `f` follows
    /// the work again).
    fn scroll_by(&mut self, by: isize) {
        let (shown, h) = self.list_shown.get();
        let from = self.list_top.unwrap_or(shown);
        let last = self.nodes.len().saturating_sub(h.max(1));
        self.list_top = Some(from.saturating_add_signed(by).min(last));
    }

    /// The list's title: how many nodes, and which are shown when they do not all fit.
    fn list_title(&self, start: usize, h: usize) -> String {
        let n = self.nodes.len();
        if n <= h {
            return format!(" Nodes: {} to write ", self.total);
        }
        let how = if self.list_top.is_some() { "f: follow" } else { "↑/↓ scroll" };
        format!(" Nodes: {} to write; {}-{} of {n} ({how}) ", self.total, start + 1, (start + h).min(n))
    }
}

/// The outcome in a few words, for the progress line (the summary says it whole).
fn short_outcome(o: &Outcome) -> String {
    match &o.ended {
        Ended::Committed => "committed".into(),
        Ended::Rehearsed => "rehearsal done, rolled back".into(),
        Ended::NothingToWrite => "nothing to write".into(),
        Ended::Adopted => "done through the API".into(),
        Ended::RolledBack(e) => format!("FAILED, rolled back: {e}"),
        Ended::NotStarted(e) => format!("not started: {e}"),
        Ended::PartlyAdopted { left, failed, .. } => {
            format!("PARTLY DONE through the API: {} node(s) left in Ironic, {} failed", left.len(), failed.len())
        }
        Ended::Stopped { left, error } => {
            format!("STOPPED through the API: {} node(s) left in Ironic: {error}", left.len())
        }
    }
}

#[cfg(test)]
mod api_tests {
    use super::*;
    use crate::core::migrate::events::{LoadEvent, NodeStatus};

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
    use std::time::Duration;

    use crate::core::migrate::events::{LoadEvent, NodeStatus};
    use crate::tui::screens::fixture;
    use crate::tui::session::Mode;
    use crate::tui::work::Level;

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
        p.on_event(LoadEvent::Progress { done: 5, total: p.total, elapsed_ms: 400.0 });
        let text = fixture::draw(100, 16, &p, &DrawCtx { tick: 1, ..fixture::draw_ctx(&s) });
        assert!(
            text.contains("13 nodes/s") && text.contains("elapsed 500 ms") && text.contains("ETA 2.00 s"),
            "{text}"
        );
        insta::assert_snapshot!(text);
    }

    /// A takeover error stays pinned while later lines push it out of the followed pane, and the
    /// node it names is marked in the list.
    #[test]
    fn a_takeover_error_stays_pinned_while_later_lines_arrive() {
        use crate::core::logs::follow::LogLine;
        let s = fixture::session(Mode::Rehearsal);
        let mut p = Progress::start(true, s.plan.as_ref());
        p.run_id = "0123abcd-0000-4000-8000-000000000000".into();
        p.total = p.nodes.len();
        let failing = p.nodes[1].clone();
        for n in p.nodes.clone() {
            p.on_event(LoadEvent::Node { nova_bm_id: n.nova_bm_id, uuid: n.uuid, status: NodeStatus::Written });
        }
        p.on_event(LoadEvent::Progress { done: p.total, total: p.total, elapsed_ms: 80.0 });
        p.elapsed = Duration::from_millis(90);
        let line = |level, text: String| LogLine { source: "ironic".into(), level, text, starts_record: true };
        let mut logs = Logs::default();
        logs.push(vec![line(
            Level::Error,
            format!("2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [req-1] Failed to take over node {}: deploy image not found", failing.uuid),
        )]);
        for i in 0..40 {
            logs.push(vec![line(
                Level::Info,
                format!(
                    "2024-01-01 12:00:{:02}.000 42 INFO ironic.conductor.manager [-] Successfully took over node {i}",
                    2 + i % 50
                ),
            )]);
        }
        let draw_cx = DrawCtx { tick: 1, logs: &logs, ..fixture::draw_ctx(&s) };
        let text = fixture::draw(120, 28, &p, &draw_cx);
        assert!(text.contains("Takeover errors: 1") && text.contains("Failed to take over node"), "{text}");
        assert!(text.contains("took over node 39"), "the later lines arrive below: {text}");
        assert!(!text.contains("took over node 5 "), "the pane has followed them: {text}");
        let marked: Vec<&str> = text.lines().filter(|l| l.contains("⚠ takeover error")).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains(&failing.uuid[..8]), "{text}");
        assert!(text.contains("⚠ 1 takeover error(s): e shows them (pinned on the right)"), "{text}");
        insta::assert_snapshot!(text);
        // narrow: no log pane, the count stays
        let narrow = fixture::draw(100, 20, &p, &draw_cx);
        assert!(
            narrow.contains("⚠ 1 takeover error(s): e shows them\n")
                || narrow.contains("⚠ 1 takeover error(s): e shows them "),
            "{narrow}"
        );
        // e: to the error in the logs
        let cx = fixture::ctx(&s);
        assert_eq!(p.on_key(ch('e').event(), &cx), vec![Out::ShowErrors]);
    }
}
