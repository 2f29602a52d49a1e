//! Driving the headless wizard (a `Runner` on a `TestBackend`) through the steps every wizard test
//! passes: the decisions, the flavors step.

use std::time::Duration;

use bm2ironic::core::demo::sandbox::{self, Sandbox};
use bm2ironic::tui::app::{App, Screen};
use bm2ironic::tui::view::Theme;
use bm2ironic::tui::{Mode, Runner};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};
use ratatui::Terminal;

pub const WAIT: Duration = Duration::from_secs(20);

/// On the conflicts screen: for each code, "apply to all of this code" (`a`: it lasts for that code
/// only), then its first action.
pub fn decide_all(r: &mut Runner<TestBackend>) {
    while r.app.session.plan.as_ref().unwrap().blocking() > 0 {
        let before = r.app.session.plan.as_ref().unwrap().blocking();
        r.key(KeyCode::Char('a'), KeyModifiers::NONE);
        r.key(KeyCode::Char('1'), KeyModifiers::NONE);
        assert!(r.app.session.plan.as_ref().unwrap().blocking() < before, "each decision resolves something");
    }
}

/// From the decided conflicts through the flavors step to the confirm screen.
pub async fn through_flavors(r: &mut Runner<TestBackend>) {
    r.key(KeyCode::Char('n'), KeyModifiers::NONE);
    assert_eq!(r.app.screen, Screen::Flavors);
    assert!(r.pump_until(|a| a.flavors.result.is_some(), WAIT).await);
    r.key(KeyCode::Char('n'), KeyModifiers::NONE);
    assert_eq!(r.app.screen, Screen::Confirm);
}

/// A wizard on a new demo sandbox, its start done (connections tested, logs followed).
pub async fn runner(mode: Mode, w: u16, h: u16) -> (Runner<TestBackend>, Sandbox, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let app = App::new(mode, sb.prefill(), sb.plan_options(), Default::default());
    let mut r = Runner::new(app, Terminal::new(TestBackend::new(w, h)).unwrap(), Theme { color: true }, sb.context());
    r.start();
    (r, sb, tmp)
}

/// The screen as text, drawn now.
pub fn screen_text(r: &mut Runner<TestBackend>) -> String {
    r.draw().unwrap();
    r.terminal.backend().buffer().content.iter().map(|c| c.symbol()).collect::<String>()
}
