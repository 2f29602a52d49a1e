//! An 80x24 console (#48 item 5): every screen keeps on its key bar the keys that act on it, long
//! text wraps or is shown whole, URL fields scroll sideways, the progress list scrolls, the mode
//! stays in sight, and a field never says `ok` while the bottom line says its database is wrong.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Field, FieldStatus, Msg, Screen};
use super::screens::fixture;
use super::session::Mode;
use super::walk::states;
use super::work::Progress;

fn screen(a: &App) -> String {
    fixture::render(80, 24, |f| super::view::view(a, f, super::theme::Theme { color: false }))
}

fn key(a: &mut App, c: KeyCode) {
    a.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)));
}

/// Every screen, in each of its key states, at 80x24: each key its rows put on the bar is there
/// (before: `1-2 choose action`, `x`, `Tab`, `/ filter`, `s sort`, `^R` fell off); one snapshot holds
/// them all.
#[test]
fn at_80x24_every_screen_keeps_the_keys_that_act_on_it() {
    let mut all = String::new();
    for (name, mk) in states() {
        let a = mk();
        let text = screen(&a);
        let bar: Vec<&str> = text.lines().rev().take(2).collect();
        let bar = bar.join("\n");
        for row in a.keys() {
            let Some((k, w)) = row.in_bar() else { continue };
            assert!(bar.contains(&format!("{k} {w}")), "{name}: `{k} {w}` is not on the bar:\n{text}");
        }
        all.push_str(&format!("=== {name}\n{text}\n"));
    }
    insta::assert_snapshot!(all);
}

/// The REHEARSAL line stays in sight on Connections at 80x24 (the fields fill the form: it was
/// dropped), in the form's border.
#[test]
fn the_mode_line_stays_at_80x24() {
    let a = states().into_iter().find(|(n, _)| *n == "connections").map(|(_, mk)| mk()).unwrap();
    let mut r = a.clone();
    r.session.mode = Mode::Rehearsal;
    r.connections =
        super::screens::connections::ConnectionsForm::new(Mode::Rehearsal, Default::default(), &fixture::options());
    assert!(screen(&r).contains("REHEARSAL: everything runs, then rolls back. Nothing stays."), "{}", screen(&r));
    assert!(screen(&a).contains("LIVE: the load writes into the Ironic database"), "{}", screen(&a));
}

/// A long URL scrolls sideways with the cursor: its end is shown while the cursor is there.
#[test]
fn a_url_field_scrolls_sideways() {
    let mut a = states().into_iter().find(|(n, _)| *n == "connections").map(|(_, mk)| mk()).unwrap();
    a.connections.focus = Field::IronicApi;
    let url = "https://ironic-api.region-one.internal.example.org:6385/v1/with/a/long/path/END9";
    for c in url.chars() {
        key(&mut a, KeyCode::Char(c));
    }
    assert!(screen(&a).contains("path/END9"), "{}", screen(&a));
    key(&mut a, KeyCode::Home);
    let s = screen(&a);
    assert!(s.contains("https://ironic-api") && !s.contains("END9"), "{s}");
}

/// A connection's status too long for its line is shown whole under it while it has the focus
/// ("... access denie" was all one read), and a long bottom line wraps.
#[test]
fn a_long_status_and_a_long_toast_are_shown_whole() {
    let mut a = states().into_iter().find(|(n, _)| *n == "connections").map(|(_, mk)| mk()).unwrap();
    let why = "cannot reach MariaDB at db-primary.example.org:3306 as user nova: access denied for user 'nova'@'10.0.0.7' (using password: YES)";
    a.connections[Field::NovaBmDb].status = FieldStatus::Failed(why.into());
    let s = screen(&a);
    assert!(s.contains("(using password: YES)"), "{s}");
    a.status.toast = Some(format!("nova_bm database: connection failed: {why} [the end]"));
    let s = screen(&a);
    assert!(s.contains("[the end]"), "{s}");
}

/// Reading nova_bm found it is no nova_bm database: the field says so too (before: `ok: SQLite`
/// beside a bottom line saying the database is wrong), and Enter stops there.
#[test]
fn a_field_never_says_ok_when_its_database_is_not_what_it_should_be() {
    let mut a = states().into_iter().find(|(n, _)| *n == "connections").map(|(_, mk)| mk()).unwrap();
    a.connections[Field::NovaBmDb].status = FieldStatus::Ok("SQLite 3.45 in 1 ms".into());
    let e = crate::core::source::nova_bm::SourceError::NotNovaBm {
        what: "sqlite:///srv/nova.sqlite".into(),
        missing: "bm_nodes".into(),
    };
    let why = crate::core::migrate::prepare::PrepareError::from(e);
    a.update(Msg::Prepared(Err(super::error::JobError::from(why))));
    assert!(
        matches!(&a.connections[Field::NovaBmDb].status, FieldStatus::Failed(t) if t.contains("is not a nova_bm database")),
        "{:?}",
        a.connections[Field::NovaBmDb].status
    );
    assert!(!screen(&a).contains("ok: SQLite 3.45"), "{}", screen(&a));
}

/// The progress list scrolls (it followed the work only): ↑/↓ and PgUp/PgDn move it and say where
/// it is, `f` follows the work again.
#[test]
fn the_progress_list_scrolls() {
    let mut a = states().into_iter().find(|(n, _)| *n == "progress (running)").map(|(_, mk)| mk()).unwrap();
    assert_eq!(a.screen, Screen::Progress);
    let before = screen(&a);
    assert!(before.contains("(↑/↓ scroll)"), "{before}");
    for _ in 0..3 {
        key(&mut a, KeyCode::PageDown);
    }
    let after = screen(&a);
    assert!(a.progress.list_top.is_some() && after.contains("f: follow") && after != before, "{after}");
    key(&mut a, KeyCode::Char('f'));
    assert!(a.progress.list_top.is_none());
    let _: Progress = a.progress.clone();
}
