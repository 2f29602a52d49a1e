//! The wizard's colours, in one place: every screen asks the theme for a role (good, bad, key, ...),
//! never for a colour; under NO_COLOR the roles become bold, dim and reversed text.

use ratatui::style::{Color, Modifier, Style};

use super::session::Mode;

/// Colours, or none at all under NO_COLOR.
#[derive(Clone, Copy)]
pub struct Theme {
    pub color: bool,
}

impl Theme {
    pub fn from_env() -> Theme {
        Theme { color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) }
    }
    pub fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    pub fn mode(&self, m: Mode) -> Style {
        let base = Style::new().add_modifier(Modifier::BOLD);
        if !self.color {
            return base.add_modifier(Modifier::REVERSED);
        }
        match m {
            Mode::Live => base.fg(Color::White).bg(Color::Red),
            Mode::Rehearsal => base.fg(Color::Black).bg(Color::Yellow),
            Mode::ReadOnly => base.fg(Color::Black).bg(Color::Cyan),
        }
    }
    pub fn selected(&self) -> Style {
        if self.color {
            Style::new().bg(Color::DarkGray).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }
    pub fn bad(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    pub fn good(&self) -> Style {
        self.fg(Color::Green)
    }
    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }
    pub fn key(&self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }
}
