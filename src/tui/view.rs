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
    let [header, body, toast, keybar] =
        Layout::vertical([Constraint::Length(2), Constraint::Min(10), Constraint::Length(1), Constraint::Length(1)])
            .areas(area);
    let (mode, tick) = (app.session.mode, app.status.spinner);
    let (source, target) = (app.connections.value(Field::NovaBmDb), app.connections.value(Field::IronicDb));
    chrome::header(f, header, theme, mode, app.screen, source, target);
    app.draw_screen(f, body, theme);
    if let Some(t) = &app.status.toast {
        f.render_widget(Paragraph::new(Line::from(Span::styled(format!(" {t}"), theme.warn()))), toast);
    } else if let Some(b) = &app.status.busy {
        f.render_widget(Paragraph::new(format!(" {} {b}…", spinner(tick))), toast);
    }
    let (rows, last) = app.key_rows();
    let mut bar = rows.clone();
    bar.push(last.clone());
    chrome::key_bar(f, keybar, theme, &bar);
    if app.status.help {
        chrome::help(f, area, theme, app.screen.title(), &rows, &[last]);
    }
    if app.status.quit_asked {
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
