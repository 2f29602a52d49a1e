//! The decisions file the wizard saves to (`bm2ironic-resolutions.toml`) when one is there already
//! (#48 item 3): offered at start when no decisions were given (`y` takes its decisions), and never
//! replaced unread without a question naming it (`w` again replaces it, any other key keeps it).
//! The runtime looks at the file once at start ([`look_at_start`]); the rest is pure.

use ratatui::crossterm::event::{KeyCode, KeyEvent};

use super::app::App;
use super::msg::{DecisionsFile, Effect};
use crate::core::migrate::conflict::Resolutions;

/// At start: an existing decisions file where `w` saves is offered when no decisions were given
/// (`--resolutions`, `--resolve`, the journal of an earlier session); in any case it is not
/// replaced unread without a question.
pub fn look_at_start(app: &mut App) {
    let path = app.session.resolutions_path.clone();
    let given = app.session.loaded_from.clone();
    if given.as_deref() == Some(path.as_str()) || !std::path::Path::new(&path).is_file() {
        return;
    }
    app.decisions_file.unread = Some(path.clone());
    if given.is_some() || app.session.resolutions != Resolutions::default() {
        return;
    }
    match Resolutions::load(std::path::Path::new(&path)) {
        Ok(r) => app.decisions_file.offer = Some((path, r)),
        Err(e) => app.status.toast = Some(format!("{e} (not read; w asks before replacing it)")),
    }
}

impl App {
    /// A key while a question of the decisions file is up: Some(effects) when it answered it.
    pub(super) fn decisions_file_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        if let Some((path, r)) = self.decisions_file.offer.clone() {
            match key.code {
                KeyCode::Char('y') | KeyCode::Enter => {
                    let n = r.defaults.len() + r.decisions.len();
                    (self.session.resolutions, self.session.saved) = (r.clone(), r);
                    self.session.loaded_from = Some(path.clone());
                    self.decisions_file = DecisionsFile::default();
                    self.status.toast = Some(format!("{n} decision(s) taken from {path}"));
                    self.replan();
                }
                KeyCode::Char('n') | KeyCode::Esc => {
                    self.decisions_file.offer = None;
                    self.status.toast = Some(format!("{path} not used; w asks before replacing it"));
                }
                _ => {}
            }
            return Some(vec![]);
        }
        if !self.decisions_file.replace_asked {
            return None;
        }
        self.decisions_file.replace_asked = false;
        if key.code == KeyCode::Char('w') {
            self.decisions_file.unread = None;
            return Some(vec![Effect::SaveResolutions]);
        }
        let path = self.decisions_file.unread.clone().unwrap_or_default();
        self.status.quit_after_save = false;
        self.status.toast = Some(format!("not saved: {path} kept as it was"));
        Some(vec![])
    }

    /// `w` (Conflicts, Summary, the quit question): saves, or first asks before replacing a file
    /// this wizard did not read.
    pub(super) fn save_decisions(&mut self) -> Vec<Effect> {
        if self.decisions_file.unread.is_some() {
            self.decisions_file.replace_asked = true;
            return vec![];
        }
        vec![Effect::SaveResolutions]
    }

    /// The lines of the question up, if one is: (title, lines).
    pub fn decisions_file_question(&self) -> Option<(String, Vec<String>)> {
        let short = |p: &str| crate::tui::chrome::shorten(p, 46);
        if let Some((path, r)) = &self.decisions_file.offer {
            let n = r.defaults.len() + r.decisions.len();
            return Some((
                "Decisions file found".into(),
                vec![
                    short(path),
                    format!("holds {n} decision(s), saved earlier (w)."),
                    "Use them in this wizard?".into(),
                    "".into(),
                    "y/Enter: use them   n/Esc: start without".into(),
                ],
            ));
        }
        let path = self.decisions_file.unread.as_deref().filter(|_| self.decisions_file.replace_asked)?;
        Some((
            "Replace the decisions file?".into(),
            vec![
                short(path),
                "is there and was not read by this wizard.".into(),
                "Saving replaces it with the decisions here.".into(),
                "".into(),
                "w: replace it   any other key: keep it".into(),
            ],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::Screen;
    use crate::tui::screens::fixture;
    use crate::tui::screens::Out;
    use crate::tui::session::Mode;
    use ratatui::crossterm::event::KeyModifiers;

    fn key(c: KeyCode) -> crate::tui::app::Msg {
        crate::tui::app::Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
    }

    fn app_with_file(text: &str) -> (App, tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bm2ironic-resolutions.toml").display().to_string();
        std::fs::write(&path, text).unwrap();
        let mut a =
            App::new(Mode::Rehearsal, crate::tui::app::Prefill::default(), fixture::options(), Default::default());
        a.session.resolutions_path = path.clone();
        look_at_start(&mut a);
        (a, dir, path)
    }

    /// The rehearsal's decisions in `./bm2ironic-resolutions.toml` are offered at start (before:
    /// ignored, and `w` then replaced them): `y` takes them, and the question names the file.
    #[test]
    fn an_existing_decisions_file_is_offered_at_start() {
        let (mut a, _d, path) = app_with_file("[defaults]\nduplicate-mac = \"skip-port\"\n");
        let (title, lines) = a.decisions_file_question().expect("offered");
        assert_eq!(title, "Decisions file found");
        assert!(lines[0].ends_with("bm2ironic-resolutions.toml") && lines[1].contains("1 decision(s)"), "{lines:?}");
        a.update(key(KeyCode::Char('y')));
        assert_eq!(a.session.resolutions.defaults.len(), 1);
        assert_eq!(a.session.loaded_from.as_deref(), Some(path.as_str()));
        assert!(!a.session.unsaved() && a.decisions_file_question().is_none());
        // taken, it is this wizard's file: w saves without asking
        assert_eq!(a.save_decisions(), vec![Effect::SaveResolutions]);
    }

    /// Declined (or unreadable), the file is never replaced without a question naming it; `w`
    /// again replaces it, any other key keeps it.
    #[test]
    fn an_unread_decisions_file_is_not_replaced_without_a_question() {
        let (mut a, _d, path) = app_with_file("[defaults]\nduplicate-mac = \"skip-port\"\n");
        a.update(key(KeyCode::Char('n')));
        assert!(a.session.resolutions == Resolutions::default());
        a.screen = Screen::Conflicts;
        let effects = a.apply(vec![Out::Effect(Effect::SaveResolutions)]);
        assert!(effects.is_empty(), "w asks first: {effects:?}");
        let (title, lines) = a.decisions_file_question().expect("asked");
        assert!(title.contains("Replace") && path.ends_with(lines[0].trim_start_matches('…')), "{lines:?}");
        assert!(a.update(key(KeyCode::Char('x'))).is_empty());
        assert!(a.status.toast.as_deref().unwrap_or("").contains("kept as it was"));
        assert!(a.apply(vec![Out::Effect(Effect::SaveResolutions)]).is_empty());
        assert_eq!(a.update(key(KeyCode::Char('w'))), vec![Effect::SaveResolutions]);
        // an unreadable file is not offered, and is not replaced unasked either
        let (mut b, _d, _) = app_with_file("not toml [");
        assert!(b.decisions_file.offer.is_none() && b.status.toast.as_deref().unwrap_or("").contains("not read"));
        assert!(b.save_decisions().is_empty() && b.decisions_file_question().is_some());
    }
}
