//! Step 3, conflicts: the plan's conflicts grouped by code (undecided first); the operator picks an
//! action per item, or for every item of a code, and may save the decisions to replay them.

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::{Ctx, Out, Page, Screen};
use crate::core::migrate::conflict::{ConflictCode, Subject};
use crate::tui::app::Effect;
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::session::Session;
use crate::tui::theme::Theme;

#[derive(Debug, Clone, Default)]
pub struct Conflicts {
    pub group: usize,
    pub item: usize,
    pub focus_items: bool,
    pub apply_all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Down,
    Up,
    Focus,
    All,
    /// The n-th action of the code (0-based).
    Choose(u8),
    Save,
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
    bar: Bar::As("1-3", "choose action"),
};
static ALL: Binding<Act> =
    Binding { keys: &[(ch('a'), Act::All)], label: "a", what: "apply to all of code", bar: Bar::Yes };
static SAVE: Binding<Act> =
    Binding { keys: &[(ch('w'), Act::Save)], label: "w", what: "save decisions", bar: Bar::Yes };
static NEXT: Binding<Act> = Binding { keys: &[(ch('n'), Act::Next)], label: "n", what: "confirm", bar: Bar::Yes };
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };
static TABLE: [&Binding<Act>; 7] = [&MOVE, &FOCUS, &CHOOSE, &ALL, &SAVE, &NEXT, &BACK];

impl Conflicts {
    /// After a decision and the new plan: stay on this code while it has undecided items, else go
    /// to the next undecided code.
    pub fn after_decide(&mut self, code: ConflictCode, item: usize, session: &Session) {
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

    pub fn render(&self, f: &mut Frame, area: Rect, theme: Theme, session: &Session) {
        let Some(plan) = &session.plan else { return };
        let groups = session.conflict_groups();
        let [left, right] = Layout::horizontal([Constraint::Length(34), Constraint::Min(40)]).areas(area);
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

        let Some((code, idx)) = groups.get(self.group) else {
            f.render_widget(
                Paragraph::new("No conflicts: every node can go as planned.").block(Block::bordered()),
                right,
            );
            return;
        };
        let mut lines = vec![Line::from(vec![
            Span::styled(code.as_str(), theme.key()),
            Span::raw(if code.blocking() { "  (blocking)" } else { "  (not blocking)" }),
        ])];
        let actions: Vec<Span> = if code.actions().is_empty() {
            vec![Span::styled("no action: fix the cause (see the detail)", theme.warn())]
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
        lines.push(Line::from(l));
        lines.push(Line::from(""));
        let visible = right.height.saturating_sub(6) as usize / 2;
        let off = self.item.saturating_sub(visible.saturating_sub(1));
        for (j, &ci) in idx.iter().enumerate().skip(off).take(visible.max(1)) {
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
            lines.push(Line::from(Span::styled(format!("   {}", c.detail), theme.dim())));
        }
        f.render_widget(
            Paragraph::new(lines)
                .block(Block::bordered().title(format!(" {} of {} ", self.item + 1, idx.len())))
                .wrap(Wrap { trim: false }),
            right,
        );
    }
}

impl Page for Conflicts {
    type Act = Act;

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        TABLE.to_vec()
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
                self.item = 0;
            }
            Act::Up if self.focus_items => self.item = self.item.saturating_sub(1),
            Act::Up => {
                self.group = self.group.saturating_sub(1);
                self.item = 0;
            }
            Act::All => self.apply_all = !self.apply_all,
            Act::Choose(i) => {
                let Some((code, idx)) = groups.get(self.group) else { return vec![] };
                let Some(action) = code.actions().get(i as usize).copied() else {
                    return vec![Out::Toast(format!("{code} has {} action(s)", code.actions().len()))];
                };
                let subject = idx.get(self.item).map(|&ci| plan.conflicts[ci].subject.clone());
                let mut out = vec![];
                if self.apply_all {
                    out.push(Out::Toast(format!("{action} for every {code}")));
                }
                out.push(Out::Decide { code: *code, subject, action, all: self.apply_all });
                return out;
            }
            Act::Save => return vec![Out::Effect(Effect::SaveResolutions)],
            Act::Next => {
                let blocking = plan.blocking();
                if blocking > 0 {
                    return vec![Out::Toast(format!("{blocking} blocking conflict(s) remain: decide them first"))];
                } else if !cx.nova_given {
                    return vec![
                        Out::Toast(
                            "no Nova database: the flavors step is skipped (bm2ironic flavors does it later)".into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::screens::fixture;
    use crate::tui::session::Mode;

    #[test]
    fn moves_and_decides() {
        let s = fixture::session(Mode::Rehearsal);
        let cx = fixture::ctx(&s);
        let mut c = Conflicts::default();
        let groups = s.conflict_groups();
        assert!(groups.len() > 1, "the demo has several codes");
        c.on_key(ch('j').event(), &cx);
        assert_eq!(c.group, 1);
        c.on_key(code(KeyCode::Left).event(), &cx);
        assert!(c.focus_items);
        c.on_key(ch('k').event(), &cx);
        assert_eq!((c.group, c.item), (1, 0));
        let out = c.on_key(ch('1').event(), &cx);
        assert!(matches!(&out[..], [Out::Decide { all: false, subject: Some(_), .. }]), "{out:?}");
        c.on_key(ch('a').event(), &cx);
        let out = c.on_key(ch('1').event(), &cx);
        assert!(matches!(&out[..], [Out::Toast(_), Out::Decide { all: true, .. }]), "{out:?}");
        let out = c.on_key(ch('9').event(), &cx);
        assert!(matches!(&out[..], [Out::Toast(t)] if t.contains("action(s)")), "{out:?}");
        let out = c.on_key(ch('n').event(), &cx);
        assert!(matches!(&out[..], [Out::Toast(t)] if t.contains("blocking")), "{out:?}");
    }

    #[test]
    fn snapshot() {
        let s = fixture::session(Mode::Rehearsal);
        let c = Conflicts { focus_items: true, ..Default::default() };
        let text = fixture::render(100, 20, |f| c.render(f, f.area(), Theme { color: false }, &s));
        insta::assert_snapshot!(text);
    }
}
