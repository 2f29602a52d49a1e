//! Runs hold Ironic's markers above their records (issue #50, items 1 and 2; #47 item 3), on the
//! three backends, through the binary as an operator runs it:
//! - a rollback never removes a node whose marker names another run (before: `rollback --run A`
//!   removed the node run B had written, and said "removed 33 nodes");
//! - a record row that does not read is named: `verify` finds it a difference (and the node marked
//!   as the run's that the record no longer lists), `rollback` refuses until `--force`, which removes
//!   that node too and says so (before: `verify` said "0 difference(s)" and `rollback` marked the
//!   run rolled back with the node left active in Ironic).

use crate::common::{bm, Backend, Outcome, TestDb, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

fn run(args: &[&str], src: &TestDb, tgt: &TestDb) -> Outcome {
    bm(args.iter().chain(STANDARD_RESOLUTIONS.iter().filter(|_| args[0] == "migrate"))).source(src).target(tgt).run()
}

/// The id of the newest run (`rollback --list --json`).
fn newest_run(src: &TestDb, tgt: &TestDb) -> String {
    let r = run(&["rollback", "--list", "--json"], src, tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    r.json()["runs"][0]["run_id"].as_str().expect("a run").to_string()
}

async fn marked_count(tgt: &TestDb, run: &str) -> i64 {
    tgt.scalar_i64(&format!("SELECT COUNT(*) FROM nodes WHERE extra LIKE '%{run}%'")).await
}

async fn a_rollback_never_removes_another_runs_node(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "src", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let r = run(&["migrate", "--yes"], &src, &tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    let a = newest_run(&src, &tgt);
    let written = tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await;
    // one of run A's nodes deleted by hand, then written again by run B
    let node: String = tgt.rows("SELECT uuid FROM nodes ORDER BY id").await[0][0].clone();
    tgt.exec(&format!("DELETE FROM ports WHERE node_id IN (SELECT id FROM nodes WHERE uuid = '{node}')")).await;
    tgt.exec(&format!("DELETE FROM nodes WHERE uuid = '{node}'")).await;
    let r = run(&["migrate", "--yes"], &src, &tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    let b = newest_run(&src, &tgt);
    assert_ne!(a, b);
    assert_eq!(marked_count(&tgt, &b).await, 1, "run B wrote that node only");

    let r = run(&["rollback", "--run", &a, "--yes"], &src, &tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    assert!(r.stdout.contains(&format!("left alone (its marker names another run, or none): {node}")), "{}", r.stdout);
    assert!(r.stdout.contains(&format!("removed {} nodes", written - 1)), "{}", r.stdout);
    let left = tgt.rows("SELECT uuid FROM nodes").await;
    assert_eq!(left, vec![vec![node.clone()]], "run B's node stays");
    let r = run(&["verify", "--run", &b], &src, &tgt);
    assert_eq!(r.code, 0, "run B is whole: {}", r.text());
}

async fn an_unreadable_record_row_stops_verify_and_rollback(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "src", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "tgt").await else { return };
    let r = run(&["migrate", "--yes"], &src, &tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    let id = newest_run(&src, &tgt);
    let written = tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await;
    let cut: String = tgt.rows("SELECT uuid FROM bm2ironic_run_nodes WHERE seq = 0").await[0][0].clone();
    tgt.exec("UPDATE bm2ironic_run_nodes SET record = SUBSTR(record, 1, 100) WHERE seq = 0").await;

    let r = run(&["verify", "--run", &id], &src, &tgt);
    assert_eq!(r.code, 4, "{}", r.text());
    let t = r.text();
    assert!(t.contains("bm2ironic_run_nodes seq 0"), "the row is named: {t}");
    assert!(t.contains(&cut) && t.contains("missing from its record"), "the node Ironic marks as the run's: {t}");

    let r = run(&["rollback", "--run", &id, "--yes"], &src, &tgt);
    assert_eq!(r.code, 1, "{}", r.text());
    assert!(r.stderr.contains("unreadable row(s)") && r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, written, "nothing removed");
    let status = tgt.rows(&format!("SELECT status FROM bm2ironic_runs WHERE id = '{id}'")).await;
    assert_eq!(status[0][0], "committed", "the run is not marked rolled back");

    let r = run(&["rollback", "--run", &id, "--yes", "--force"], &src, &tgt);
    assert_eq!(r.code, 0, "{}", r.text());
    assert!(
        r.stdout.contains(&format!("removed with --force (marked as this run's, missing from its record): {cut}")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("record row skipped with --force"), "{}", r.stdout);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0, "every node of the run removed");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM ports").await, 0);
}

per_backend! {
    a_rollback_never_removes_another_runs_node => super::a_rollback_never_removes_another_runs_node;
    an_unreadable_record_row_stops_verify_and_rollback => super::an_unreadable_record_row_stops_verify_and_rollback;
}
