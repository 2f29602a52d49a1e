//! Unit tests of `update` (the routing and the messages of jobs).
use super::*;
use std::time::Duration;

use crate::core::ironic::verdict::{Counts, Ending, TakeoverEvent, TakeoverOutcome};
use crate::core::migrate::events::LoadSummary;

fn app(api: Option<&str>) -> App {
    let prefill = Prefill { ironic_url: api.map(String::from), ..Default::default() };
    App::new(Mode::Live, prefill, PlanOptions::default(), Resolutions::default())
}

/// A load the core verified before its target closed: what the verification found, as an outcome.
fn verified(differences: usize) -> Msg {
    use crate::core::migrate::verify::{Difference, VerifyReport};
    let f = crate::tui::screens::fixture::finished_with(LoadSummary::begin(
        &crate::tui::screens::fixture::session(Mode::Live).plan.unwrap(),
        &crate::core::migrate::run::RunId::new(),
        false,
    ));
    let mut f = std::sync::Arc::into_inner(f).unwrap();
    f.outcome.ended = crate::core::migrate::steps::Ended::Committed;
    let diff = Difference {
        uuid: "u".into(),
        nova_bm_id: 1,
        against: "database",
        field: "driver".into(),
        expected: "ipmi".into(),
        found: "fake".into(),
    };
    f.outcome.verify = Some(Ok(VerifyReport {
        run_id: "r".into(),
        nodes_checked: 2,
        ports_checked: 4,
        api_checked: false,
        database_checked: true,
        source_checked: true,
        differences: vec![diff; differences],
    }));
    Msg::LoadDone(Ok(std::sync::Arc::new(f)))
}

#[test]
fn a_clean_verify_with_an_api_starts_the_takeover_check_and_its_events_reach_the_summary() {
    let mut a = app(Some("http://ironic:6385"));
    assert!(a.update(verified(0)).contains(&Effect::CheckTakeover));
    assert!(
        a.summary.verify.as_ref().unwrap().as_ref().unwrap().contains("2 nodes, 4 ports"),
        "{:?}",
        a.summary.verify
    );
    let c = Counts { taken_over: 2, ..Counts::default() };
    a.update(Msg::Takeover(TakeoverEvent::Progress(c)));
    assert_eq!(a.summary.takeover.as_ref().unwrap().counts, c);
    let outcome = TakeoverOutcome { nodes: vec![], ending: Ending::AllDecided, elapsed: Duration::ZERO };
    a.update(Msg::TakeoverDone(Ok(outcome)));
    assert_eq!(a.summary.takeover.as_ref().unwrap().ended, Some(Ok(Ending::AllDecided)));
    let mut no_api = app(None);
    assert!(!no_api.update(verified(0)).contains(&Effect::CheckTakeover));
    assert!(no_api.summary.takeover.is_none());
    let mut differs = app(Some("http://ironic:6385"));
    assert!(!differs.update(verified(1)).contains(&Effect::CheckTakeover), "not after differences");
    assert!(differs.summary.verify.as_ref().unwrap().is_err());
}

/// A decision not saved: `q` asks instead of quitting (before: exit 0, no prompt, the decisions
/// lost); `w` there saves and quits once saved; the decision was journalled as it was made.
#[test]
fn q_asks_while_decisions_are_unsaved_and_w_saves_then_quits() {
    let mut a =
        App::new(Mode::Live, Prefill::default(), crate::tui::screens::fixture::options(), Resolutions::default());
    a.session.prepared = crate::tui::screens::fixture::session(Mode::Live).prepared;
    a.replan();
    a.screen = Screen::Conflicts;
    let code = a.session.plan.as_ref().unwrap().conflicts[0].code;
    let action = code.actions()[0];
    let effects = a.apply(vec![Out::Decide { code, subject: None, action, all: true }]);
    assert!(
        matches!(&effects[..], [Effect::Journal { text, .. }] if text.contains(code.as_str())),
        "the decision is journalled: {effects:?}"
    );
    let q = KeyEvent::new(KeyCode::Char('q'), crossterm_none());
    assert!(a.update(Msg::Key(q)).is_empty());
    assert!(a.status.quit_asked && !a.status.quit, "q asks");
    let text = crate::tui::screens::fixture::render(80, 24, |f| {
        crate::tui::view::view(&a, f, crate::tui::theme::Theme { color: false })
    });
    assert!(
        text.contains("Decisions not saved") && text.contains("w: save to bm2ironic-resolutions.toml and quit"),
        "{text}"
    );
    insta::assert_snapshot!("quit_with_unsaved_decisions_80x24", text);
    let w = KeyEvent::new(KeyCode::Char('w'), crossterm_none());
    assert_eq!(a.update(Msg::Key(w)), vec![Effect::SaveResolutions]);
    assert!(!a.status.quit, "not before the save");
    assert_eq!(a.update(Msg::Saved(Ok("/tmp/d.toml".into()))), vec![Effect::Quit]);
    assert!(a.status.quit && !a.session.unsaved());
    // nothing unsaved: q quits at once
    let mut b = app(None);
    b.screen = Screen::Conflicts;
    assert_eq!(b.update(Msg::Key(q)), vec![Effect::Quit]);
}

fn crossterm_none() -> ratatui::crossterm::event::KeyModifiers {
    ratatui::crossterm::event::KeyModifiers::NONE
}

/// A large inventory's decision (issue #33 item 5): the key answers at once with the busy sign up and
/// the plan made on a worker thread (`Effect::Replan`); keys typed meanwhile are dropped and said (a
/// second `1` decided the next group before); the plan, when it arrives, carries the decision and the
/// busy sign goes; a replan overtaken by a newer one is dropped.
#[test]
fn a_large_inventorys_decision_is_planned_off_the_key_and_keys_meanwhile_are_dropped() {
    let mut a =
        App::new(Mode::Live, Prefill::default(), crate::tui::screens::fixture::options(), Resolutions::default());
    a.session.prepared = crate::tui::screens::fixture::session(Mode::Live).prepared;
    a.replan();
    a.inline_replan_max = 0; // as if it held more than INLINE_REPLAN_MAX nodes
    a.screen = Screen::Conflicts;
    let before = a.session.plan.as_ref().unwrap().checksum.clone();
    let blocking_before = a.session.plan.as_ref().unwrap().blocking();
    a.conflicts.focus_items = true; // a digit decides where the items have focus
    let one = KeyEvent::new(KeyCode::Char('1'), crossterm_none());
    let effects = a.update(Msg::Key(one));
    let generation = match effects.iter().find(|e| matches!(e, Effect::Replan { .. })) {
        Some(Effect::Replan { generation }) => *generation,
        _ => panic!("no replan asked for: {effects:?}"),
    };
    assert!(a.status.busy.as_deref().is_some_and(|b| b.contains("planning")), "{:?}", a.status.busy);
    assert_eq!(a.session.plan.as_ref().unwrap().checksum, before, "not planned on the key");
    let decided = a.session.resolutions.clone();
    // a second `1` while the plan is made: dropped, not a decision
    assert!(a.update(Msg::Key(one)).is_empty());
    assert_eq!(a.session.resolutions, decided, "the key typed meanwhile decided something");
    assert!(a.status.toast.as_deref().is_some_and(|t| t.contains("key ignored")));
    // an older replan that ends late is dropped
    let prepared = a.session.prepared.clone().unwrap();
    let opts = a.connections.plan_options(&a.session.plan_options);
    let stale = crate::tui::jobs::replan(generation - 1, &prepared, &opts, &a.session.resolutions);
    a.update(stale);
    assert!(a.replanning.is_some(), "a stale replan ended the wait");
    a.run_inline(effects);
    assert!(a.replanning.is_none() && a.status.busy.is_none());
    let after = a.session.plan.as_ref().unwrap();
    assert_ne!(after.checksum, before, "the decision's plan was not installed");
    assert!(after.blocking() <= blocking_before);
    // keys act again
    let down = KeyEvent::new(KeyCode::Down, crossterm_none());
    a.update(Msg::Key(down));
    assert!(!a.status.toast.as_deref().is_some_and(|t| t.contains("key ignored")));
}

/// The rehearsal's confirmation takes no text: `?` opens the help there and the bar offers nothing
/// to type (it said `type -`, and `?` did nothing); the LIVE one still takes `?` as typed text.
#[test]
fn the_rehearsals_confirmation_has_help_and_nothing_to_type() {
    for (mode, help) in [(Mode::Rehearsal, true), (Mode::Live, false)] {
        let mut a = App::new(mode, Prefill::default(), crate::tui::screens::fixture::options(), Resolutions::default());
        a.session.prepared = crate::tui::screens::fixture::session(mode).prepared;
        a.replan();
        a.screen = Screen::Confirm;
        let (rows, _) = a.key_rows();
        assert_eq!(
            rows.iter().any(|r| r.label == "type"),
            !help,
            "{mode:?}: {:?}",
            rows.iter().map(|r| r.label).collect::<Vec<_>>()
        );
        a.update(Msg::Key(KeyEvent::new(KeyCode::Char('?'), crossterm_none())));
        assert_eq!(a.status.help, help, "{mode:?}");
    }
}

/// After the load, `L` on the progress screen then `Esc` goes back to the progress screen (it
/// jumped to the summary); from the summary, back to the summary.
#[test]
fn esc_on_the_logs_goes_back_where_they_were_opened() {
    let mut a =
        App::new(Mode::Rehearsal, Prefill::default(), crate::tui::screens::fixture::options(), Resolutions::default());
    a.session.prepared = crate::tui::screens::fixture::session(Mode::Rehearsal).prepared;
    a.replan();
    a.progress.total = 36;
    a.progress.finish(Err("stopped".into()));
    for from in [Screen::Progress, Screen::Summary] {
        a.screen = from;
        a.update(Msg::Key(KeyEvent::new(KeyCode::Char('L'), crossterm_none())));
        assert_eq!(a.screen, Screen::Logs, "L from {from:?}");
        a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, crossterm_none())));
        assert_eq!(a.screen, from, "Esc from the logs opened from {from:?}");
    }
}

/// While the prepare runs (seconds at 100,000 nodes), a key typed does not edit the connection being
/// read, and says why; Esc stops the prepare and its result is dropped when it comes (Esc and q
/// were dropped silently before, and typed keys went into the form).
#[test]
fn esc_stops_a_running_prepare_and_its_result_is_dropped() {
    let mut a = app(None);
    a.screen = Screen::Connections;
    a.apply(vec![Out::Busy("reading".into()), Out::Effect(Effect::Prepare)]);
    assert!(a.preparing && a.status.busy.is_some());
    let before = format!("{:?}", a.connections.connections());
    assert!(a.update(Msg::Key(KeyEvent::new(KeyCode::Char('x'), crossterm_none()))).is_empty());
    assert_eq!(format!("{:?}", a.connections.connections()), before, "the key edited a connection being read");
    assert!(a.status.toast.as_deref().is_some_and(|t| t.contains("Esc stops it")), "{:?}", a.status.toast);
    a.update(Msg::Key(KeyEvent::new(KeyCode::Esc, crossterm_none())));
    assert!(!a.preparing && a.status.busy.is_none());
    let prepared = crate::tui::screens::fixture::session(Mode::Live).prepared.unwrap();
    a.update(Msg::Prepared(Ok(prepared)));
    assert_eq!(a.screen, Screen::Connections, "the stopped prepare's result was shown");
    assert!(a.session.prepared.is_none());
}

/// `b` on Inventory asks for the BMC check with the busy line up; its progress shows; what it read
/// becomes conflicts (the plan made again) and a READ column on the Inventory (issue #51).
#[test]
fn b_reads_the_bmcs_and_what_they_said_becomes_conflicts_and_a_column() {
    use crate::core::bmc::{BmcFacts, BmcReading, Failure, Power};
    let mut a =
        App::new(Mode::Rehearsal, Prefill::default(), crate::tui::screens::fixture::options(), Resolutions::default());
    a.session.prepared = crate::tui::screens::fixture::session(Mode::Rehearsal).prepared;
    a.replan();
    a.screen = Screen::Inventory;
    let effects = a.update(Msg::Key(KeyEvent::new(KeyCode::Char('b'), crossterm_none())));
    assert!(effects.contains(&Effect::CheckBmc), "{effects:?}");
    assert!(a.status.busy.is_some());
    a.update(Msg::BmcProgress { done: 3, total: 36 });
    assert!(a.status.busy.as_deref().unwrap().contains("3 of 36"), "{:?}", a.status.busy);
    let read = |address: &str, power: Option<Power>, failure: Option<Failure>| BmcReading {
        address: address.into(),
        user: "admin".into(),
        power,
        guid: None,
        failure,
        error: failure.map(|_| "RAKP 2 HMAC is invalid".into()),
        read_at: chrono::Utc::now(),
        ms: 3,
    };
    let ids: Vec<i64> = a.session.prepared.as_ref().unwrap().inventory.nodes.iter().map(|n| n.node.id).collect();
    let mut f = BmcFacts { given: true, ..Default::default() };
    f.readings.insert(ids[0], read("10.9.0.1", Some(Power::On), None));
    f.readings.insert(ids[1], read("10.9.0.2", None, Some(Failure::Credentials)));
    f.find_duplicates();
    a.update(Msg::BmcChecked(Ok(std::sync::Arc::new(f))));
    assert!(a.status.busy.is_none());
    assert!(a.status.toast.as_deref().unwrap().contains("BMC check read from"), "{:?}", a.status.toast);
    let plan = a.session.plan.as_ref().unwrap();
    let refused: Vec<_> = plan.conflicts.iter().filter(|c| c.code == ConflictCode::BmcRefused).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let d = &refused[0].detail;
    assert!(d.contains("credentials refused") && d.contains("RAKP 2 HMAC is invalid"), "{d}");
    let cx = crate::tui::screens::fixture::draw_ctx(&a.session);
    let screen = crate::tui::screens::fixture::draw(120, 40, &a.inventory, &cx);
    let head = screen.lines().find(|l| l.contains(" BMC ")).unwrap();
    assert!(head.contains("READ"), "{head}");
    assert!(screen.lines().any(|l| l.contains(" refused ")), "{screen}");
    let failed = a.update(Msg::BmcChecked(Err("cannot run ipmitool for the BMC check: No such file".into())));
    assert!(failed.is_empty() && a.status.toast.as_deref().unwrap().contains("BMC check not run"));
}
