//! Step 7, the summary: what the load did, the wall time of each phase, the verification, the
//! takeover check (live, from its events, when an Ironic API is given), where the audit log and the
//! decisions are, the takeover's errors node by node, and the next steps of the maintenance window.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::core::ironic::verdict::{Counts, Ending, TakeoverEvent, TakeoverState};
use crate::core::migrate::next_steps::{next_steps, RunFacts};
use crate::core::migrate::steps::Ended;
use crate::core::migrate::timing::human_ms;
use crate::core::text::visible_line;
use crate::tui::chrome::{clip, short_uuid, wrap_words};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::theme::Theme;
use crate::tui::work::{Logs, Progress};
use ratatui::crossterm::event::KeyCode;

#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// the verification after a committed load
    pub verify: Option<Result<String, String>>,
    /// the takeover check after the verification (with an Ironic API)
    pub takeover: Option<TakeoverView>,
    /// how long it took (ms)
    pub verify_ms: Option<f64>,
    /// where the decisions were saved
    pub saved_to: Option<String>,
    /// where the run report was written
    pub report: Option<String>,
    /// what the load really did (the next steps are worked out from it), once it ended
    pub facts: Option<RunFacts>,
    /// where the next steps were kept as a checklist
    pub checklist: Option<String>,
    /// the first line shown (the summary is taller than an 80x24 terminal)
    pub scroll: u16,
    /// the furthest `scroll` goes at the last drawing's size (the drawing learns it)
    max_scroll: std::cell::Cell<u16>,
}

/// The takeover check as its events tell it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TakeoverView {
    pub counts: Counts,
    /// the failing nodes and why, in the order they failed
    pub failing: Vec<(String, String)>,
    /// how it ended (None while it runs)
    pub ended: Option<Result<Ending, String>>,
}

impl TakeoverView {
    pub fn on_event(&mut self, ev: TakeoverEvent) {
        match ev {
            TakeoverEvent::Started { nodes, timeout } => {
                self.counts = Counts { waiting: nodes, timeout, ..Counts::default() }
            }
            TakeoverEvent::Node { uuid, state, reason, .. } => {
                self.failing.retain(|(u, _)| *u != uuid);
                if state == TakeoverState::Failed {
                    self.failing.push((uuid, reason.unwrap_or_default()));
                }
            }
            TakeoverEvent::Progress(c) => self.counts = c,
        }
    }

    fn lines(&self, theme: Theme) -> Vec<Line<'static>> {
        let c = &self.counts;
        let (text, style) = match &self.ended {
            None => (format!("{c}"), theme.warn()),
            Some(Err(e)) => (format!("not checked: {e}"), theme.bad()),
            Some(Ok(ending)) => {
                let how = match ending {
                    Ending::AllDecided => "every node decided",
                    Ending::FirstFailure => "stopped at the first failing node",
                    Ending::Deadline => "deadline reached",
                    Ending::Cancelled => "stopped",
                };
                let held = if c.held > 0 { format!(", {} held", c.held) } else { String::new() };
                let waiting = if c.waiting > 0 { format!(", {} undecided", c.waiting) } else { String::new() };
                let style = if c.failing + c.waiting > 0 { theme.bad() } else { theme.good() };
                (format!("{} taken over{held}, {} failing{waiting}: {how}", c.taken_over, c.failing), style)
            }
        };
        let mut lines = vec![Line::from(vec![Span::raw("  Takeover       "), Span::styled(text, style)])];
        for (uuid, why) in self.failing.iter().take(3) {
            lines.push(Line::from(Span::styled(format!("    failing {uuid}: {why}"), theme.bad())));
        }
        if self.failing.len() > 3 {
            lines.push(Line::from(format!("    ... and {} more: bm2ironic verify --takeover", self.failing.len() - 3)));
        }
        lines
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Logs,
    Inventory,
    Report,
    Save,
    Up,
    Down,
    PageUp,
    PageDown,
}

static LOGS: Binding<Act> = Binding { keys: &[(ch('L'), Act::Logs)], label: "L", what: "logs", bar: Bar::Yes };
static INVENTORY: Binding<Act> =
    Binding { keys: &[(ch('i'), Act::Inventory)], label: "i", what: "inventory", bar: Bar::Yes };
static REPORT: Binding<Act> =
    Binding { keys: &[(ch('s'), Act::Report)], label: "s", what: "write the run report", bar: Bar::As("s", "report") };
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
    what: "scroll",
    bar: Bar::As("↑/↓", "scroll"),
};
static SAVE: Binding<Act> = Binding {
    keys: &[(ch('w'), Act::Save)],
    label: "w",
    what: "save the decisions (bm2ironic-resolutions.toml)",
    bar: Bar::As("w", "save decisions"),
};
static TABLE: [&Binding<Act>; 5] = [&SAVE, &REPORT, &LOGS, &INVENTORY, &SCROLL];

/// The next steps as lines of at most `width` columns: each step numbered (`✓` when done) and
/// wrapped under its text, its command on the lines below, indented further.
fn next_step_lines(facts: Option<&RunFacts>, theme: Theme, width: usize) -> Vec<Line<'static>> {
    let Some(f) = facts else {
        return vec![Line::from("  (once the load has run)")];
    };
    let mut lines = Vec::new();
    for (i, s) in next_steps(f).iter().enumerate() {
        let mark = if s.done { "✓".to_string() } else { format!("{}.", i + 1) };
        let style = if s.done { theme.dim() } else { ratatui::style::Style::new() };
        for (j, l) in wrap_words(&visible_line(&s.what), width.saturating_sub(6)).into_iter().enumerate() {
            let head = if j == 0 { format!("  {mark:>3} ") } else { " ".repeat(6) };
            lines.push(Line::from(Span::styled(format!("{head}{l}"), style)));
        }
        if let Some(c) = &s.command {
            // a wrapped command ends its lines with ` \`: pasted whole, the shell reads one command
            let parts = wrap_words(&visible_line(c), width.saturating_sub(10));
            let n = parts.len();
            for (j, l) in parts.into_iter().enumerate() {
                let more = if j + 1 < n { " \\" } else { "" };
                lines.push(Line::from(Span::styled(
                    format!("{}{l}{more}", " ".repeat(if j == 0 { 6 } else { 8 })),
                    theme.key(),
                )));
            }
        }
    }
    lines
}

/// Characters of one node's first takeover error shown at most (Ironic's run to a few hundred): the
/// rest of a longer one is on the logs screen.
pub const ERROR_CHARS: usize = 1024;

/// A node's first takeover error, wrapped under itself in `width` columns (it was cut at the screen's
/// edge: "Failed to pre..."), about [`ERROR_CHARS`] characters at most, then how many more records the
/// node has.
fn error_lines(who: &str, first: &str, more: usize, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let width = width.max(20);
    let max_lines = (ERROR_CHARS / width).max(4);
    let mut parts = wrap_words(&visible_line(first), width);
    if parts.len() > max_lines {
        parts.truncate(max_lines);
        let last = parts.last_mut().expect("max_lines > 0");
        *last = format!("{} … (L: the whole line)", clip(last, width.saturating_sub(22)));
    }
    let more = if more > 0 { format!(" (+{more} more)") } else { String::new() };
    let n = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(k, part)| {
            let head = if k == 0 { format!("    {who:<22}") } else { " ".repeat(26) };
            let mut spans = vec![Span::styled(head, theme.bad()), Span::raw(part)];
            if k + 1 == n {
                spans.push(Span::styled(more.clone(), theme.dim()));
            }
            Line::from(spans)
        })
        .collect()
}

/// Lines a page key moves.
const PAGE: u16 = 10;

/// Nodes listed with their takeover errors (the logs screen has them all).
const MAX_NODES: usize = 6;

/// The takeover's error records grouped by the node they name, in order of first sight: (the node
/// as "uuid8 (nova_bm N)", its first error, how many more); records naming no node come last.
pub fn errors_by_node(logs: &Logs, progress: &Progress) -> Vec<(String, String, usize)> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    let mut add = |who: String, text: &str| match out.iter_mut().find(|(w, _, _)| *w == who) {
        Some(e) => e.2 += 1,
        None => out.push((who, text.to_string(), 0)),
    };
    for e in &logs.pinned {
        for uuid in &e.nodes {
            let id = progress.nodes.iter().find(|n| &n.uuid == uuid).map(|n| n.nova_bm_id);
            let who = match id {
                Some(id) => format!("{} (nova_bm {id})", short_uuid(Some(uuid))),
                None => short_uuid(Some(uuid)),
            };
            add(who, &e.text);
        }
    }
    for e in logs.pinned.iter().filter(|e| e.nodes.is_empty()) {
        add("(no node named)".into(), &e.text);
    }
    out
}

impl Page for Summary {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, progress, logs, phases, audit_log) = (cx.theme, cx.progress, cx.logs, &cx.phases, cx.audit_log);
        let mut lines = vec![Line::from("")];
        match &progress.finished {
            Some(Ok(f)) => {
                let o = &f.outcome;
                if let Some(s) = f.summary() {
                    lines.push(Line::from(Span::styled(
                        "    read  created  skipped  already  maintenance  ports  errors",
                        theme.key(),
                    )));
                    lines.push(Line::from(format!(
                        "  {:>6}  {:>7}  {:>7}  {:>7}  {:>11}  {:>5}  {:>6}",
                        s.read, s.created, s.skipped, s.already_migrated, s.maintenance, s.ports, s.errors,
                    )));
                    lines.push(Line::from(vec![
                        Span::styled("  Time           ", theme.dim()),
                        Span::raw(phases.line(!o.complete())),
                        Span::styled(format!("  (load start to end: {})", human_ms(s.elapsed_ms)), theme.dim()),
                    ]));
                    lines.push(Line::from(""));
                }
                // how it ended, in the core's words (the run report says the same)
                let style = match &o.ended {
                    Ended::Rehearsed => theme.warn(),
                    _ if o.failure().is_some() => theme.bad(),
                    _ => theme.good(),
                };
                let line = match (&o.ended, f.summary()) {
                    (Ended::Rehearsed, _) => {
                        "REHEARSAL: everything was written and rolled back. Nothing stayed.".to_string()
                    }
                    (Ended::Committed, Some(s)) => format!(
                        "Committed run {} (plan checksum {})",
                        s.run_id,
                        s.plan_checksum.chars().take(12).collect::<String>()
                    ),
                    _ => {
                        let l = o.line();
                        let mut c = l.chars();
                        c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
                    }
                };
                for l in wrap_words(&visible_line(&line), (area.width as usize).saturating_sub(4).max(20)) {
                    lines.push(Line::from(Span::styled(format!("  {l}"), style)));
                }
            }
            Some(Err(e)) => lines.push(Line::from(Span::styled(
                format!("  The load did not start (nothing was written): {}", visible_line(e)),
                theme.bad(),
            ))),
            None => lines.push(Line::from("  (no load ran)")),
        }
        match &self.verify {
            Some(Ok(v)) => lines.push(Line::from(Span::styled(format!("  verify: {v}"), theme.good()))),
            Some(Err(e)) => lines.push(Line::from(Span::styled(format!("  verify: {e}"), theme.bad()))),
            None => {}
        }
        if let Some(t) = &self.takeover {
            lines.extend(t.lines(theme));
        }
        lines.push(Line::from(""));
        if let Some(a) = audit_log {
            lines.push(Line::from(format!("  Audit log      {a}")));
        }
        if let Some(r) = &self.saved_to {
            lines.push(Line::from(format!("  Decisions      {r}")));
        }
        lines.push(Line::from(vec![
            Span::raw("  Run report     "),
            match &self.report {
                Some(p) => Span::raw(p.clone()),
                None => Span::styled("s writes it (Markdown, for the change ticket)", theme.dim()),
            },
        ]));
        let errors = logs.errors();
        lines.push(Line::from(vec![
            Span::raw("  Takeover log   "),
            if errors > 0 {
                Span::styled(format!("{errors} error record(s), by node (L: the logs)"), theme.bad())
            } else {
                Span::styled("no errors seen", theme.good())
            },
        ]));
        let by_node = errors_by_node(logs, progress);
        let width = area.width.saturating_sub(2 + 4 + 22) as usize;
        for (who, first, more) in by_node.iter().take(MAX_NODES) {
            lines.extend(error_lines(who, first, *more, width, theme));
        }
        if by_node.len() > MAX_NODES {
            lines
                .push(Line::from(format!("    … and {} more node(s): L shows every error", by_node.len() - MAX_NODES)));
        }
        lines.push(Line::from(""));
        let kept = self.checklist.as_deref().map(|p| format!(" (kept in {p})")).unwrap_or_default();
        lines.push(Line::from(Span::styled(format!("  Next steps{kept}"), theme.key())));
        lines.extend(next_step_lines(self.facts.as_ref(), theme, area.width.saturating_sub(2) as usize));
        let para = Paragraph::new(lines).wrap(Wrap { trim: false });
        let (shown, total) = (area.height.saturating_sub(2), para.line_count(area.width.saturating_sub(2)) as u16);
        self.max_scroll.set(total.saturating_sub(shown));
        let top = self.scroll.min(total.saturating_sub(shown));
        // where the window is, when the summary does not fit (an 80x24 console)
        let title = if total > shown {
            let more = if top + shown < total { " ↓ more" } else { "" };
            format!(" Summary: lines {}-{} of {total}{more} ", top + 1, (top + shown).min(total))
        } else {
            " Summary ".to_string()
        };
        f.render_widget(para.block(Block::bordered().title(title)).scroll((top, 0)), area);
    }

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Act>> {
        // scrolling is offered when the summary does not fit (the last drawing said so); saving
        // while decisions are unsaved (the next steps name the file it writes)
        let fits = self.max_scroll.get() == 0 && self.scroll == 0;
        let unsaved = cx.session.unsaved();
        TABLE
            .iter()
            .copied()
            .filter(|b| !fits || !std::ptr::eq(*b, &SCROLL))
            .filter(|b| unsaved || !std::ptr::eq(*b, &SAVE))
            .collect()
    }

    fn act(&mut self, act: Act, _cx: &Ctx) -> Vec<Out> {
        match act {
            Act::Logs => vec![Out::Go(Screen::Logs)],
            Act::Inventory => vec![Out::Go(Screen::Inventory)],
            Act::Report => vec![Out::Effect(Effect::WriteReport)],
            Act::Save => vec![Out::Effect(Effect::SaveResolutions)],
            Act::Up => {
                self.scroll = self.scroll.saturating_sub(1);
                vec![]
            }
            Act::Down => {
                self.scroll = self.scroll.saturating_add(1).min(self.max_scroll.get());
                vec![]
            }
            Act::PageUp => {
                self.scroll = self.scroll.saturating_sub(PAGE);
                vec![]
            }
            Act::PageDown => {
                self.scroll = self.scroll.saturating_add(PAGE).min(self.max_scroll.get());
                vec![]
            }
        }
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
