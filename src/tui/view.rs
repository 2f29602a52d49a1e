//! Drawing: `view(&App, &mut Frame)` only reads the state. The header, the focused screen
//! (`App::draw_screen`: each screen draws itself through `Page::draw`, see `screens/`), the toast
//! or spinner line, the key bar, and the overlays (help, quit, cancel); the header, the key bar and
//! the overlays come from `chrome`.

use ratatui::layout::{Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::app::App;
use super::chrome::{self, spinner, MIN_HEIGHT, MIN_WIDTH};
use super::field::Field;
pub use super::theme::Theme;

pub fn view(app: &App, f: &mut Frame, theme: Theme) {
    draw(app, f, theme);
    guard_frame(f.buffer_mut());
}

/// The wizard's last net under the text discipline (core/text.rs): whatever a screen drew, no cell
/// reaches the terminal holding a control, bidirectional, zero-width or line-separator character (a
/// zero-width character rides on the cell before it, a control on its own); such a cell shows U+FFFD
/// instead, so `bm-compute-1` followed by a zero-width space never looks like `bm-compute-1`. The
/// screens escape values visibly where they show them (`visible_line`); this catches what they miss.
pub fn guard_frame(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        if crate::core::text::has_unsafe(cell.symbol()) {
            cell.set_symbol("\u{fffd}");
        }
    }
}

fn draw(app: &App, f: &mut Frame, theme: Theme) {
    let area = f.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = Paragraph::new(vec![
            Line::from("terminal too small"),
            Line::from(format!("{}x{} here, bm2ironic needs {MIN_WIDTH}x{MIN_HEIGHT}", area.width, area.height)),
        ])
        .wrap(Wrap { trim: true });
        f.render_widget(msg, area);
        return;
    }
    let (rows, last) = app.key_rows();
    let mut bar = rows.clone();
    bar.push(last.clone());
    let bar_h = chrome::bar_lines(&bar, area.width as usize).len() as u16;
    let [header, body, toast, keybar] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(10),
        Constraint::Length(1),
        Constraint::Length(bar_h),
    ])
    .areas(area);
    let (mode, tick) = (app.session.mode, app.status.spinner);
    let (source, target) = (app.connections.value(Field::NovaBmDb), app.connections.value(Field::IronicDb));
    chrome::header(f, header, theme, mode, app.screen, source, target);
    app.draw_screen(f, body, theme);
    if let Some(t) = &app.status.toast {
        // a long one wraps upwards over the body's last lines (it was cut: "... access denie")
        let t = crate::core::text::shown_line(t);
        let lines = chrome::wrap_words(&t, area.width.saturating_sub(2) as usize);
        let h = (lines.len() as u16).clamp(1, 4);
        let r = ratatui::layout::Rect::new(toast.x, toast.y + 1 - h, toast.width, h);
        let text: Vec<Line> =
            lines.into_iter().map(|l| Line::from(Span::styled(format!(" {l}"), theme.warn()))).collect();
        f.render_widget(ratatui::widgets::Clear, r);
        f.render_widget(Paragraph::new(text), r);
    } else if let Some(b) = &app.status.busy {
        f.render_widget(Paragraph::new(format!(" {} {b}…", spinner(tick))), toast);
    }
    chrome::key_bar(f, keybar, theme, &bar);
    if app.status.help {
        chrome::help(f, area, theme, app.screen.title(), &rows, &[last], &app.legend());
    }
    questions(app, f, area, theme);
}

/// The questions over the screen: quit?, the decisions file, cancel the load?
fn questions(app: &App, f: &mut Frame, area: ratatui::layout::Rect, theme: Theme) {
    if app.status.quit_asked && app.work_running() {
        chrome::popup(
            f,
            area,
            theme,
            "Quit?",
            &[
                "A load is running. Quit cancels it: the",
                "transaction is rolled back, nothing stays.",
                "",
                "y: cancel and quit    any other key: stay",
            ],
        );
    } else if app.status.quit_asked {
        let save = format!("w: save to {} and quit", chrome::shorten(&app.session.resolutions_path, 30));
        chrome::popup(
            f,
            area,
            theme,
            "Quit? Decisions not saved",
            &[
                "The decisions made here are not saved for",
                "`migrate --resolutions` (the journal keeps",
                "them for the next wizard).",
                "",
                &save,
                "y: quit without saving   other key: stay",
            ],
        );
    }
    if let Some((title, lines)) = app.decisions_file_question() {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        chrome::popup(f, area, theme, &title, &lines);
    }
    if app.progress.cancel_asked {
        chrome::popup(
            f,
            area,
            theme,
            "Cancel the load?",
            &[
                "The transaction is rolled back and the",
                "Ironic database stays as it was.",
                "",
                "y: cancel the load    n: keep going",
            ],
        );
    }
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::{Paragraph, Widget};

    #[test]
    fn no_cell_reaches_the_terminal_with_a_hidden_or_reordering_character() {
        let area = Rect::new(0, 0, 40, 4);
        let mut buf = Buffer::empty(area);
        let hostile = "bm-compute-1\u{200b} \u{202e}txe.exe\n\u{1b}]0;t\u{7} x\u{2028}y \u{feff}z\u{9b}";
        Paragraph::new(hostile).render(area, &mut buf);
        crate::tui::view::guard_frame(&mut buf);
        let text: String = buf.content.iter().map(|c| c.symbol()).collect();
        assert!(!crate::core::text::has_unsafe(&text.replace('\n', "")), "{text:?}");
        // ratatui itself drops zero-width characters and controls (so a screen must show them with
        // `visible_line`: dropped, `bm-compute-1` plus U+200B would look like the real host); what it
        // keeps (U+2028 takes a cell) is replaced here
        assert!(text.contains("x\u{fffd}y"), "{text:?}");
    }
}
