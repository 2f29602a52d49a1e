//! The keys that work on every screen (quit, help), as binding tables like the screens' own, so
//! the key bar and the help popup list them too.

use ratatui::crossterm::event::KeyCode;

use super::keys::{ch, code, Bar, Binding, Key};

/// The keys that work on every screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    Quit,
    Help,
}

pub static QUIT: Binding<Global> =
    Binding { keys: &[(ch('q'), Global::Quit)], label: "q", what: "quit", bar: Bar::Yes };
pub static QUIT_UNSHOWN: Binding<Global> =
    Binding { keys: &[(ch('q'), Global::Quit)], label: "q", what: "quit", bar: Bar::No };
pub static HELP: Binding<Global> = Binding {
    keys: &[(ch('?'), Global::Help), (code(KeyCode::F(1)), Global::Help)],
    label: "? F1",
    what: "help",
    bar: Bar::As("?", "help"),
};
/// On screens where `?` and `q` are typed into a field.
pub static HELP_F1: Binding<Global> =
    Binding { keys: &[(code(KeyCode::F(1)), Global::Help)], label: "F1", what: "help", bar: Bar::Yes };
pub static CTRL_QUIT: Binding<Global> = Binding {
    keys: &[(Key::Ctrl('c'), Global::Quit), (Key::Ctrl('q'), Global::Quit)],
    label: "^C ^Q",
    what: "quit (asks while a load runs)",
    bar: Bar::No,
};
pub static CTRL_QUIT_SHOWN: Binding<Global> = Binding {
    keys: &[(Key::Ctrl('c'), Global::Quit), (Key::Ctrl('q'), Global::Quit)],
    label: "^C ^Q",
    what: "quit (asks while a load runs)",
    bar: Bar::As("^Q", "quit"),
};
