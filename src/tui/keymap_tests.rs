//! One key map (#48 item 6): `?` and F1 help everywhere (in a text field F1, or Esc out of it
//! first), `q` quits everywhere outside a text field, Enter is "next" on every step, an action
//! key does the same in either case, no bar says "n confirm", and "apply to all" stays with its
//! code.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Effect, Msg, Prefill, Screen};
use super::screens::fixture;
use super::session::Mode;
use super::work::FlavorView;

fn key(a: &mut App, c: KeyCode) -> Vec<Effect> {
    a.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

fn app(mode: Mode, screen: Screen) -> App {
    let prefill = Prefill { nova_db: Some("sqlite:///srv/nova.sqlite".into()), ..Default::default() };
    let mut a = App::new(mode, prefill, fixture::options(), Default::default());
    a.session.prepared = fixture::session(mode).prepared;
    a.replan();
    a.screen = screen;
    a
}

fn bar(a: &App) -> String {
    let (mut rows, last) = a.key_rows();
    rows.push(last);
    super::chrome::bar_items(&rows, 80).iter().map(|(k, w, _)| format!("{k} {w}")).collect::<Vec<_>>().join("  ")
}

/// On Connections `?` and `q` are typed into the field (a URL takes `?`: before, `?` there typed and
/// reset the test, and help was an unshown F1); F1 is help and shown; Esc leaves the field, then `?`
/// is help and `q` quits as everywhere, and typing goes back into the field.
#[test]
fn connections_types_in_a_field_and_esc_gives_help_and_quit_back() {
    let mut a = app(Mode::Live, Screen::Connections);
    a.connections.focus = super::app::Field::IronicApi;
    key(&mut a, KeyCode::Char('?'));
    assert!(!a.status.help && a.connections.value(super::app::Field::IronicApi) == "?", "typed");
    assert!(bar(&a).contains("F1 help") && bar(&a).contains("Esc leave field"), "{}", bar(&a));
    key(&mut a, KeyCode::F(1));
    assert!(a.status.help);
    key(&mut a, KeyCode::Char('x'));
    key(&mut a, KeyCode::Esc);
    assert!(!a.connections.editing && bar(&a).contains("? help") && bar(&a).contains("q quit"), "{}", bar(&a));
    key(&mut a, KeyCode::Char('?'));
    assert!(a.status.help, "? is help out of the field");
    key(&mut a, KeyCode::Char('x'));
    key(&mut a, KeyCode::Char('h'));
    assert!(a.connections.editing && a.connections.value(super::app::Field::IronicApi) == "?h", "typing goes back in");
    key(&mut a, KeyCode::Esc);
    assert_eq!(key(&mut a, KeyCode::Char('q')), vec![Effect::Quit], "q quits out of the field");
}

/// Enter is "next" on every step: Inventory and Conflicts too (before: only three screens).
#[test]
fn enter_is_next_on_inventory_and_conflicts() {
    let mut a = app(Mode::Rehearsal, Screen::Inventory);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.screen, Screen::Conflicts);
    assert!(bar(&a).contains("Enter next: flavors"), "{}", bar(&a));
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.screen, Screen::Conflicts, "blocking conflicts stop it");
    assert!(a.status.toast.as_deref().unwrap_or("").contains("blocking"));
    while a.session.plan.as_ref().unwrap().blocking() > 0 {
        key(&mut a, KeyCode::Char('a'));
        key(&mut a, KeyCode::Char('1'));
    }
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.screen, Screen::Flavors);
}

/// Flavors applied with `A` while `a` on Conflicts meant "all of code": now either case does the
/// same on both screens, and the bar reads "Enter next: confirm", never "n confirm".
#[test]
fn action_keys_do_the_same_in_either_case_and_no_bar_says_n_confirm() {
    for c in ['a', 'A'] {
        let mut f = app(Mode::Live, Screen::Flavors);
        let change = crate::core::migrate::flavors::SpecChange {
            flavor_id: 1,
            flavor: "bm".into(),
            key: "resources:CUSTOM_BAREMETAL".into(),
            old: None,
            new: "1".into(),
        };
        f.flavors.result = Some(Ok(FlavorView { changes: vec![change], ..Default::default() }));
        assert_eq!(key(&mut f, KeyCode::Char(c)), vec![Effect::ApplyFlavors], "{c}");
        assert!(bar(&f).contains("a apply to Nova") && bar(&f).contains("Enter next: confirm"), "{}", bar(&f));
        assert!(!bar(&f).contains("n confirm"), "{}", bar(&f));
        let mut k = app(Mode::Rehearsal, Screen::Conflicts);
        key(&mut k, KeyCode::Char(c));
        assert!(k.conflicts.apply_all, "{c} on Conflicts: apply to all");
    }
    // vim's g/G (first/last) keep their two cases
    let mut i = app(Mode::Rehearsal, Screen::Inventory);
    key(&mut i, KeyCode::Char('G'));
    assert!(i.inventory.selected > 0);
    key(&mut i, KeyCode::Char('g'));
    assert_eq!(i.inventory.selected, 0);
}

/// "[applies to ALL]" was for one code: once that code is decided, or another code selected, the
/// next one starts one item at a time (before: it carried over and decided the next code whole).
#[test]
fn apply_to_all_does_not_carry_over_to_the_next_code() {
    let mut a = app(Mode::Rehearsal, Screen::Conflicts);
    key(&mut a, KeyCode::Char('a'));
    key(&mut a, KeyCode::Char('1'));
    assert!(!a.conflicts.apply_all, "decided: the next code is one item at a time");
    key(&mut a, KeyCode::Char('a'));
    key(&mut a, KeyCode::Down);
    assert!(!a.conflicts.apply_all, "another code selected");
    let blocking = a.session.plan.as_ref().unwrap().blocking();
    key(&mut a, KeyCode::Char('1'));
    assert_eq!(a.session.plan.as_ref().unwrap().blocking(), blocking, "a digit on the codes decides nothing");
}

/// `q` quits (or asks) on every screen outside a text field, and `?` and F1 open the help there.
#[test]
fn q_and_help_work_on_every_screen_outside_a_text_field() {
    for screen in [Screen::Inventory, Screen::Conflicts, Screen::Flavors, Screen::Logs, Screen::Summary] {
        let mut a = app(Mode::Rehearsal, screen);
        key(&mut a, KeyCode::Char('?'));
        assert!(a.status.help, "{screen:?}");
        key(&mut a, KeyCode::Esc);
        key(&mut a, KeyCode::F(1));
        assert!(a.status.help, "{screen:?}");
        key(&mut a, KeyCode::Esc);
        key(&mut a, KeyCode::Char('q'));
        assert!(a.status.quit || a.status.quit_asked, "{screen:?}");
    }
    // the inventory's filter is a text field: q is typed, Esc leaves it, then q quits
    let mut a = app(Mode::Rehearsal, Screen::Inventory);
    key(&mut a, KeyCode::Char('/'));
    key(&mut a, KeyCode::Char('q'));
    assert!(!a.status.quit && a.inventory.filter.value() == "q");
    key(&mut a, KeyCode::Esc);
    key(&mut a, KeyCode::Char('q'));
    assert!(a.status.quit);
}
