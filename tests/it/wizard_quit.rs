//! Quitting the wizard while a load runs (^C, then `y`): the load is cancelled, rolled back, and the
//! session's ending says so (the CLI exits 1 on it, not 0 as if nothing had happened).

use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};
use bm2ironic::core::demo::sandbox;
use bm2ironic::tui::app::{App, Screen};
use bm2ironic::tui::view::Theme;
use bm2ironic::tui::{Ending, Mode, Runner};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};
use ratatui::Terminal;

use crate::common::wizard::{decide_all, through_flavors, WAIT};

/// Nodes enough for a load of several batches (the cancel is seen between two).
const NODES: usize = 5_000;

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_load_cancels_it_and_the_ending_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    // the sandbox's Ironic and Nova, a larger nova_bm
    let big = format!("sqlite:///{}", tmp.path().join("big_nova_bm.sqlite").display());
    let db = Db::connect(&DbUrl::parse(&big).unwrap(), Access::Create).await.unwrap();
    fixture::build(&db, &Fixture::generated(NODES, 5)).await.unwrap();
    db.close().await;
    let mut prefill = sb.prefill();
    prefill.nova_bm_db = big;
    let app = App::new(Mode::Live, prefill, sb.plan_options(), Default::default());
    let mut r =
        Runner::new(app, Terminal::new(TestBackend::new(120, 40)).unwrap(), Theme { color: true }, sb.context());
    r.start();
    r.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(r.pump_until(|a| a.screen == Screen::Inventory, WAIT).await, "{:?}", r.app.status.toast);
    r.key(KeyCode::Char('n'), KeyModifiers::NONE);
    decide_all(&mut r);
    through_flavors(&mut r).await;
    r.type_text("migrate");
    r.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(r.app.work_running(), "the load started");
    // ^C asks while the load runs; y cancels it and quits
    r.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(r.app.status.quit_asked && !r.app.status.quit);
    r.key(KeyCode::Char('y'), KeyModifiers::NONE);
    assert!(r.app.status.quit);
    match r.ending().await {
        Ending::LoadStopped(why) => assert!(why.contains("cancelled") && why.contains("rolled back"), "{why}"),
        other => panic!("a quit during the load ended as {other:?}"),
    }
    // and the target is as it was: no node, no run
    let ironic = Db::connect(&DbUrl::parse(&sb.ironic_url).unwrap(), Access::ReadOnly).await.unwrap();
    let nodes = ironic.fetch_map("SELECT COUNT(*) AS n FROM nodes", vec![], |row| row.i64("n")).await.unwrap();
    assert_eq!(nodes, vec![0], "the cancelled load left nothing");
    ironic.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn quit_with_nothing_running_is_a_plain_quit() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let app = App::new(Mode::Rehearsal, sb.prefill(), sb.plan_options(), Default::default());
    let mut r =
        Runner::new(app, Terminal::new(TestBackend::new(120, 40)).unwrap(), Theme { color: true }, sb.context());
    r.start();
    r.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(r.app.status.quit, "nothing to lose: ^C quits at once");
    assert_eq!(r.ending().await, Ending::Quit);
}

/// The wizard's jobs look for API runs in the state directory the wizard was given (`--state-dir`,
/// kept in `App::state_dir`), as the CLI does: an API run kept there is found (and its takeover check
/// then asks for the Ironic API, which is not given here). They looked in the default directory,
/// whatever `--state-dir` said.
#[tokio::test(flavor = "multi_thread")]
async fn the_wizards_jobs_find_api_runs_in_the_given_state_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let run = serde_json::json!({
        "id": "api-run-7", "started_at": "2026-12-03T10:00:00", "finished_at": null,
        "status": "api-committed", "plan_checksum": "c", "source": "s", "target_kind": "modern", "written": []
    });
    let file = state.join("api-run-7.json");
    std::fs::write(&file, run.to_string()).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut app = App::new(Mode::Live, sb.prefill(), sb.plan_options(), Default::default());
    app.state_dir = Some(state.clone());
    let r = Runner::new(app, Terminal::new(TestBackend::new(120, 40)).unwrap(), Theme { color: true }, sb.context());
    // the connections as the runtime hands them to a job, without the Ironic database
    let mut c = r.connections();
    c.ironic_db.clear();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    match bm2ironic::tui::jobs::takeover(c, "api-run-7".into(), vec![], tx, cancel).await {
        bm2ironic::tui::msg::Msg::TakeoverDone(Err(e)) => {
            let e = e.to_string();
            assert!(e.contains("needs the Ironic API") && !e.contains("no run"), "the run was not found: {e}");
        }
        other => panic!("{other:?}"),
    }
}
