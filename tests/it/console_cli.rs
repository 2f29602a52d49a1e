//! The command line as an operator at 2 a.m. meets it (issue #33): prompts that name what they act
//! on, `--json` that is JSON, times an operator can read.

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::{bm2ironic, Backend, TestDb, STANDARD_RESOLUTIONS};

/// `rollback` names the run it would undo (id, start, nodes) in its prompt; `rollback --list --json`
/// is one JSON document (before: the table); the table's times are to the second, with their zone.
#[tokio::test(flavor = "multi_thread")]
async fn rollback_names_its_run_and_lists_runs_as_json() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "csrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "ctgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(args)
            .output()
            .unwrap()
    };
    let mut migrate = vec!["migrate", "--yes"];
    migrate.extend_from_slice(STANDARD_RESOLUTIONS);
    assert!(run(&migrate).status.success());

    let list = run(&["rollback", "--list", "--json"]);
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&list.stdout).expect("--list --json is JSON");
    let r = &doc["runs"][0];
    let id = r["run_id"].as_str().unwrap().to_string();
    assert_eq!(r["status"], "committed");
    let started = r["started_at"].as_str().unwrap();
    assert!(started.ends_with('Z') && started.len() == 20, "RFC 3339 in UTC, to the second: {started}");

    let table = String::from_utf8_lossy(&run(&["rollback", "--list"]).stdout).into_owned();
    let line = table.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains(" UTC") && !line.contains('.'), "no nanoseconds, the zone said: {line}");

    // no terminal to confirm on: the refusal quotes the prompt, which names the run
    let refused = run(&["rollback"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains(&format!("run {id} of ")) && err.contains(" UTC (") && err.contains("nodes)"), "{err}");
}

/// `wizard --help` lists only what the wizard uses (before: `--json`, which it ignored); `--json`
/// given anyway is refused, naming the commands it is for.
#[test]
fn the_wizard_does_not_offer_json() {
    let logs = tempfile::tempdir().unwrap();
    let help = bm2ironic(logs.path()).args(["wizard", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("--rehearse") && !text.contains("--json"), "{text}");
    let out = bm2ironic(logs.path()).args(["wizard", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--json is for the scriptable commands"));
}
