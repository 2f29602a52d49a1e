//! Step 5, confirm: what the load will do, the load path (SQL, or Ironic's REST API when an API is
//! given: Tab), and the go-ahead (LIVE wants the word `migrate` typed; outside tmux or screen it warns
//! that a dropped SSH session cancels and rolls the load back).

use ratatui::crossterm::event::{Event, KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use tui_input::backend::crossterm::EventHandler;
use tui_input::Input;

use super::{Ctx, DrawCtx, Out, Page, Screen};
use crate::core::db::url::redact_url;
use crate::tui::keys::{code, Bar, Binding};
use crate::tui::session::Mode;

#[derive(Debug, Clone, Default)]
pub struct Confirm {
    pub word: Input,
    /// the wizard runs inside tmux or screen (`$TMUX`, `$STY`): a dropped SSH session does not end it
    pub multiplexer: bool,
    /// load through Ironic's REST API (enroll, manage, adopt) instead of one SQL transaction
    pub via_api: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Start,
    Back,
    Path,
}

static TYPE_WORD: Binding<Act> = Binding { keys: &[], label: "type", what: "the word", bar: Bar::Yes };
static START: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Enter), Act::Start)], label: "Enter", what: "start", bar: Bar::Yes };
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };
static PATH: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Tab), Act::Path)], label: "Tab", what: "load path", bar: Bar::Yes };
static LIVE: [&Binding<Act>; 3] = [&TYPE_WORD, &START, &BACK];
static LIVE_API: [&Binding<Act>; 4] = [&TYPE_WORD, &PATH, &START, &BACK];
/// A rehearsal wants nothing typed: the bar said `type -`, and `?` did nothing
static REHEARSAL: [&Binding<Act>; 2] = [&START, &BACK];

/// The word a LIVE load wants typed.
pub const WORD: &str = "migrate";

impl Confirm {
    pub fn reset(&mut self) {
        self.word.reset();
    }

    /// The two lines on the load path: what it does and what it needs.
    fn path_lines(&self, api: bool) -> [String; 2] {
        if self.via_api {
            [
                "  Load path     Ironic's REST API: enroll, ports, manage, then adopt / provide, node by node".into(),
                "                needs the Ironic API (URL or cloud) and a running conductor; a failed node does not stop the others; a rerun resumes".into(),
            ]
        } else {
            [
                "  Load path     SQL, one transaction (all or nothing)".into(),
                if api {
                    "                needs only the Ironic database; Ironic stopped (Tab: through the API instead)"
                        .into()
                } else {
                    "                needs only the Ironic database; Ironic stopped".into()
                },
            ]
        }
    }
}

impl Page for Confirm {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        let (theme, session, target, api) = (cx.theme, cx.session, cx.target, cx.api_given);
        let [path, needs] = self.path_lines(api);
        let (create, skip, maint, ports) = session.plan_counts();
        let kind = session
            .prepared
            .as_ref()
            .map(|p| format!("{:?} Ironic (schema {})", p.target.schema.kind, p.target.schema.schema))
            .unwrap_or_default();
        let mut lines = vec![
            Line::from(""),
            Line::from(vec![Span::raw("  Target        "), Span::styled(redact_url(target), theme.fg(Color::Magenta))]),
            Line::from(format!("  Schema        {kind}")),
            Line::from(path),
            Line::from(Span::styled(needs, theme.dim())),
            Line::from(""),
            Line::from(format!("  Create        {}, {}", count(create, "node"), count(ports, "port"))),
            Line::from(format!("  Skip          {}", count(skip, "node"))),
            Line::from(format!("  Maintenance   {} (held, with a reason)", count(maint, "node"))),
            Line::from(""),
        ];
        for w in session.plan.as_ref().map(|p| p.warnings.clone()).unwrap_or_default() {
            lines.push(Line::from(Span::styled(format!("  warning: {w}"), theme.warn())));
        }
        lines.push(Line::from(""));
        match session.mode {
            Mode::Live => {
                let what = if self.via_api {
                    "creates the nodes through the Ironic API"
                } else {
                    "writes into the Ironic database"
                };
                lines.push(Line::from(Span::styled(format!("  LIVE: this {what}."), theme.bad())));
                if !self.multiplexer {
                    lines.push(Line::from(Span::styled(
                        "  ⚠ Not inside tmux or screen: if this SSH session drops, the load is cancelled and rolled back.",
                        theme.warn(),
                    )));
                    lines.push(Line::from(Span::styled(
                        "    Safer: quit (^Q), start tmux (or screen) on this host, and run bm2ironic in it.",
                        theme.warn(),
                    )));
                }
                lines.push(Line::from(vec![
                    Span::raw("  Type "),
                    Span::styled(WORD, theme.key()),
                    Span::raw(" and press Enter: "),
                    Span::styled(self.word.value().to_string(), theme.selected()),
                ]));
            }
            _ => {
                lines.push(Line::from(Span::styled(
                    "  REHEARSAL: everything is written, then rolled back. Nothing will stay.",
                    theme.warn(),
                )));
                lines.push(Line::from("  Press Enter to start the rehearsal."));
            }
        }
        f.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(" Ready ")).wrap(Wrap { trim: false }),
            area,
        );
    }

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Act>> {
        if cx.session.mode == Mode::Live && cx.api_given {
            LIVE_API.to_vec()
        } else if cx.session.mode == Mode::Live {
            LIVE.to_vec()
        } else {
            REHEARSAL.to_vec()
        }
    }

    fn act(&mut self, act: Act, cx: &Ctx) -> Vec<Out> {
        match act {
            Act::Path => {
                self.via_api = !self.via_api && cx.api_given;
                vec![]
            }
            Act::Back => vec![Out::Go(if cx.nova_given { Screen::Flavors } else { Screen::Conflicts })],
            Act::Start => {
                let rehearse = cx.session.mode != Mode::Live;
                if !rehearse && self.word.value().trim() != WORD {
                    return vec![Out::Toast(format!("type the word {WORD} to start the LIVE load"))];
                }
                vec![Out::StartLoad { rehearse }]
            }
        }
    }

    fn other(&mut self, key: KeyEvent, cx: &Ctx) -> Vec<Out> {
        // only the LIVE load wants a word typed
        if cx.session.mode == Mode::Live {
            self.word.handle_event(&Event::Key(key));
        }
        vec![]
    }
}

/// "1 node", "2 nodes" ("Skip 1 nodes" was on the screen).
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::keys::ch;
    use crate::tui::screens::fixture;

    #[test]
    fn live_wants_the_word() {
        let s = fixture::session(Mode::Live);
        let cx = fixture::ctx(&s);
        let mut c = Confirm::default();
        let out = c.on_key(code(KeyCode::Enter).event(), &cx);
        assert!(matches!(&out[..], [Out::Toast(_)]));
        for k in WORD.chars() {
            c.on_key(ch(k).event(), &cx);
        }
        assert_eq!(c.on_key(code(KeyCode::Enter).event(), &cx), vec![Out::StartLoad { rehearse: false }]);
        let r = fixture::session(Mode::Rehearsal);
        let out = Confirm::default().on_key(code(KeyCode::Enter).event(), &fixture::ctx(&r));
        assert_eq!(out, vec![Out::StartLoad { rehearse: true }]);
    }

    #[test]
    fn live_outside_tmux_or_screen_warns_about_a_dropped_session() {
        let s = fixture::session(Mode::Live);
        let cx = DrawCtx { target: "sqlite:///srv/ironic", ..fixture::draw_ctx(&s) };
        let render = |c: &Confirm| fixture::draw(110, 24, c, &cx);
        let warning = "if this SSH session drops, the load is cancelled and rolled back";
        assert!(render(&Confirm::default()).contains(warning));
        assert!(!render(&Confirm { multiplexer: true, ..Default::default() }).contains(warning));
        let r = fixture::session(Mode::Rehearsal);
        let text = fixture::draw(110, 24, &Confirm::default(), &DrawCtx { target: "x", ..fixture::draw_ctx(&r) });
        assert!(!text.contains(warning), "a rehearsal leaves nothing either way");
        assert!(!crate::tui::terminal::in_multiplexer_of(&|_| None));
        assert!(crate::tui::terminal::in_multiplexer_of(&|k| (k == "STY").then(|| "1234.pts-0.host".to_string())));
        assert!(!crate::tui::terminal::in_multiplexer_of(&|k| (k == "TMUX").then(String::new)));
    }

    #[test]
    fn the_api_load_path_is_offered_when_an_api_is_given() {
        let s = fixture::session(Mode::Live);
        let mut cx = fixture::ctx(&s);
        let mut c = Confirm::default();
        c.on_key(code(KeyCode::Tab).event(), &cx);
        assert!(!c.via_api, "no API given: SQL only");
        cx.api_given = true;
        assert!(c.table(&cx).iter().any(|b| b.label == "Tab"));
        c.on_key(code(KeyCode::Tab).event(), &cx);
        assert!(c.via_api);
        let text = fixture::draw(
            120,
            22,
            &c,
            &DrawCtx { target: "mysql://db/ironic", api_given: true, ..fixture::draw_ctx(&s) },
        );
        assert!(text.contains("Ironic's REST API: enroll, ports, manage, then adopt / provide"), "{text}");
        assert!(text.contains("LIVE: this creates the nodes through the Ironic API"), "{text}");
        c.on_key(code(KeyCode::Tab).event(), &cx);
        assert!(!c.via_api);
    }

    #[test]
    fn snapshot() {
        let s = fixture::session(Mode::Live);
        let c = Confirm { word: Input::new("migr".into()), multiplexer: false, via_api: false };
        let text = fixture::draw(100, 22, &c, &DrawCtx { target: "mysql://u:pw@db/ironic", ..fixture::draw_ctx(&s) });
        insta::assert_snapshot!(text);
    }

    /// One node is "1 node" (the screen said "Skip 1 nodes").
    #[test]
    fn one_node_is_one_node() {
        assert_eq!(
            (count(1, "node"), count(0, "node"), count(2, "port")),
            ("1 node".into(), "0 nodes".into(), "2 ports".into())
        );
        let mut s = fixture::session(Mode::Live);
        // one node skipped: the first conflict of a node that `skip` decides
        let skip_action = crate::core::migrate::conflict::Action::Skip;
        let (code, subject) = s
            .plan
            .as_ref()
            .unwrap()
            .conflicts
            .iter()
            .find(|c| c.code.actions().contains(&skip_action) && c.code.as_str() != "deleted-node")
            .map(|c| (c.code, c.subject.clone()))
            .unwrap();
        s.decide(code, Some(&subject), skip_action, false);
        s.replan(&fixture::options());
        let (_, skip, _, _) = s.plan_counts();
        assert_eq!(skip, 1, "one node skipped");
        let c = Confirm { word: Input::new(String::new()), multiplexer: true, via_api: false };
        let text = fixture::draw(100, 22, &c, &DrawCtx { target: "sqlite:///x", ..fixture::draw_ctx(&s) });
        assert!(text.contains(&format!("Skip          {}", count(skip, "node"))), "{text}");
        assert!(!text.contains(" 1 nodes"), "{text}");
    }
}
