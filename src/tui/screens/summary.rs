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
use crate::core::migrate::timing::human_ms;
use crate::core::text::visible_line;
use crate::tui::chrome::{clip, short_uuid, wrap_words};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::theme::Theme;
use crate::tui::views::{Logs, Progress};
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
static TABLE: [&Binding<Act>; 4] = [&REPORT, &LOGS, &INVENTORY, &SCROLL];

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
            for (j, l) in wrap_words(&visible_line(c), width.saturating_sub(8)).into_iter().enumerate() {
                lines.push(Line::from(Span::styled(
                    format!("{}{l}", " ".repeat(if j == 0 { 6 } else { 8 })),
                    theme.key(),
                )));
            }
        }
    }
    lines
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
            Some(Ok(s)) => {
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
                    Span::raw(phases.line(!s.committed)),
                    Span::styled(format!("  (load start to end: {})", human_ms(s.elapsed_ms)), theme.dim()),
                ]));
                lines.push(Line::from(""));
                if s.rehearse {
                    lines.push(Line::from(Span::styled(
                        "  REHEARSAL: everything was written and rolled back. Nothing stayed.",
                        theme.warn(),
                    )));
                } else if s.committed {
                    lines.push(Line::from(Span::styled(
                        format!(
                            "  Committed run {} (plan checksum {})",
                            s.run_id,
                            s.plan_checksum.chars().take(12).collect::<String>()
                        ),
                        theme.good(),
                    )));
                }
            }
            Some(Err(e)) => {
                lines.push(Line::from(Span::styled(format!("  The load failed and was rolled back: {e}"), theme.bad())))
            }
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
            let more = if *more > 0 { format!(" (+{more} more)") } else { String::new() };
            lines.push(Line::from(vec![
                Span::styled(format!("    {who:<22}"), theme.bad()),
                Span::raw(clip(first, width.saturating_sub(more.len()))),
                Span::styled(more, theme.dim()),
            ]));
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

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        // scrolling is offered when the summary does not fit (the last drawing said so)
        let fits = self.max_scroll.get() == 0 && self.scroll == 0;
        TABLE.iter().copied().filter(|b| !fits || !std::ptr::eq(*b, &SCROLL)).collect()
    }

    fn act(&mut self, act: Act, _cx: &Ctx) -> Vec<Out> {
        match act {
            Act::Logs => vec![Out::Go(Screen::Logs)],
            Act::Inventory => vec![Out::Go(Screen::Inventory)],
            Act::Report => vec![Out::Effect(Effect::WriteReport)],
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
mod tests {
    use super::*;
    use crate::core::migrate::load::LoadSummary;
    use crate::core::migrate::timing::Phases;
    use crate::tui::screens::fixture;
    use crate::tui::session::Mode;

    #[test]
    fn keys_go_to_logs_and_inventory() {
        let s = fixture::session(Mode::Rehearsal);
        let cx = fixture::ctx(&s);
        let mut sum = Summary::default();
        assert_eq!(sum.on_key(ch('L').event(), &cx), vec![Out::Go(Screen::Logs)]);
        assert_eq!(sum.on_key(ch('i').event(), &cx), vec![Out::Go(Screen::Inventory)]);
        assert_eq!(sum.on_key(ch('s').event(), &cx), vec![Out::Effect(Effect::WriteReport)]);
        assert!(sum.on_key(ch('x').event(), &cx).is_empty());
    }

    #[test]
    fn snapshot() {
        let mut p = Progress::default();
        p.finish(Ok(LoadSummary {
            run_id: "run-1".into(),
            rehearse: false,
            committed: true,
            read: 36,
            created: 35,
            skipped: 1,
            already_migrated: 0,
            maintenance: 3,
            ports: 58,
            errors: 0,
            elapsed_ms: 1521.0,
            load_ms: 1480.5,
            commit_ms: 40.6,
            plan_checksum: "0123456789abcdef".into(),
            started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
            finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 2).unwrap(),
        }));
        p.nodes.push_back(crate::tui::views::NodeProgress {
            nova_bm_id: 7,
            uuid: "aaaaaaaa-0000-4000-8000-000000000007".into(),
            status: crate::tui::views::RowStatus::Done,
        });
        let sum = Summary {
            verify: Some(Ok("35 nodes, 58 ports: no differences".into())),
            takeover: None,
            verify_ms: Some(230.0),
            saved_to: Some("/srv/bm2ironic-resolutions.toml".into()),
            report: None,
            ..Default::default()
        };
        let mut logs = Logs::default();
        let line = |text: &str| crate::core::logs::follow::LogLine {
            source: "ironic".into(),
            level: crate::tui::views::Level::Error,
            text: text.into(),
            starts_record: true,
        };
        logs.push(vec![
            line("2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [req-1] Failed to take over node aaaaaaaa-0000-4000-8000-000000000007: no image"),
            line("2024-01-01 12:00:02.000 42 ERROR ironic.conductor.manager [req-2] Node aaaaaaaa-0000-4000-8000-000000000007 power state unknown"),
            line("2024-01-01 12:00:03.000 42 ERROR ironic.conductor.manager [-] conductor lost its database"),
        ]);
        let phases = Phases {
            read_ms: Some(12.25),
            plan_ms: Some(3.1),
            load_ms: Some(1480.5),
            commit_ms: Some(40.6),
            verify_ms: Some(230.0),
        };
        let s = fixture::session(Mode::Live);
        let cx = DrawCtx {
            progress: &p,
            logs: &logs,
            phases,
            audit_log: Some("/var/log/bm2ironic"),
            ..fixture::draw_ctx(&s)
        };
        let text = fixture::draw(100, 26, &sum, &cx);
        assert!(text.contains("read 12 ms · plan 3.1 ms · load 1.48 s · commit 41 ms · verify 230 ms"), "{text}");
        assert!(text.contains("aaaaaaaa (nova_bm 7)") && text.contains("(+1 more)"), "{text}");
        insta::assert_snapshot!(text);
    }

    fn finished(rehearse: bool) -> Progress {
        let mut p = Progress::default();
        p.finish(Ok(LoadSummary {
            run_id: "6f1c2a9e-run".into(),
            rehearse,
            committed: !rehearse,
            read: 36,
            created: 35,
            skipped: 1,
            already_migrated: 0,
            maintenance: 3,
            ports: 58,
            errors: 0,
            elapsed_ms: 1521.0,
            load_ms: 1480.5,
            commit_ms: 40.6,
            plan_checksum: "0123456789abcdef".into(),
            started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
            finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 2).unwrap(),
        }));
        p
    }

    /// The next steps follow the run: a rehearsal says nothing stayed and how to load for real, a
    /// live Juno run names its run id, the hosts move first and juno-boot, a modern one neither
    /// ClusteredComputeManager nor juno-boot; at 80x24 the summary scrolls and says where it is.
    #[test]
    fn next_steps_follow_the_run_at_80x24_and_120x36() {
        use crate::core::ironic::target::TargetKind;
        use crate::core::migrate::next_steps::Flavors;
        let cases = [
            ("rehearsal", true, TargetKind::Juno, Flavors::Pending),
            ("live_juno", false, TargetKind::Juno, Flavors::Applied("cs-42".into())),
            ("live_modern", false, TargetKind::Modern, Flavors::Pending),
        ];
        for (name, rehearse, kind, flavors) in cases {
            let p = finished(rehearse);
            let facts = RunFacts {
                kind: Some(kind),
                rehearsal: rehearse,
                committed: !rehearse,
                run_id: Some("6f1c2a9e-run".into()),
                resolutions: Some("/srv/decisions.toml".into()),
                flavors,
                instances: 11,
                ironic_url: Some("http://ironic-api:6385".into()),
                conductor_log: Some("/var/log/ironic/ironic-conductor.log".into()),
                ..Default::default()
            };
            let sum =
                Summary { facts: Some(facts), saved_to: Some("/srv/decisions.toml".into()), ..Default::default() };
            let s = fixture::session(if rehearse { Mode::Rehearsal } else { Mode::Live });
            let cx = DrawCtx { progress: &p, audit_log: Some("/var/log/bm2ironic"), ..fixture::draw_ctx(&s) };
            let big = fixture::draw(120, 36, &sum, &cx);
            let small = fixture::draw(80, 22, &sum, &cx);
            match name {
                "rehearsal" => {
                    assert!(
                        big.contains("Nothing stayed") && big.contains("--resolutions /srv/decisions.toml"),
                        "{big}"
                    );
                    assert!(!big.contains("rollback") && !big.contains("Start ironic"), "{big}");
                }
                "live_juno" => {
                    assert!(big.contains("rollback --run 6f1c2a9e-run") || small.contains("Summary: lines"), "{big}");
                    assert!(big.contains("juno-boot") && big.contains("11 instance(s)"), "{big}");
                    assert!(big.contains("✓ Flavors changed (change set cs-42)"), "{big}");
                }
                _ => assert!(!big.contains("juno-boot") && !big.contains("ClusteredComputeManager"), "{big}"),
            }
            if !rehearse {
                assert!(small.contains("Summary: lines 1-20 of"), "80 columns scroll, with a mark: {small}");
            }
            insta::assert_snapshot!(format!("next_steps_{name}_120x36"), big);
            insta::assert_snapshot!(format!("next_steps_{name}_80x24"), small);
        }
        // scrolling moves the window, never past the end
        let p = finished(false);
        let facts = RunFacts { kind: Some(TargetKind::Juno), committed: true, instances: 3, ..Default::default() };
        let mut sum = Summary { facts: Some(facts), ..Default::default() };
        let s = fixture::session(Mode::Live);
        let cx = DrawCtx { progress: &p, ..fixture::draw_ctx(&s) };
        let _ = fixture::draw(80, 22, &sum, &cx);
        let ctx = fixture::ctx(&s);
        for _ in 0..100 {
            sum.on_key(code(KeyCode::PageDown).event(), &ctx);
        }
        let bottom = fixture::draw(80, 22, &sum, &cx);
        assert!(bottom.contains("rollback --run RUN") && !bottom.contains("↓ more"), "{bottom}");
    }

    #[test]
    fn the_takeover_line_follows_the_check() {
        use std::time::Duration;
        let (a, b) = ("bbbbbbbb-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000004");
        let mut t = TakeoverView::default();
        t.on_event(TakeoverEvent::Started { nodes: 2, timeout: Duration::from_secs(300) });
        assert_eq!((t.counts.waiting, t.counts.timeout), (2, Duration::from_secs(300)));
        let node = |uuid: &str, state, reason: Option<&str>| TakeoverEvent::Node {
            uuid: uuid.into(),
            state,
            reason: reason.map(String::from),
            elapsed: Duration::from_secs(3),
        };
        t.on_event(node(b, TakeoverState::Failed, Some("bmc-error: IPMI Error encountered, retrying")));
        t.on_event(node(a, TakeoverState::Ok, None));
        let c = Counts {
            taken_over: 1,
            failing: 1,
            elapsed: Duration::from_secs(4),
            timeout: Duration::from_secs(300),
            ..Counts::default()
        };
        t.on_event(TakeoverEvent::Progress(c));
        assert_eq!(t.failing, vec![(b.to_string(), "bmc-error: IPMI Error encountered, retrying".to_string())]);
        let mut p = Progress::default();
        p.finish(Ok(LoadSummary {
            run_id: "run-1".into(),
            rehearse: false,
            committed: true,
            read: 2,
            created: 2,
            skipped: 0,
            already_migrated: 0,
            maintenance: 0,
            ports: 4,
            errors: 0,
            elapsed_ms: 900.0,
            load_ms: 880.0,
            commit_ms: 20.0,
            plan_checksum: "0123456789abcdef".into(),
            started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
            finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 1).unwrap(),
        }));
        let sum = Summary {
            verify: Some(Ok("2 nodes, 4 ports: no differences".into())),
            takeover: Some(t.clone()),
            verify_ms: None,
            saved_to: None,
            report: None,
            ..Default::default()
        };
        let s = fixture::session(Mode::Live);
        let cx = DrawCtx { progress: &p, ..fixture::draw_ctx(&s) };
        let draw = |sum: &Summary| fixture::draw(100, 20, sum, &cx);
        let running = draw(&sum);
        assert!(
            running.contains("Takeover       1 taken over, 0 waiting, 1 failing - 0:04 elapsed, deadline 5:00"),
            "{running}"
        );
        assert!(running.contains("failing bbbbbbbb-0000-4000-8000-000000000004: bmc-error: IPMI Error"), "{running}");
        // a node that recovers leaves the failing list
        t.on_event(node(b, TakeoverState::Ok, None));
        assert!(t.failing.is_empty());
        let mut ended = sum.clone();
        ended.takeover.as_mut().unwrap().ended = Some(Ok(Ending::AllDecided));
        insta::assert_snapshot!(draw(&ended));
    }
}
