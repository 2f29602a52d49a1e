//! What every screen shares: the header (mode, source -> target, the steps), the key bar and the
//! help popup (both drawn from the screen's binding rows), the confirm popups, and small text helpers.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Clear, Paragraph};
use ratatui::Frame;

use super::keys::Row;
use super::screens::Screen;
use super::session::Mode;
use super::theme::Theme;
use crate::core::db::url::redact_url;

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

pub const SPINNER: [&str; 4] = ["|", "/", "-", "\\"];

pub fn spinner(tick: usize) -> &'static str {
    SPINNER[tick % 4]
}

/// Mode badge, source -> target, and the steps with the current one marked.
pub fn header(f: &mut Frame, area: Rect, theme: Theme, mode: Mode, screen: Screen, source: &str, target: &str) {
    let src = redact_url(source);
    let tgt = if mode == Mode::ReadOnly { "(read only)".to_string() } else { redact_url(target) };
    let w = area.width as usize;
    // the badge (up to ` REHEARSAL `), ` bm2ironic  ` and ` -> ` take 27 columns
    let budget = w.saturating_sub(28) / 2;
    let line1 = Line::from(vec![
        Span::styled(format!(" {} ", mode.label()), theme.mode(mode)),
        Span::raw(" bm2ironic  "),
        Span::styled(endpoint_label(&src, budget), theme.fg(Color::Cyan)),
        Span::raw(" -> "),
        Span::styled(endpoint_label(&tgt, budget), theme.fg(Color::Magenta)),
    ]);
    let mut steps: Vec<Span> = vec![Span::raw(" ")];
    let shown: Vec<Screen> = if mode == Mode::ReadOnly { vec![Screen::Inventory] } else { Screen::STEPS.to_vec() };
    let narrow = area.width < 100;
    for (i, s) in shown.iter().enumerate() {
        let current = *s == screen || (screen == Screen::Logs && *s == Screen::Progress);
        let text = if narrow && !current { format!("{}", i + 1) } else { format!("{} {}", i + 1, s.title()) };
        steps.push(if current {
            Span::styled(format!("[{text}]"), theme.key())
        } else {
            Span::styled(format!(" {text} "), theme.dim())
        });
        if i + 1 < shown.len() {
            steps.push(Span::styled(" > ", theme.dim()));
        }
    }
    f.render_widget(Paragraph::new(vec![line1, Line::from(steps)]), area);
}

/// A database for the header in at most `max` characters, the server always shown: the whole
/// (redacted) URL when it fits; else without its query, then as `host:port/database`, then with the
/// host cut from its start (the port and the database stay). A SQLite file: its name.
pub fn endpoint_label(url: &str, max: usize) -> String {
    if url.chars().count() <= max {
        return url.to_string();
    }
    let Ok(u) = crate::core::db::url::DbUrl::parse(url) else { return shorten(url, max) };
    if let Some(path) = &u.path {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let label = format!("sqlite …/{name}");
        return if label.chars().count() <= max { label } else { shorten(&name, max) };
    }
    let no_query = url.split_once('?').map(|(h, _)| h).unwrap_or(url);
    if no_query.chars().count() <= max {
        return no_query.to_string();
    }
    let db = u.database.as_deref().map(|d| format!("/{d}")).unwrap_or_default();
    let server = format!("{}{db}", u.endpoint());
    if server.chars().count() <= max {
        return server;
    }
    // the host cut from its start: `…example.org:3306/nova_bm`
    let keep = format!(":{}{db}", u.port);
    let room = max.saturating_sub(keep.chars().count() + 1);
    let host: Vec<char> = u.host.chars().collect();
    let tail: String = host[host.len().saturating_sub(room)..].iter().collect();
    format!("…{tail}{keep}")
}

/// Keeps the start (titles): "nova_bm: 36 nodes ... …".
pub fn clip(s: &str, max: usize) -> String {
    // escaped first (core/text.rs): ratatui drops a zero-width character silently, and `bm-compute-1`
    // followed by one must not look like `bm-compute-1`
    crate::core::text::clipped(s, max).into_owned()
}

/// Keeps the end (paths): "…/nova_bm.sqlite".
pub fn shorten(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return s.to_string();
    }
    let tail: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{tail}")
}

/// `text` broken into lines of at most `width` characters at spaces (a longer word gets a line of its own).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A value for a cell, `-` when there is none; escaped visibly (core/text.rs `visible_line`).
pub fn dash(v: Option<&str>) -> String {
    crate::core::text::visible_line(v.unwrap_or("-")).into_owned()
}

/// The first 8 characters of a uuid, escaped visibly.
pub fn short_uuid(v: Option<&str>) -> String {
    let head: Option<String> = v.map(|u| crate::core::text::visible_line(u).chars().take(8).collect());
    head.unwrap_or_else(|| "-".into())
}

/// The key bar's lines in `width` columns: one when every key the screen shows there fits, else
/// two (an 80x24 console kept `1-2 choose action`, `x`, `Tab`, `/ filter`, `s sort` off the bar).
pub fn bar_lines(rows: &[Row], width: usize) -> Vec<Vec<(&'static str, &'static str, bool)>> {
    let all = rows.iter().filter(|r| r.in_bar().is_some()).count();
    let one = bar_items(rows, width);
    if one.len() == all {
        return vec![one];
    }
    let cost = |(k, w, _): &(&str, &str, bool)| k.chars().count() + w.chars().count() + 3;
    let mut lines: Vec<Vec<(&'static str, &'static str, bool)>> = vec![vec![]];
    let mut used = 1;
    for item in bar_items(rows, 2 * width - 2) {
        if used + cost(&item) > width + 2 && !lines[0].is_empty() && lines.len() < 2 {
            lines.push(vec![]);
            used = 1;
        }
        used += cost(&item);
        lines.last_mut().expect("a line").push(item);
    }
    for l in &mut lines {
        if let Some(last) = l.last_mut() {
            last.2 = true;
        }
    }
    lines
}

/// The key bar: as many of the rows that show there as fit in its lines, `?` help always last.
pub fn key_bar(f: &mut Frame, area: Rect, theme: Theme, rows: &[Row]) {
    let lines: Vec<Line> = bar_lines(rows, area.width as usize)
        .into_iter()
        .take(area.height as usize)
        .map(|items| {
            let spans = items.into_iter().flat_map(|(k, what, last)| {
                [Span::styled(k, theme.key()), Span::raw(if last { format!(" {what}") } else { format!(" {what}  ") })]
            });
            Line::from([vec![Span::raw(" ")], spans.collect()].concat())
        })
        .collect();
    f.render_widget(Paragraph::new(lines), area);
}

/// What the key bar shows in `width` columns: help, back and quit always (at the end, help last),
/// then the keys that move the operator on (next, confirm, save), then the others in the screen's
/// order, as many as fit; the help lists every one. (key, words, last)
pub fn bar_items(rows: &[Row], width: usize) -> Vec<(&'static str, &'static str, bool)> {
    let shown: Vec<(&str, &str)> = rows.iter().filter_map(Row::in_bar).collect();
    let essential = |(_, w): &(&str, &str)| *w == "help" || *w == "back" || *w == "quit" || w.starts_with("quit");
    let onward = |(_, w): &(&str, &str)| ["next", "confirm", "save", "start", "go on"].iter().any(|x| w.contains(x));
    let cost = |(k, w): &(&str, &str)| k.chars().count() + w.chars().count() + 3;
    let mut used = 1 + shown.iter().filter(|i| essential(i)).map(cost).sum::<usize>();
    let mut keep = vec![false; shown.len()];
    let order = (0..shown.len()).filter(|&i| onward(&shown[i])).chain((0..shown.len()).filter(|&i| !onward(&shown[i])));
    for i in order {
        if essential(&shown[i]) {
            continue;
        }
        if used + cost(&shown[i]) <= width {
            used += cost(&shown[i]);
            keep[i] = true;
        }
    }
    let mut out: Vec<(&'static str, &'static str, bool)> =
        shown.iter().enumerate().filter(|(i, _)| keep[*i]).map(|(_, (k, w))| (*k, *w, false)).collect();
    let mut ends: Vec<(&str, &str)> = shown.iter().copied().filter(essential).collect();
    ends.sort_by_key(|(_, w)| *w == "help");
    out.extend(ends.into_iter().map(|(k, w)| (k, w, false)));
    if let Some(l) = out.last_mut() {
        l.2 = true;
    }
    out
}

/// The help popup: every row of the screen, then the rows that work everywhere (`trailer`).
pub fn help(f: &mut Frame, area: Rect, theme: Theme, title: &str, rows: &[Row], trailer: &[Row], legend: &[&str]) {
    let mut lines = vec![Line::from(Span::styled(format!("{title}: keys"), theme.key())), Line::from("")];
    let line = |r: &Row| Line::from(vec![Span::styled(format!("{:>12}  ", r.label), theme.key()), Span::raw(r.what)]);
    lines.extend(rows.iter().map(line));
    lines.push(Line::from(""));
    lines.extend(trailer.iter().map(line));
    if !legend.is_empty() {
        lines.push(Line::from(""));
        lines.extend(legend.iter().map(|l| Line::from(format!("  {l}"))));
    }
    lines.push(Line::from(Span::styled("any key closes this help", theme.dim())));
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = centered(area, 56, h);
    f.render_widget(Clear, r);
    f.render_widget(Paragraph::new(lines).block(Block::bordered().title(" Help ")), r);
}

/// A question over the screen (quit? cancel?).
pub fn popup(f: &mut Frame, area: Rect, theme: Theme, title: &str, lines: &[&str]) {
    let r = centered(area, 50, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    let text: Vec<Line> = lines.iter().map(|l| Line::from(*l)).collect();
    f.render_widget(
        Paragraph::new(text).block(Block::bordered().title(Span::styled(format!(" {title} "), theme.bad()))),
        r,
    );
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(area);
    let [r] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(r);
    r
}

/// The READ cell of node `id`: what its BMC said (on, off, silent, refused), `dup` when it is
/// another node's too, `-` when it was not read.
pub(crate) fn read_cell(f: &crate::core::bmc::BmcFacts, id: i64, theme: Theme) -> Cell<'static> {
    use crate::core::bmc::{Failure, Power};
    let (text, style) = match f.readings.get(&id) {
        _ if f.duplicates.contains_key(&id) => ("dup", theme.bad()),
        None => ("-", theme.dim()),
        Some(r) => match (r.power, r.failure) {
            (Some(Power::On), _) => ("on", Style::new()),
            (Some(Power::Off), _) => ("off", Style::new()),
            (None, Some(Failure::NoAnswer)) => ("silent", theme.warn()),
            (None, _) => ("refused", theme.warn()),
        },
    };
    Cell::from(Span::styled(text, style))
}

#[cfg(test)]
mod tests {
    use crate::tui::chrome::{bar_items, endpoint_label};

    /// At 80 columns the bar keeps help, back and quit, and what moves the operator on, before the rest.
    #[test]
    fn the_key_bar_keeps_help_back_and_quit() {
        use crate::tui::keys::{Bar, Row};
        let row = |label: &'static str, what: &'static str| Row { keys: vec![], label, what, bar: Bar::Yes };
        let rows = vec![
            row("↑/↓", "item"),
            row("Tab", "groups/items"),
            row("1-3", "choose action"),
            row("a", "apply to all of code"),
            row("x", "read all of it"),
            row("w", "save decisions"),
            row("n", "next: flavors"),
            row("Esc", "back"),
            row("q", "quit"),
            row("?", "help"),
        ];
        let items = bar_items(&rows, 80);
        let keys: Vec<&str> = items.iter().map(|(k, _, _)| *k).collect();
        for k in ["w", "n", "Esc", "q", "?"] {
            assert!(keys.contains(&k), "{k} kept at 80 columns: {keys:?}");
        }
        assert_eq!(keys.last(), Some(&"?"), "help last");
        let width: usize = 1 + items.iter().map(|(k, w, _)| k.chars().count() + w.chars().count() + 3).sum::<usize>();
        assert!(width <= 82, "{width}");
    }

    /// The server is always shown: the query goes first, then scheme and user, then the host's start.
    #[test]
    fn the_header_always_names_the_server() {
        let url = "mysql+pymysql://nova:***@db-primary.example.org:3306/nova_bm?charset=utf8&read_timeout=30";
        assert_eq!(endpoint_label(url, 200), url);
        assert_eq!(endpoint_label(url, 66), "mysql+pymysql://nova:***@db-primary.example.org:3306/nova_bm");
        assert_eq!(endpoint_label(url, 40), "db-primary.example.org:3306/nova_bm");
        assert_eq!(endpoint_label(url, 26), "….example.org:3306/nova_bm");
        assert_eq!(endpoint_label("sqlite:////var/lib/nova/nova_bm.sqlite", 26), "sqlite …/nova_bm.sqlite");
        let small = endpoint_label("postgresql://ironic:***@127.0.0.1:15432/ironic?sslmode=require", 26);
        assert_eq!(small, "127.0.0.1:15432/ironic");
    }
}
