//! Step 4, flavors: the change the baremetal flavors need to schedule onto Ironic nodes, in the Nova
//! API database (modern Nova) or the Nova database (Juno/Kilo) (LIVE may apply it before the load; a
//! rehearsal only shows it). The planned change, `FlavorView` (a job's message), is in
//! `tui/work.rs`.

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::tui::chrome::{clip, spinner};
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::msg::Effect;
use crate::tui::session::Mode;
use crate::tui::work::FlavorView;

#[derive(Debug, Clone, Default)]
pub struct Flavors {
    /// None while the Nova flavors are read
    pub result: Option<Result<FlavorView, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Apply,
    Next,
    Back,
}

static APPLY: Binding<Act> =
    Binding { keys: &[(ch('a'), Act::Apply)], label: "a", what: "apply to Nova", bar: Bar::Yes };
static NEXT: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Enter), Act::Next), (ch('n'), Act::Next)],
    label: "Enter n",
    what: "next: confirm",
    bar: Bar::As("Enter", "next: confirm"),
};
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };
static LIVE: [&Binding<Act>; 3] = [&APPLY, &NEXT, &BACK];
static SHOW: [&Binding<Act>; 2] = [&NEXT, &BACK];

impl Flavors {
    /// The change was applied as change set `set`.
    pub fn applied(&mut self, set: &str) -> bool {
        match &mut self.result {
            Some(Ok(v)) => {
                v.applied = Some(set.to_string());
                true
            }
            _ => false,
        }
    }
}

impl Page for Flavors {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, mode, tick) = (cx.theme, cx.session.mode, cx.tick);
        let mut lines = vec![Line::from("")];
        match &self.result {
            None => lines.push(Line::from(format!("  {} reading the Nova flavors…", spinner(tick)))),
            Some(Err(e)) => {
                lines.push(Line::from(Span::styled(format!("  Cannot plan the flavor change: {e}"), theme.warn())));
                lines.push(Line::from("  Continue with n; do it later with `bm2ironic flavors`."));
            }
            Some(Ok(v)) => {
                if !v.source.is_empty() {
                    lines.push(Line::from(Span::styled(format!("  Flavors in the {}", v.source), theme.dim())));
                }
                lines.push(Line::from(format!("  {}", v.what)));
                lines.push(Line::from(""));
                if v.changes.is_empty() {
                    lines.push(Line::from(Span::styled("  The baremetal flavors need no change.", theme.good())));
                } else {
                    let new_w = (area.width as usize).saturating_sub(2 + 2 + 14 + 1 + 30 + 1 + 16 + 1).max(8);
                    lines.push(Line::from(Span::styled(
                        format!("  {:<14} {:<30} {:<16} {}", "FLAVOR", "KEY", "OLD", "NEW"),
                        theme.key(),
                    )));
                    for c in &v.changes {
                        lines.push(Line::from(format!(
                            "  {:<14} {:<30} {:<16} {}",
                            clip(&c.flavor, 14),
                            clip(&c.key, 30),
                            clip(c.old.as_deref().unwrap_or("(added)"), 16),
                            clip(&c.new, new_w)
                        )));
                    }
                }
                lines.push(Line::from(""));
                let status = match (&v.applied, mode) {
                    (Some(set), _) => Span::styled(
                        format!("  Applied as change set {set} (undo: bm2ironic flavors --restore)."),
                        theme.good(),
                    ),
                    (None, Mode::Live) if !v.changes.is_empty() => Span::styled(
                        "  A applies this to the Nova DB in one transaction (before the load); n goes on without it.",
                        theme.warn(),
                    ),
                    (None, Mode::Live) => Span::raw(""),
                    (None, _) => Span::styled("  REHEARSAL: shown only, nothing is changed in Nova.", theme.warn()),
                };
                lines.push(Line::from(status));
            }
        }
        f.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" Flavors (Nova) ")).wrap(Wrap { trim: false }),
            area,
        );
    }

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if cx.session.mode == Mode::Live {
            LIVE.to_vec()
        } else {
            SHOW.to_vec()
        }
    }

    fn act(&mut self, act: Act, _cx: &Ctx) -> Vec<Out> {
        match act {
            Act::Next => vec![Out::Go(Screen::Confirm)],
            Act::Back => vec![Out::Go(Screen::Conflicts)],
            Act::Apply => match &self.result {
                Some(Ok(v)) if v.applied.is_none() && !v.changes.is_empty() => vec![Out::Effect(Effect::ApplyFlavors)],
                _ => vec![Out::Toast("nothing to apply".into())],
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::migrate::flavors::SpecChange;
    use crate::tui::screens::fixture;

    fn view() -> FlavorView {
        FlavorView {
            schema: "Modern".into(),
            source: "Nova API database: mysql://nova:***@db/nova_api".into(),
            what: "modern Nova schedules bare metal by resource class CUSTOM_BAREMETAL".into(),
            changes: vec![SpecChange {
                flavor_id: 3,
                flavor: "bm.large".into(),
                key: "resources:CUSTOM_BAREMETAL".into(),
                old: None,
                new: "1".into(),
            }],
            applied: None,
        }
    }

    #[test]
    fn apply_only_in_live_and_only_once() {
        let live = fixture::session(Mode::Live);
        let rehearsal = fixture::session(Mode::Rehearsal);
        let mut f = Flavors { result: Some(Ok(view())) };
        assert!(f.on_key(ch('A').event(), &fixture::ctx(&rehearsal)).is_empty());
        assert_eq!(f.on_key(ch('A').event(), &fixture::ctx(&live)), vec![Out::Effect(Effect::ApplyFlavors)]);
        assert!(f.applied("set-1"));
        assert_eq!(f.on_key(ch('A').event(), &fixture::ctx(&live)), vec![Out::Toast("nothing to apply".into())]);
        assert_eq!(f.on_key(code(KeyCode::Enter).event(), &fixture::ctx(&live)), vec![Out::Go(Screen::Confirm)]);
    }

    #[test]
    fn snapshot() {
        let f = Flavors { result: Some(Ok(view())) };
        let s = fixture::session(Mode::Live);
        let text = fixture::draw(100, 10, &f, &fixture::draw_ctx(&s));
        insta::assert_snapshot!(text);
    }
}
