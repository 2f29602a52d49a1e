//! Key bindings as data. A screen's table is the only place its keys are matched, and the key bar
//! and the help popup are drawn from the same rows: what the operator reads is what the keys do.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key press a binding answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// The key without Ctrl (Shift and Alt as they come: `G` arrives as Shift+G).
    Code(KeyCode),
    /// Ctrl and the letter.
    Ctrl(char),
}

impl Key {
    /// The key pressed is this one, or a letter of it in the other case: action keys never differ
    /// by case (Caps Lock or Shift does the same thing), unless a table binds both cases (vim's
    /// `g`/`G`, `e`/`E`), which [`find`] prefers.
    pub fn matches(self, key: &KeyEvent) -> bool {
        if self.matches_exactly(key) {
            return true;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match (self, key.code) {
            (Key::Code(KeyCode::Char(c)), KeyCode::Char(k)) => {
                !ctrl && c.is_ascii_alphabetic() && c.eq_ignore_ascii_case(&k)
            }
            _ => false,
        }
    }

    fn matches_exactly(self, key: &KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match self {
            Key::Code(c) => !ctrl && key.code == c,
            Key::Ctrl(c) => ctrl && key.code == KeyCode::Char(c),
        }
    }

    /// The event this key sends (tests walk the tables with it).
    pub fn event(self) -> KeyEvent {
        match self {
            Key::Code(c) => KeyEvent::new(c, KeyModifiers::NONE),
            Key::Ctrl(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
        }
    }
}

pub const fn ch(c: char) -> Key {
    Key::Code(KeyCode::Char(c))
}

pub const fn code(c: KeyCode) -> Key {
    Key::Code(c)
}

/// Whether and how a binding shows in the key bar (the help always shows it, as `label`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bar {
    /// Help only (the bar has no room for every key).
    No,
    /// As in the help.
    Yes,
    /// Shorter: these keys and words.
    As(&'static str, &'static str),
}

/// One row of a screen's keys: the key presses and the action each one does, how the help writes
/// them, and what they do. A row with no keys stands for "any other key" (typed into a field, or a
/// question dismissed): the screen's `other` handles those.
#[derive(Debug)]
pub struct Binding<A: 'static> {
    pub keys: &'static [(Key, A)],
    pub label: &'static str,
    pub what: &'static str,
    pub bar: Bar,
}

impl<A: Copy> Binding<A> {
    pub fn row(&self) -> Row {
        Row { label: self.label, what: self.what, bar: self.bar, keys: self.keys.iter().map(|(k, _)| *k).collect() }
    }
}

/// A binding without its actions: what the bar and the help draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub label: &'static str,
    pub what: &'static str,
    pub bar: Bar,
    pub keys: Vec<Key>,
}

impl Row {
    /// The key bar's words for this row, if it shows there.
    pub fn in_bar(&self) -> Option<(&'static str, &'static str)> {
        match self.bar {
            Bar::No => None,
            Bar::Yes => Some((self.label, self.what)),
            Bar::As(k, w) => Some((k, w)),
        }
    }

    /// "any other key" rows (typing, dismissing).
    pub fn is_other(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The action the first row that has `key` gives it (exactly; else a letter in the other case).
pub fn find<A: Copy>(table: &[&'static Binding<A>], key: &KeyEvent) -> Option<A> {
    let keys = || table.iter().flat_map(|b| b.keys.iter());
    keys().find(|(k, _)| k.matches_exactly(key)).or_else(|| keys().find(|(k, _)| k.matches(key))).map(|(_, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum A {
        Up,
        Down,
        Test,
    }

    static MOVE: Binding<A> = Binding {
        keys: &[(code(KeyCode::Up), A::Up), (ch('k'), A::Up), (code(KeyCode::Down), A::Down)],
        label: "↑/↓ k",
        what: "move",
        bar: Bar::As("↑/↓", "move"),
    };
    static TEST: Binding<A> = Binding { keys: &[(Key::Ctrl('t'), A::Test)], label: "^T", what: "test", bar: Bar::No };

    #[test]
    fn keys_match_with_and_without_ctrl() {
        let t = [&MOVE, &TEST];
        assert_eq!(find(&t, &KeyEvent::new(KeyCode::Char('k'), KeyModifiers::NONE)), Some(A::Up));
        assert_eq!(find(&t, &KeyEvent::new(KeyCode::Char('k'), KeyModifiers::CONTROL)), None);
        assert_eq!(find(&t, &KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE)), None);
        assert_eq!(find(&t, &Key::Ctrl('t').event()), Some(A::Test));
        assert_eq!(find(&t, &KeyEvent::new(KeyCode::Down, KeyModifiers::SHIFT)), Some(A::Down));
    }

    #[test]
    fn rows_say_how_the_bar_shows_them() {
        assert_eq!(MOVE.row().in_bar(), Some(("↑/↓", "move")));
        assert_eq!(TEST.row().in_bar(), None);
        assert_eq!(MOVE.row().keys.len(), 3);
    }
}
