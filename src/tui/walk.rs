//! The help lists exactly the keys each screen handles: every screen, in each of its key states, is
//! given every key of a broad universe, one fresh wizard per key. A key that changes anything (or
//! asks for an effect) must be in the help (or the screen has an "any other key" row: typing into a
//! field, dismissing a question), and a key in the help must do something there.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Msg, Prefill, Screen};
use super::keys::Row;
use super::screens::fixture;
use super::session::Mode;
use super::work::{FlavorView, Progress};
use crate::core::logs::follow::{LogLevel, LogLine};

fn app(mode: Mode, screen: Screen) -> App {
    let prefill = Prefill {
        nova_bm_db: Some("sqlite:///srv/nova_bm.sqlite".into()),
        ironic_db: Some("sqlite:///srv/ironic.sqlite".into()),
        nova_db: Some("sqlite:///srv/nova.sqlite".into()),
        ..Default::default()
    };
    let mut a = App::new(mode, prefill, fixture::options(), Default::default());
    a.session.prepared = fixture::session(mode).prepared;
    a.replan();
    a.screen = screen;
    a
}

fn log_line(level: LogLevel, text: &str) -> LogLine {
    LogLine { source: "ironic".into(), level, text: text.into(), starts_record: true }
}

/// Each screen in each state its table depends on, set so that moving keys can move.
pub(super) type Maker = Box<dyn Fn() -> App>;

pub(super) fn states() -> Vec<(&'static str, Maker)> {
    let flavors = |mode| {
        move || {
            let mut a = app(mode, Screen::Flavors);
            let change = crate::core::migrate::flavors::SpecChange {
                flavor_id: 1,
                flavor: "bm".into(),
                key: "resources:CUSTOM_BAREMETAL".into(),
                old: None,
                new: "1".into(),
            };
            a.flavors.result = Some(Ok(FlavorView { changes: vec![change], ..Default::default() }));
            a
        }
    };
    let progress = |asking: bool, done: bool| {
        move || {
            let mut a = app(Mode::Rehearsal, Screen::Progress);
            a.progress = Progress::start(true, a.session.plan.as_ref());
            a.progress.cancel_asked = asking;
            if done {
                a.progress.finish(Err("stopped".into()));
            }
            a
        }
    };
    vec![
        ("connections", Box::new(|| app(Mode::Live, Screen::Connections))),
        (
            "inventory",
            Box::new(|| {
                let mut a = app(Mode::Rehearsal, Screen::Inventory);
                a.inventory.selected = 15;
                a
            }),
        ),
        (
            "inventory (filtering)",
            Box::new(|| {
                let mut a = app(Mode::Rehearsal, Screen::Inventory);
                a.inventory.filtering = true;
                a
            }),
        ),
        (
            "inventory (read-only)",
            Box::new(|| {
                let mut a = app(Mode::ReadOnly, Screen::Inventory);
                a.inventory.selected = 15;
                a
            }),
        ),
        (
            "conflicts",
            Box::new(|| {
                let mut a = app(Mode::Rehearsal, Screen::Conflicts);
                a.conflicts.group = 1;
                a
            }),
        ),
        ("flavors (live)", Box::new(flavors(Mode::Live))),
        ("flavors (rehearsal)", Box::new(flavors(Mode::Rehearsal))),
        ("confirm (live)", Box::new(|| app(Mode::Live, Screen::Confirm))),
        ("confirm (rehearsal)", Box::new(|| app(Mode::Rehearsal, Screen::Confirm))),
        ("progress (running)", Box::new(progress(false, false))),
        ("progress (cancel?)", Box::new(progress(true, false))),
        ("progress (done)", Box::new(progress(false, true))),
        (
            "logs",
            Box::new(|| {
                let mut a = app(Mode::Rehearsal, Screen::Logs);
                a.logs.push(vec![
                    log_line(LogLevel::Info, "first"),
                    log_line(LogLevel::Error, "second"),
                    log_line(LogLevel::Info, "third"),
                    log_line(LogLevel::Info, "fourth"),
                ]);
                a.logs.follow = false;
                a.logs.scroll = 2;
                a
            }),
        ),
        ("summary", Box::new(|| app(Mode::Rehearsal, Screen::Summary))),
    ]
}

/// Every key a terminal sends that a wizard could plausibly bind.
fn universe() -> Vec<KeyEvent> {
    let mut keys: Vec<KeyEvent> = (' '..='~').map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).collect();
    keys.extend(('a'..='z').map(|c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)));
    keys.extend((1..=12).map(|n| KeyEvent::new(KeyCode::F(n), KeyModifiers::NONE)));
    use KeyCode::*;
    for c in [Up, Down, Left, Right, Home, End, PageUp, PageDown, Tab, BackTab, Enter, Esc, Backspace, Delete, Insert] {
        keys.push(KeyEvent::new(c, KeyModifiers::NONE));
    }
    keys
}

/// Did the key do anything: an effect, or any state changed.
fn handled(start: &App, before: &str, key: KeyEvent) -> bool {
    let mut a = start.clone();
    let effects = a.update(Msg::Key(key));
    !effects.is_empty() || format!("{a:?}") != before
}

/// Rows listed that do nothing in one state, on purpose (the key bar stays the same while a load runs
/// and after it).
const CONDITIONAL: [(&str, &str); 2] = [("progress (running)", "Enter"), ("progress (done)", "c")];

fn listed(rows: &[Row], key: &KeyEvent) -> bool {
    rows.iter().flat_map(|r| r.keys.iter()).any(|k| k.matches(key))
}

#[test]
fn the_help_lists_exactly_the_keys_each_screen_handles() {
    let universe = universe();
    let mut problems = Vec::new();
    for (name, mk) in states() {
        let start = mk();
        let before = format!("{start:?}");
        let rows = start.keys();
        let any_other = rows.iter().any(Row::is_other);
        for key in &universe {
            if handled(&start, &before, *key) && !listed(&rows, key) && !any_other {
                problems.push(format!("{name}: {key:?} is handled but not in the help"));
            }
        }
        for row in &rows {
            for k in &row.keys {
                let conditional = CONDITIONAL.contains(&(name, row.label));
                if !conditional && !handled(&start, &before, k.event()) {
                    problems.push(format!("{name}: {:?} is in the help ({}) but does nothing", k, row.label));
                }
            }
        }
        // the popup as drawn from the rows (on screen, the cancel question may cover it)
        let (listed_rows, last) = start.key_rows();
        let theme = super::theme::Theme { color: false };
        let text = fixture::render(120, 40, |f| {
            super::chrome::help(f, f.area(), theme, start.screen.title(), &listed_rows, &[last], &[])
        });
        for row in &rows {
            if !text.contains(&format!("{}  {}", row.label, row.what)) {
                problems.push(format!("{name}: the help popup does not show {} {}", row.label, row.what));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn f1_opens_the_help_on_every_screen() {
    for (name, mk) in states() {
        let mut a = mk();
        a.update(Msg::Key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)));
        assert!(a.status.help, "{name}");
    }
}
