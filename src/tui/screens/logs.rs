//! The logs: the followed Ironic conductor and nova-compute logs (the takeover), with their error
//! records one key away. Also drawn as a pane beside the progress. Error records are also kept
//! apart (pinned), with the node uuids they name, so they never scroll away. The state, `Logs`, is
//! in `tui/work.rs` (the progress and the summary read it too); this file holds its keys and its
//! drawing.

use ratatui::crossterm::event::KeyCode;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::{Ctx, DrawCtx, Out, Page};
use crate::tui::chrome::clip;
use crate::tui::keys::{ch, code, Bar, Binding};
use crate::tui::theme::Theme;
use crate::tui::work::{Level, LogLine, Logs};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Up,
    Down,
    Follow,
    NextError,
    PrevError,
    Back,
}

static SCROLL: Binding<Act> = Binding {
    keys: &[(code(KeyCode::Up), Act::Up), (code(KeyCode::Down), Act::Down), (ch('k'), Act::Up), (ch('j'), Act::Down)],
    label: "↑/↓ j/k",
    what: "scroll",
    bar: Bar::As("↑/↓", "scroll"),
};
static FOLLOW: Binding<Act> = Binding { keys: &[(ch('f'), Act::Follow)], label: "f", what: "follow", bar: Bar::Yes };
static ERRORS: Binding<Act> = Binding {
    keys: &[(ch('e'), Act::NextError), (ch('E'), Act::PrevError)],
    label: "e/E",
    what: "next/prev error",
    bar: Bar::Yes,
};
static BACK: Binding<Act> =
    Binding { keys: &[(code(KeyCode::Esc), Act::Back)], label: "Esc", what: "back", bar: Bar::Yes };
static TABLE: [&Binding<Act>; 4] = [&SCROLL, &FOLLOW, &ERRORS, &BACK];

impl Logs {
    /// The screen's title: the files followed.
    pub fn title(&self) -> String {
        format!("Logs ({})", self.files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
    }

    /// The lines in a bordered pane titled `title`: the logs screen, or the pane beside the progress.
    pub fn draw_pane(&self, f: &mut Frame, area: Rect, theme: Theme, title: &str) {
        let h = area.height.saturating_sub(2) as usize;
        let w = (area.width as usize).saturating_sub(2).max(10);
        let n = self.lines.len();
        let style = |l: &LogLine| match l.level {
            Level::Error => theme.bad(),
            Level::Warning => theme.warn(),
            Level::Info => Style::new(),
            Level::Debug => theme.dim(),
        };
        // long lines wrap (nothing is cut off); the window is counted in screen rows
        let rows_of = |l: &LogLine| -> Vec<Line> {
            let tag = format!("{:<7}", l.source.chars().take(6).collect::<String>());
            wrap_log(&l.compact(), w.saturating_sub(7).max(1))
                .into_iter()
                .enumerate()
                .map(|(k, part)| {
                    let head = if k == 0 { Span::styled(tag.clone(), theme.dim()) } else { Span::raw("       ") };
                    Line::from(vec![head, Span::styled(part, style(l))])
                })
                .collect()
        };
        let mut lines: Vec<Line> = Vec::new();
        if self.follow {
            for l in self.lines.iter().rev() {
                let mut r = rows_of(l);
                if lines.len() + r.len() > h {
                    break;
                }
                r.extend(lines);
                lines = r;
            }
        } else {
            for l in self.lines.iter().skip(self.scroll.min(n.saturating_sub(1))) {
                lines.extend(rows_of(l));
                if lines.len() >= h {
                    lines.truncate(h);
                    break;
                }
            }
        }
        let title =
            format!(" {title}: {} error(s), {} ", self.errors(), if self.follow { "following" } else { "paused" });
        let body = if lines.is_empty() {
            vec![Line::from(Span::styled("waiting for log lines…", theme.dim()))]
        } else {
            lines
        };
        f.render_widget(
            Paragraph::new(body).block(Block::bordered().title(clip(&title, area.width as usize - 2))),
            area,
        );
    }
}

impl Page for Logs {
    type Act = Act;

    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx) {
        self.draw_pane(f, area, cx.theme, &self.title())
    }

    fn table(&self, _cx: &Ctx) -> Vec<&'static Binding<Act>> {
        TABLE.to_vec()
    }

    fn act(&mut self, act: Act, cx: &Ctx) -> Vec<Out> {
        let n = self.lines.len();
        match act {
            Act::Back => return vec![Out::Go(cx.logs_back)],
            Act::Follow => self.follow = !self.follow,
            Act::Up => {
                if self.follow {
                    self.follow = false;
                    self.scroll = n.saturating_sub(1);
                }
                self.scroll = self.scroll.saturating_sub(1);
            }
            Act::Down => self.scroll = (self.scroll + 1).min(n.saturating_sub(1)),
            Act::NextError | Act::PrevError => {
                let from = if self.follow { n } else { self.scroll };
                let found = if act == Act::NextError {
                    (from + 1..n).chain(0..from.min(n)).find(|&i| self.is_error(i))
                } else {
                    (0..from.min(n)).rev().chain((from..n).rev()).find(|&i| self.is_error(i))
                };
                match found {
                    Some(i) => {
                        self.follow = false;
                        self.scroll = i;
                    }
                    None => return vec![Out::Toast("no error lines".into())],
                }
            }
        }
        vec![]
    }
}

/// A log line in rows of at most `width` characters, broken at spaces (it was broken anywhere, inside
/// a node's uuid); a word longer than a row is cut into rows of its own. At least one row.
fn wrap_log(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut rows = Vec::new();
    // a continuation line's indent (a traceback's) is kept
    let body = text.trim_start_matches(' ');
    let indent = (text.len() - body.len()).min(width / 2);
    let mut row = " ".repeat(indent);
    let mut len = indent;
    for (k, word) in body.split(' ').enumerate() {
        let chars: Vec<char> = word.chars().collect();
        if k > 0 && len > 0 && len + 1 + chars.len() > width {
            rows.push(std::mem::take(&mut row));
            len = 0;
        }
        if k > 0 && len > 0 {
            row.push(' ');
            len += 1;
        }
        let mut rest = &chars[..];
        while len + rest.len() > width {
            let take = width - len;
            row.extend(&rest[..take]);
            rows.push(std::mem::take(&mut row));
            len = 0;
            rest = &rest[take..];
        }
        row.extend(rest);
        len += rest.len();
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::screens::{fixture, Screen};
    use crate::tui::session::Mode;

    pub(crate) fn sample() -> Logs {
        let mut l = Logs { files: vec![("ironic".into(), "/var/log/ironic.log".into())], ..Default::default() };
        let line = |level, text: &str, starts_record| LogLine {
            source: "ironic".into(),
            level,
            text: text.into(),
            starts_record,
        };
        l.push(vec![
            line(Level::Info, "2024-01-01 12:00:00.000 42 INFO ironic.conductor.manager [-] Conductor up", true),
            line(
                Level::Error,
                "2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [req-1 demo] Failed to take over node n1",
                true,
            ),
            line(
                Level::Error,
                "2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager Traceback (most recent call last):",
                false,
            ),
            line(Level::Warning, "2024-01-01 12:00:02.000 42 WARNING ironic.conductor.manager [-] slow BMC", true),
        ]);
        l
    }

    #[test]
    fn errors_are_one_key_away() {
        let s = fixture::session(Mode::Rehearsal);
        let cx = fixture::ctx(&s);
        let mut l = sample();
        assert_eq!(l.errors(), 1);
        l.on_key(ch('e').event(), &cx);
        assert_eq!((l.follow, l.scroll), (false, 1));
        l.on_key(ch('j').event(), &cx);
        assert_eq!(l.scroll, 2);
        l.on_key(ch('E').event(), &cx);
        assert_eq!(l.scroll, 1);
        assert_eq!(l.on_key(code(KeyCode::Esc).event(), &cx), vec![Out::Go(Screen::Inventory)]);
        let mut empty = Logs::default();
        assert_eq!(empty.on_key(ch('e').event(), &cx), vec![Out::Toast("no error lines".into())]);
    }

    #[test]
    fn snapshot() {
        let l = sample();
        let s = fixture::session(Mode::Rehearsal);
        let text = fixture::draw(80, 8, &l, &fixture::draw_ctx(&s));
        insta::assert_snapshot!(text);
    }

    /// Rows break at spaces: a uuid is never split across two (it was, at any column); a word longer
    /// than a row still wraps; nothing of the line is lost.
    #[test]
    fn rows_break_between_words_not_inside_a_uuid() {
        let uuid = "346be6ad-aa67-5515-b341-18b5aeedc31e";
        let line = format!("ERROR Failed to take over node {uuid}: Failed to prepare to deploy: image not found");
        for width in 40..120 {
            let rows = wrap_log(&line, width);
            assert!(rows.iter().all(|r| r.chars().count() <= width), "{width}: {rows:?}");
            assert!(rows.iter().any(|r| r.contains(uuid)), "{width}: the uuid split: {rows:?}");
            assert_eq!(rows.join(" "), line, "{width}");
        }
        let long = "x".repeat(100);
        let rows = wrap_log(&long, 30);
        assert_eq!(rows.concat(), long);
        assert!(rows.iter().all(|r| r.chars().count() <= 30), "{rows:?}");
        assert_eq!(wrap_log("", 10), vec![String::new()]);
    }
}
