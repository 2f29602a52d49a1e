//! Step 3, conflicts: the plan's conflicts grouped by code (undecided first); the operator picks an
//! action per item, or for every item of a code, and may save the decisions to replay them. Beside
//! the items, what each action does (`core::migrate::consequences`, the text `plan` prints too).

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::core::migrate::conflict::{Action, Conflict, ConflictCode, Subject};
use crate::core::migrate::consequences::{consequence, fix};
use crate::tui::chrome::{clip, wrap_words};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::session::Session;
use crate::tui::theme::Theme;

#[derive(Debug, Clone, Default)]
pub struct Conflicts {
    pub group: usize,
    pub item: usize,
    pub focus_items: bool,
    pub apply_all: bool,
    /// the consequences take the whole pane (`x`)
    pub explain: bool,
    /// the first line of the consequences shown (PgUp/PgDn)
    pub explain_scroll: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Down,
    Up,
    Focus,
    All,
    /// The n-th action of the code (0-based).
    Choose(u8),
    Undo,
    Save,
    Explain,
    ExplainDown,
    ExplainUp,
    Next,
    Back,
}

static MOVE: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Up), Act::Up), (code(KeyCode::Down), Act::Down), (ch('j'), Act::Down), (ch('k'), Act::Up)],
    label: "↑/↓ j/k",
    what: "item",
    bar: Bar::As("↑/↓", "item"),
};
static FOCUS: Binding<Act> = Binding {
    keys: &[
        (code(KeyCode::Tab), Act::Focus),
        (code(KeyCode::BackTab), Act::Focus),
        (code(KeyCode::Left), Act::Focus),
        (code(KeyCode::Right), Act::Focus),
    ],
    label: "Tab ←/→",
    what: "groups/items",
    bar: Bar::As("Tab", "groups/items"),
};
/// What a decision is about, in words.
fn about(s: &crate::core::migrate::conflict::Subject) -> String {
    use crate::core::migrate::conflict::Subject;
    match s {
        Subject::Node { nova_bm_id } => format!("nova_bm node {nova_bm_id}"),
        Subject::Interface { nova_bm_id, interface_id } => format!("node {nova_bm_id}'s interface {interface_id}"),
        Subject::Host { host } => format!("host {}", crate::core::text::visible_line(host)),
        Subject::Run => "the run".into(),
    }
}

/// The choose row as the bar shows it for a code of 1, 2, 3 or 4 actions (`1-3` for two was wrong).
macro_rules! choose {
    ($name:ident, $label:literal) => {
        static $name: Binding<Act> = Binding { bar: Bar::As($label, "choose action"), ..CHOOSE };
    };
}
choose!(CHOOSE_1, "1");
choose!(CHOOSE_2, "1-2");
choose!(CHOOSE_3, "1-3");
choose!(CHOOSE_4, "1-4");
static CHOOSE: Binding<Act> = Binding {
    keys: &[
        (ch('1'), Act::Choose(0)),
        (ch('2'), Act::Choose(1)),
        (ch('3'), Act::Choose(2)),
        (ch('4'), Act::Choose(3)),
        (ch('5'), Act::Choose(4)),
        (ch('6'), Act::Choose(5)),
        (ch('7'), Act::Choose(6)),
        (ch('8'), Act::Choose(7)),
        (ch('9'), Act::Choose(8)),
    ],
    label: "1-9",
    what: "choose action",
    bar: Bar::As("1-9", "choose action"),
};
static ALL: Binding<Act> = Binding {
    keys: &[(ch('a'), Act::All)],
    label: "a",
    what: "apply to all of code",
    bar: Bar::As("a", "all of code"),
};
static UNDO: Binding<Act> =
    Binding { keys: &[(ch('u'), Act::Undo)], label: "u", what: "undo the last decision", bar: Bar::As("u", "undo") };
static SAVE: Binding<Act> =
    Binding { keys: &[(ch('w'), Act::Save)], label: "w", what: "save decisions", bar: Bar::Yes };
static EXPLAIN: Binding<Act> = Binding {
    keys: &[(ch('x'), Act::Explain)],
    label: "x",
    what: "what the actions do: full pane / not",
    bar: Bar::As("x", "explain"),
};
static SCROLL_DOWN: Binding<Act> = Binding {
    keys: &[(code(KeyCode::PageDown), Act::ExplainDown)],
    label: "PgDn",
    what: "scroll what the actions do",
    bar: Bar::No,
};
static SCROLL: Binding<Act> = Binding {
    keys: &[(code(KeyCode::PageDown), Act::ExplainDown), (code(KeyCode::PageUp), Act::ExplainUp)],
    label: "PgDn/PgUp",
    what: "scroll what the actions do",
    bar: Bar::No,
};
/// `n` says where it goes: the flavors step when a Nova database is given, else the confirmation.
static NEXT: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Next), (ch('n'), Act::Next)],
    label: "Enter n",
    what: "next: flavors",
    bar: Bar::As("Enter", "next: flavors"),
};
static NEXT_CONFIRM: Binding<Act> = Binding { what: "next: confirm", bar: Bar::As("Enter", "next: confirm"), ..NEXT };
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };

impl Conflicts {
    /// After a decision and the new plan: stay on this code while it has undecided items, else go
    /// to the next undecided code.
    pub fn after_decide(&mut self, code: ConflictCode, item: usize, session: &Session) {
        // "apply to all" was for that code: the next one starts one item at a time
        self.apply_all = false;
        let groups = session.conflict_groups();
        let undecided = |idx: &Vec<usize>| {
            session.plan.as_ref().is_some_and(|p| idx.iter().any(|&i| p.conflicts[i].is_unresolved_blocking()))
        };
        match groups.iter().position(|(c, idx)| *c == code && undecided(idx)) {
            Some(pos) => {
                self.group = pos;
                self.item = item;
            }
            None => {
                self.group = groups.iter().position(|(_, idx)| undecided(idx)).unwrap_or(0);
                self.item = 0;
            }
        }
    }

    /// After a new plan: the selected group still exists.
    pub fn clamp(&mut self, session: &Session) {
        let groups = session.conflict_groups().len();
        if self.group >= groups {
            self.group = groups.saturating_sub(1);
        }
    }
}

/// The selected item's detail whole, when its line in the list cuts it ("task_state 'building':
/// the de…"): above what each action does, then a blank line.
fn whole_detail(selected: Option<&Conflict>, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let Some(c) = selected.filter(|c| c.detail.chars().count() + 3 > width) else { return vec![] };
    let whole = wrap_words(&crate::core::text::visible_line(&c.detail), width.saturating_sub(2));
    let lines = whole.into_iter().map(|l| Line::from(Span::styled(format!(" {l}"), theme.dim())));
    lines.chain([Line::from("")]).collect()
}

/// The consequences' placeholders filled with the selected item's values where they are known
/// (`'<state>'` with its task_state, `<uuid>` with its instance, `<values>` with what was impossible).
fn filled(text: &str, fill: &[(&str, String)]) -> String {
    fill.iter().fold(text.to_string(), |t, (k, v)| t.replace(k, v))
}

/// What each action of `code` does, wrapped to `width`; `decided` is marked.
pub fn explain_lines(code: ConflictCode, decided: Option<Action>, width: usize, theme: Theme) -> Vec<Line<'static>> {
    explain_filled(code, decided, width, theme, &[])
}

fn explain_filled(
    code: ConflictCode,
    decided: Option<Action>,
    width: usize,
    theme: Theme,
    fill: &[(&str, String)],
) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(""), Line::from(Span::styled("What each action does", theme.key()))];
    let part = |lines: &mut Vec<Line<'static>>, label: &'static str, text: &str| {
        let text = filled(text, fill);
        for (i, w) in wrap_words(&text, width.saturating_sub(4 + label.len())).into_iter().enumerate() {
            let lead = if i == 0 {
                Span::styled(format!("  {label} "), theme.dim())
            } else {
                Span::raw(" ".repeat(3 + label.len()))
            };
            lines.push(Line::from(vec![lead, Span::raw(w)]));
        }
    };
    for (i, a) in code.actions().iter().enumerate() {
        let Some(k) = consequence(code, *a) else { continue };
        let mut head = vec![Span::styled(format!("{} {a}", i + 1), theme.key())];
        if decided == Some(*a) {
            head.push(Span::styled("  ◀ decided", theme.good()));
        }
        lines.push(Line::from(head));
        part(&mut lines, "Ironic:", k.ironic);
        part(&mut lines, "Machine:", k.machine);
        part(&mut lines, "Afterwards:", k.afterwards);
    }
    if let Some(f) = fix(code) {
        part(&mut lines, "Fix:", f);
    }
    lines
}

/// The values the consequences' placeholders stand for, for conflict `c`.
fn placeholders(session: &Session, c: &crate::core::migrate::conflict::Conflict) -> Vec<(&'static str, String)> {
    let id = match &c.subject {
        Subject::Node { nova_bm_id } | Subject::Interface { nova_bm_id, .. } => Some(*nova_bm_id),
        _ => None,
    };
    let node = id.and_then(|id| {
        session.prepared.as_ref().and_then(|p| p.inventory.nodes.iter().find(|n| n.node.id == id).map(|n| &n.node))
    });
    let mut out = Vec::new();
    if let Some(n) = node {
        if let Some(s) = &n.task_state {
            out.push(("<state>", crate::core::text::visible_line(s).into_owned()));
        }
        if let Some(u) = &n.instance_uuid {
            out.push(("<uuid>", crate::core::text::visible_line(u).into_owned()));
        }
    }
    if let Some(v) = c.detail.strip_prefix("impossible values: ") {
        out.push(("<values>", crate::core::text::visible_line(v).into_owned()));
    }
    out
}

impl Page for Conflicts {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, session) = (cx.theme, cx.session);
        let Some(plan) = &session.plan else { return };
        let groups = session.conflict_groups();
        let [left, right] = Layout::horizontal([Constraint::Length(34), Constraint::Min(40)]).areas(area);
        self.draw_codes(f, left, plan, &groups, theme);

        let Some((code, idx)) = groups.get(self.group) else {
            f.render_widget(
                Paragraph::new("No conflicts: every node can go as planned.").block(Block::bordered()),
                right,
            );
            return;
        };
        let block = Block::bordered().title(format!(" {} of {} ", self.item + 1, idx.len()));
        let inner = block.inner(right);
        f.render_widget(block, right);
        let mut head = vec![Line::from(vec![
            Span::styled(code.as_str(), theme.key()),
            Span::raw(if code.blocking() { "  (blocking)" } else { "  (not blocking)" }),
        ])];
        let actions: Vec<Span> = if code.actions().is_empty() {
            vec![Span::styled("no action: fix the cause (below)", theme.warn())]
        } else {
            code.actions()
                .iter()
                .enumerate()
                .flat_map(|(i, a)| vec![Span::styled(format!("{}", i + 1), theme.key()), Span::raw(format!(" {a}   "))])
                .collect()
        };
        let mut l = vec![Span::raw("actions: ")];
        l.extend(actions);
        if self.apply_all {
            l.push(Span::styled("[applies to ALL]", theme.bad()));
        }
        head.push(Line::from(l));
        let selected = idx.get(self.item).map(|&ci| &plan.conflicts[ci]);
        let fill = selected.map(|c| placeholders(session, c)).unwrap_or_default();
        let explain = [
            whole_detail(selected, inner.width as usize, theme),
            explain_filled(*code, selected.and_then(|c| c.action), inner.width as usize, theme, &fill),
        ]
        .concat();
        // the items and, under them, what each action does (all of the pane with `x`)
        let body_h = inner.height.saturating_sub(head.len() as u16) as usize;
        let items_h =
            if self.explain { 0 } else { (idx.len() * 2).min(body_h.saturating_sub(explain.len()).max(4.min(body_h))) };
        let explain_h = body_h - items_h;
        let [head_area, items_area, explain_area] = Layout::vertical([
            Constraint::Length(head.len() as u16),
            Constraint::Length(items_h as u16),
            Constraint::Length(explain_h as u16),
        ])
        .areas(inner);
        f.render_widget(Paragraph::new(head), head_area);
        let visible = items_h / 2;
        let off = self.item.saturating_sub(visible.saturating_sub(1));
        let mut lines = Vec::new();
        for (j, &ci) in idx.iter().enumerate().skip(off).take(visible) {
            let c = &plan.conflicts[ci];
            let who = match &c.subject {
                Subject::Node { nova_bm_id } => format!("node {nova_bm_id}"),
                Subject::Interface { nova_bm_id, interface_id } => format!("node {nova_bm_id} if {interface_id}"),
                Subject::Host { host } => host.clone(),
                Subject::Run => "the run".into(),
            };
            let decision = match (c.action, c.decided_by) {
                (Some(a), Some(by)) => Span::styled(format!("{a} ({by})"), theme.good()),
                _ => Span::styled("UNDECIDED", theme.bad()),
            };
            let style = if j == self.item && self.focus_items { theme.selected() } else { Style::new() };
            lines.push(Line::from(vec![Span::styled(format!("{who:<16}"), style), Span::raw(" -> "), decision]));
            lines.push(Line::from(Span::styled(
                format!("   {}", clip(&c.detail, inner.width as usize - 3)),
                theme.dim(),
            )));
        }
        f.render_widget(Paragraph::new(lines), items_area);
        // the consequences scroll (PgDn/PgUp), and say where they are when they do not fit
        let total = explain.len();
        let top = self.explain_scroll.min(total.saturating_sub(explain_h.saturating_sub(1)));
        let mut shown: Vec<Line> = explain.into_iter().skip(top).take(explain_h).collect();
        if total > explain_h && explain_h > 0 {
            shown.truncate(explain_h.saturating_sub(1));
            let end = top + shown.len();
            let hint = if self.explain { "PgDn/PgUp" } else { "x, PgDn" };
            let mark = clip(&format!("… lines {}-{end} of {total}: {hint}", top + 1), inner.width as usize);
            shown.push(Line::from(Span::styled(mark, theme.warn())));
        }
        f.render_widget(Paragraph::new(shown), explain_area);
    }

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Act>> {
        let actions = cx.session.conflict_groups().get(self.group).map(|(c, _)| c.actions().len()).unwrap_or(0);
        let choose = match actions {
            1 => &CHOOSE_1,
            2 => &CHOOSE_2,
            3 => &CHOOSE_3,
            4 => &CHOOSE_4,
            _ => &CHOOSE,
        };
        let next = if cx.nova_given { &NEXT } else { &NEXT_CONFIRM };
        let scroll = if self.explain_scroll > 0 { &SCROLL } else { &SCROLL_DOWN };
        vec![&MOVE, &FOCUS, choose, &ALL, &UNDO, &SAVE, &EXPLAIN, scroll, next, &BACK]
    }

    fn act(&mut self, act: Act, cx: &Ctx) -> Vec<Out> {
        let groups = cx.session.conflict_groups();
        let Some(plan) = &cx.session.plan else { return vec![] };
        match act {
            Act::Focus => self.focus_items = !self.focus_items,
            Act::Down if self.focus_items => {
                let n = groups.get(self.group).map(|g| g.1.len()).unwrap_or(0);
                self.item = (self.item + 1).min(n.saturating_sub(1));
            }
            Act::Down => {
                self.group = (self.group + 1).min(groups.len().saturating_sub(1));
                (self.item, self.apply_all) = (0, false);
            }
            Act::Up if self.focus_items => self.item = self.item.saturating_sub(1),
            Act::Up => {
                self.group = self.group.saturating_sub(1);
                (self.item, self.apply_all) = (0, false);
            }
            Act::All => {
                self.apply_all = !self.apply_all;
                let code = groups.get(self.group).map(|(c, _)| c.as_str()).unwrap_or("-");
                // said, not only drawn: the next choice decides every item of the code
                return vec![Out::Toast(if self.apply_all {
                    format!("the next action chosen applies to EVERY {code} (a again: one item)")
                } else {
                    format!("the next action chosen applies to the selected {code} item only")
                })];
            }
            Act::Explain => {
                self.explain = !self.explain;
                self.explain_scroll = 0;
            }
            Act::ExplainDown => self.explain_scroll = (self.explain_scroll + 8).min(200),
            Act::ExplainUp => self.explain_scroll = self.explain_scroll.saturating_sub(8),
            Act::Choose(i) => return self.choose(i, &groups, plan),
            Act::Undo => return vec![Out::Undo],
            Act::Save => return vec![Out::Effect(Effect::SaveResolutions)],
            Act::Next => {
                let blocking = plan.blocking();
                if blocking > 0 {
                    return vec![Out::Toast(format!("{blocking} blocking conflict(s) remain: decide them first"))];
                } else if !cx.nova_given {
                    return vec![
                        Out::Toast(
                            "no Nova or Nova API database: the flavors step is skipped (bm2ironic flavors does it later)".into(),
                        ),
                        Out::Go(Screen::Confirm),
                    ];
                }
                let mut out = vec![Out::Go(Screen::Flavors)];
                if !cx.flavors_known {
                    out.push(Out::Effect(Effect::PlanFlavors));
                }
                return out;
            }
            Act::Back => return vec![Out::Go(Screen::Inventory)],
        }
        vec![]
    }
}

impl Conflicts {
    /// The list of codes: how many of each are open, the selected one marked.
    fn draw_codes(
        &self,
        f: &mut Frame,
        left: Rect,
        plan: &crate::core::migrate::plan::Plan,
        groups: &[(ConflictCode, Vec<usize>)],
        theme: Theme,
    ) {
        let blocking = plan.blocking();
        let title = if blocking > 0 { format!(" {blocking} blocking left ") } else { " all decided ".to_string() };
        let items: Vec<Line> = groups
            .iter()
            .enumerate()
            .map(|(i, (code, idx))| {
                let open = idx.iter().filter(|&&c| plan.conflicts[c].is_unresolved_blocking()).count();
                let mark = if open > 0 {
                    Span::styled(format!("{open:>3} "), theme.bad())
                } else {
                    Span::styled("  ✓ ", theme.good())
                };
                let style = if i == self.group && !self.focus_items {
                    theme.selected()
                } else if i == self.group {
                    theme.key()
                } else {
                    Style::new()
                };
                Line::from(vec![mark, Span::styled(format!("{:<24}{:>3}", code.as_str(), idx.len()), style)])
            })
            .collect();
        let title_style = if blocking > 0 { theme.bad() } else { theme.good() };
        f.render_widget(Paragraph::new(items).block(Block::bordered().title(Span::styled(title, title_style))), left);
    }

    /// `1`-`9`: the action of that number for the selected item (or, after `a`, every item of the
    /// code), said with what it changes; on the list of codes a digit decides nothing.
    fn choose(
        &self,
        i: u8,
        groups: &[(ConflictCode, Vec<usize>)],
        plan: &crate::core::migrate::plan::Plan,
    ) -> Vec<Out> {
        let Some((code, idx)) = groups.get(self.group) else { return vec![] };
        // a digit decides only where the items have focus: typed on the list of codes (a
        // search typed by habit, `find node 12`) it decides nothing
        if !self.focus_items && !self.apply_all {
            return vec![Out::Toast(format!(
                "nothing decided: Tab (or →) to the {code} items first, then {} chooses for the selected one ('a' first: for all)",
                if code.actions().len() > 1 { format!("1-{}", code.actions().len()) } else { "1".into() }
            ))];
        }
        let Some(action) = code.actions().get(i as usize).copied() else {
            return vec![Out::Toast(format!("{code} has {} action(s)", code.actions().len()))];
        };
        let subject = idx.get(self.item).map(|&ci| plan.conflicts[ci].subject.clone());
        let what = match (&subject, self.apply_all) {
            (_, true) => format!("every {code}"),
            (Some(s), false) => format!("{code} of {}", about(s)),
            (None, false) => code.to_string(),
        };
        vec![
            Out::Toast(format!("{what} -> {action} (key {}); u undoes", i + 1)),
            Out::Decide { code: *code, subject, action, all: self.apply_all },
        ]
    }
}

#[cfg(test)]
#[path = "conflicts_tests.rs"]
mod tests;
