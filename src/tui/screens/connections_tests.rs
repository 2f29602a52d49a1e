//! Tests of the connections screen.
use super::*;
use crate::tui::keys::ch;
use crate::tui::screens::fixture;

fn screen() -> ConnectionsForm {
    let prefill = Prefill {
        nova_bm_db: Some("mysql://nova:secret@db1/nova_bm".into()),
        ironic_db: Some("postgresql://ironic@db2/ironic".into()),
        ironic_url: Some("ironic.example".into()),
        deploy_kernel: Some("file:///k".into()),
        ..Default::default()
    };
    ConnectionsForm::new(Mode::Live, prefill, &PlanOptions::default())
}

#[test]
fn the_ironic_api_takes_a_cloud_of_clouds_yaml() {
    let s = fixture::session(Mode::Live);
    let cx = fixture::ctx(&s);
    let mut c = ConnectionsForm::new(
        Mode::Live,
        Prefill { clouds: vec!["prod".into(), "lab-system".into()], ..Default::default() },
        &PlanOptions::default(),
    );
    c.on_key(Key::Ctrl('o').event(), &cx);
    assert_eq!((c.focus, c.value(Field::IronicApi)), (Field::IronicApi, "prod"));
    assert_eq!(c[Field::IronicApi].status, FieldStatus::Untested);
    c.on_key(Key::Ctrl('o').event(), &cx);
    assert_eq!(c.value(Field::IronicApi), "lab-system");
    c.on_key(Key::Ctrl('o').event(), &cx);
    assert_eq!(c.value(Field::IronicApi), "prod");
    assert_eq!(c.connections().ironic_api, "prod");
    assert!(c.connections().settings().unwrap().ironic_url.is_none(), "a cloud is no URL");
    let mut none = ConnectionsForm::new(Mode::Live, Prefill::default(), &PlanOptions::default());
    assert!(matches!(&none.on_key(Key::Ctrl('o').event(), &cx)[..], [Out::Toast(t)] if t.contains("no clouds.yaml")));
}

#[test]
fn fields_are_checked_as_typed_and_named() {
    let c = screen();
    assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Untested);
    assert!(c[Field::NovaBmDb].has_secret());
    assert!(matches!(c[Field::IronicApi].status, FieldStatus::Invalid(_)));
    assert_eq!(c[Field::DeployRamdisk].status, FieldStatus::Empty);
    assert_eq!(c.plan_options(&PlanOptions::default()).deploy_kernel.as_deref(), Some("file:///k"));
}

#[test]
fn enter_stops_at_the_first_bad_field_and_test_asks_for_a_job() {
    let s = fixture::session(Mode::Live);
    let cx = fixture::ctx(&s);
    let mut c = screen();
    let out = c.on_key(Key::Ctrl('t').event(), &cx);
    assert_eq!(out, vec![Out::Effect(Effect::TestConnection { field: Field::NovaBmDb })]);
    assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Testing);
    let out = c.on_key(code(KeyCode::Enter).event(), &cx);
    assert_eq!(c.focus, Field::IronicApi);
    assert!(matches!(&out[..], [Out::Toast(t)] if t.starts_with("Ironic API: must start")));
    c.on_key(code(KeyCode::Up).event(), &cx);
    assert_eq!(c.focus, Field::NovaApiDb);
    c.on_key(ch('x').event(), &cx);
    assert_eq!(c.value(Field::NovaApiDb), "x");
    assert!(matches!(c[Field::NovaApiDb].status, FieldStatus::Invalid(_)));
    assert_eq!(c.flavors_db(), "x", "the flavors are in the Nova API database when it is given");
}

#[test]
fn connections_are_tested_on_open_and_after_an_edit() {
    let s = fixture::session(Mode::Live);
    let cx = fixture::ctx(&s);
    let mut c = screen();
    // the well-formed connections, not the options nor the malformed API URL
    assert_eq!(c.test_all(), vec![Field::NovaBmDb, Field::IronicDb]);
    assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Testing);
    assert!(c.due(1).is_empty(), "nothing edited");
    c.tested(Field::NovaBmDb, 0, Ok("MySQL 8 in 3 ms".into()));
    assert_eq!(c[Field::NovaBmDb].status, FieldStatus::Ok("MySQL 8 in 3 ms".into()));
    // an edit: tested again once the typing pauses; the older test's result is dropped
    c.tested(Field::IronicDb, 0, Err("refused".into()));
    c.focus = Field::IronicDb;
    c.on_key(ch('x').event(), &cx);
    assert_eq!(c[Field::IronicDb].status, FieldStatus::Untested);
    assert!(c.due(10).is_empty(), "the edit is seen");
    assert!(c.due(10 + RETEST_AFTER_TICKS - 1).is_empty(), "still typing");
    assert_eq!(c.due(10 + RETEST_AFTER_TICKS), vec![Field::IronicDb]);
    assert_eq!(c[Field::IronicDb].status, FieldStatus::Testing);
    c.tested(Field::IronicDb, 0, Ok("stale".into()));
    assert_eq!(c[Field::IronicDb].status, FieldStatus::Testing, "a result for the old value is dropped");
    c.tested(Field::IronicDb, 1, Err("unknown database ironicx".into()));
    // Enter stops at the failing connection and says why
    c.focus = Field::DeployKernel;
    c[Field::DeployRamdisk].input = "file:///r".into();
    c[Field::DeployRamdisk].validate();
    c[Field::IronicApi].input = "".into();
    c[Field::IronicApi].validate();
    let out = c.on_key(code(KeyCode::Enter).event(), &cx);
    assert_eq!(c.focus, Field::IronicDb);
    assert_eq!(out, vec![Out::Toast("Ironic database: connection failed: unknown database ironicx".into())]);
    // a connection still being tested does not hold Enter up
    c[Field::IronicDb].status = FieldStatus::Testing;
    let out = c.on_key(code(KeyCode::Enter).event(), &cx);
    assert!(matches!(&out[..], [Out::Busy(_), Out::Effect(Effect::Prepare)]), "{out:?}");
}

#[test]
fn busy_takes_no_keys() {
    let s = fixture::session(Mode::Live);
    let mut cx = fixture::ctx(&s);
    cx.busy = true;
    let mut c = screen();
    assert!(c.on_key(code(KeyCode::Down).event(), &cx).is_empty());
    assert_eq!(c.focus, Field::NovaBmDb);
}

#[test]
fn snapshot() {
    let mut c = screen();
    c.focus = Field::IronicApi;
    c.test_all();
    c.tested(Field::IronicDb, 0, Err("cannot reach db2".into()));
    let s = fixture::session(Mode::Live);
    let text = fixture::draw(80, 20, &c, &fixture::draw_ctx(&s));
    insta::assert_snapshot!(text);
}

#[test]
fn blanks_are_invalid_not_a_value() {
    let mut c = ConnectionsForm::new(Mode::Rehearsal, Prefill::default(), &PlanOptions::default());
    c.focus = Field::DeployKernel;
    c[Field::DeployKernel].input = "   ".into();
    c[Field::DeployKernel].validate();
    assert!(matches!(c[Field::DeployKernel].status, FieldStatus::Invalid(_)));
    assert_eq!(c.plan_options(&PlanOptions::default()).deploy_kernel, None);
}

#[test]
fn an_unfocused_status_that_does_not_fit_says_it_was_cut() {
    let mut c = screen();
    c.focus = Field::NovaBmDb;
    c.test_all();
    let long = "cannot reach the Ironic database at db2:5432: connection refused (is the server running?)";
    c.tested(Field::IronicDb, 0, Err(long.into()));
    let s = fixture::session(Mode::Live);
    let text = fixture::draw(80, 24, &c, &fixture::draw_ctx(&s));
    let line = text
        .lines()
        .find(|l| l.contains("failed: cannot reach the Ironic database"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.trim_end().trim_end_matches('│').trim_end().ends_with('…'), "cut without a mark: {line:?}\n{text}");
    assert!(!text.contains("running?)"), "{text}");
    // focused, the same status is shown whole (wrapped below the field)
    c.focus = Field::IronicDb;
    let text = fixture::draw(80, 24, &c, &fixture::draw_ctx(&s));
    assert!(text.contains("running?)"), "{text}");
}
