//! `migrate --via api` against a real Ironic (PyPI, noauth, SQLite) whose `ipmi` nodes point at a
//! fake BMC on a loopback address (common/api_load.rs): deployed nodes end `active` with their instance,
//! free ones `available`, ports carry their VIFs; a node whose adopt fails (an image_source that does
//! not validate: Nova's image_ref neither a UUID nor a URL) is named with Ironic's error while the rest
//! finish, and fixing the input (Nova's image_ref) and rerunning finishes it; a rerun changes nothing;
//! `verify` exits 0; `rollback` empties Ironic without a single power action reaching the BMC. The
//! wizard's jobs do the same through the API. (Runs that are interrupted: api_load_interrupted.rs.)

use std::path::PathBuf;
use std::time::Duration;

use crate::common::api_load::{expected_state, final_state, uuid, Env, WizardForm, BMC_PASSWORD};
use crate::common::{ironic, read_logs, server_env, Outcome, IRONIC_VENV};
use bm2ironic::core::ironic::target::TargetKind;

#[tokio::test(flavor = "multi_thread")]
async fn api_adopt_flow_failure_fix_rerun_verify_rollback_without_power_actions() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = PathBuf::from(venv);
    let env = Env::start(&venv, 6, "127.0.0.12", Some(6)).await;
    let bad = uuid("bbbbbbbb", 6);

    // node 6's image_ref does not validate: its adopt fails with Ironic's error, the five others finish
    let report = env.files.join("report.md");
    let out = Outcome::of(env.migrate_cmd().arg("--report").arg(&report));
    let t = out.text();
    assert_eq!(out.code, 1, "{t}");
    assert!(t.contains(&format!("FAILED {bad} (nova_bm 6)")) && t.contains("adopt failed"), "{t}");
    assert!(t.contains("Validation of image href no-such-image failed"), "Ironic's own words: {t}");
    // the run report says what happened through the API: which node failed and how to go on
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("partly done through the Ironic API: 5 nodes changed, 1 failed"), "{md}");
    assert!(md.contains("failed through the API, left where it is") && md.contains("no-such-image"), "{md}");
    assert!(!md.contains(BMC_PASSWORD), "{md}");
    let nodes = env.nodes().await;
    assert_eq!(nodes.len(), 6);
    let by = |u: &str| nodes.iter().find(|n| n["uuid"] == u).cloned().unwrap();
    assert_eq!(by(&bad)["provision_state"], "adopt failed");
    let n3 = by(&uuid("bbbbbbbb", 3));
    assert_eq!(
        (n3["provision_state"].as_str(), n3["instance_uuid"].as_str()),
        (Some("active"), Some(uuid("aaaaaaaa", 3).as_str()))
    );
    assert_eq!(n3["resource_class"], "baremetal-gold");
    assert_eq!(n3["driver_info"]["ipmi_password"], "******");
    assert_eq!(n3["extra"]["bm2ironic"]["nova_bm_id"], 3);
    // its next boot, learned from nova baremetal's PXE config and accepted by Ironic 39's adopt: the
    // ramdisk deploy netboots the instance's own kernel and ramdisk with its root (docs/mapping.md)
    let inst = uuid("aaaaaaaa", 3);
    let tree = env.files.join("tftpboot");
    assert_eq!(
        (n3["deploy_interface"].as_str(), n3["boot_interface"].as_str()),
        (Some("ramdisk"), Some("pxe")),
        "{n3}"
    );
    assert_eq!(n3["instance_info"]["kernel"], format!("file://{}/{inst}/kernel", tree.display()));
    assert_eq!(n3["instance_info"]["ramdisk"], format!("file://{}/{inst}/ramdisk", tree.display()));
    let root = bm2ironic::core::demo::fixture::root_uuid_of(&inst);
    assert_eq!(
        n3["instance_info"]["ramdisk_kernel_arguments"],
        format!("root=UUID={root} ro nofb nomodeset vga=normal")
    );
    assert_eq!(n3["properties"]["capabilities"], "boot_mode:bios");
    // a free node keeps Ironic's defaults, but boots BIOS as its machine does (Ironic 39's default
    // is UEFI: docs/mapping.md 2.13)
    let n1 = by(&uuid("bbbbbbbb", 1));
    assert!(n1["deploy_interface"] != "ramdisk" && n1["instance_info"].get("kernel").is_none(), "{n1}");
    assert_eq!(n1["properties"]["capabilities"], "boot_mode:bios", "{n1}");
    // node 3's deploy never finished in nova_bm: adopted, then held in maintenance with the reason
    assert_eq!(n3["maintenance"], true);
    assert!(n3["maintenance_reason"].as_str().is_some_and(|r| r.starts_with("bm2ironic: ")), "{n3}");
    assert_eq!(by(&uuid("bbbbbbbb", 1))["provision_state"], "available");

    // pagination against the real Ironic: three pages of two
    let api = bm2ironic::core::ironic::api::IronicApi::new(&env.ironic.base, None, TargetKind::Modern).unwrap();
    assert_eq!(api.negotiate(None).await.unwrap(), "1.115");
    let all = api.list_all("/v1/nodes", "nodes", 2).await.unwrap();
    let mut listed: Vec<&str> = all.iter().map(|n| n["uuid"].as_str().unwrap()).collect();
    listed.dedup();
    assert_eq!(listed.len(), 6, "{listed:?}");

    // the wizard's API connection test against the same Ironic
    use bm2ironic::tui::app::{Field, FieldKind, Msg};
    match bm2ironic::tui::jobs::test_connection(Field::IronicApi, 0, FieldKind::Http, env.ironic.base.clone()).await {
        Msg::Tested { result: Ok(text), .. } => assert!(text.starts_with("Ironic API 1.115 in "), "{text}"),
        other => panic!("{other:?}"),
    }

    // the same load with another state directory, which does not hold that unfinished run: its
    // nodes are `unrecorded-run` conflicts, not "already migrated" (before: "Nothing to create",
    // exit 0, with node 6 left in `adopt failed`)
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Outcome::of(env.migrate_cmd().env("BM2IRONIC_STATE_DIR", elsewhere.path()));
    assert_eq!(out.code, 3, "{}", out.text());
    assert!(out.text().contains("unrecorded-run") && !out.text().contains("Nothing to create"), "{}", out.text());
    assert_eq!(env.nodes().await.len(), 6, "nothing created");

    // fix the input (Nova's image_ref) and rerun: the failed node is continued, nothing else touched
    let good = format!("file://{}", env.files.join("image.qcow2").display());
    env.nova.exec(&format!("UPDATE instances SET image_ref = '{good}' WHERE image_ref = 'no-such-image'")).await;
    let before: Vec<(String, String)> =
        nodes.iter().map(|n| (n["uuid"].as_str().unwrap().into(), n["updated_at"].to_string())).collect();
    let out = Outcome::of(env.migrate_cmd().arg("--report").arg(&report));
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(out.text().contains("Resuming run"), "{}", out.text());
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("done through the Ironic API: 1 nodes changed"), "{md}");
    assert!(md.contains("OK: ") && md.contains("puts the nodes this run created in maintenance"), "{md}");
    let after = env.nodes().await;
    for (u, upd) in &before {
        if *u != bad {
            let n = after.iter().find(|n| n["uuid"] == u.as_str()).unwrap();
            assert_eq!(&n["updated_at"].to_string(), upd, "{u} untouched by the resume");
        }
    }
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(6));
    let n3 = states.iter().find(|s| s.0 == uuid("bbbbbbbb", 3)).unwrap();
    assert!(n3.4.iter().all(|(_, vif)| vif.as_deref().is_some_and(|v| v.starts_with("cccccccc-"))), "VIFs: {:?}", n3.4);
    assert_eq!(n3.4.len(), 2);

    // a rerun changes nothing
    let out = env.migrate();
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(out.stdout.contains("Nothing to create"), "{}", out.text());
    assert_eq!(final_state(&env).await, states);

    // verify compares the API's view with the plan
    let out = env.run(&["verify"]);
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(
        out.stdout.contains("6 nodes, 12 ports checked against nova_bm and the Ironic API"),
        "an API run is not checked against the database: {}",
        out.text()
    );
    // the run's files (its head, its journal of nodes) and the lock are private and hold no BMC
    // password
    let mut files: Vec<_> = std::fs::read_dir(env.state.path()).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    let names: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(files.len(), 3, "{names:?}");
    let one = |suffix: &str| names.iter().filter(|n| n.ends_with(suffix)).count() == 1;
    assert!(one(".json") && one(".nodes.jsonl") && one(".lock"), "{names:?}");
    use std::os::unix::fs::PermissionsExt;
    for f in &files {
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600, "{}", f.display());
        assert!(!std::fs::read_to_string(f).unwrap().contains(BMC_PASSWORD), "{}", f.display());
    }
    let head = files.iter().find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    assert!(std::fs::read_to_string(head).unwrap().contains("api-committed"));
    assert!(!read_logs(env.logs.path()).contains(BMC_PASSWORD));

    // a change behind our back shows in verify
    reqwest::Client::new()
        .patch(format!("{}/v1/nodes/{}", env.ironic.base, uuid("bbbbbbbb", 1)))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&serde_json::json!([{"op": "add", "path": "/properties/cpus", "value": 64}]))
        .send()
        .await
        .unwrap();
    let out = env.run(&["verify"]);
    assert_eq!(out.code, 4, "{}", out.text());
    assert!(out.stdout.contains("properties"), "{}", out.text());

    // a node's record dropped from the run's journal (issue #50 item 2; before: verify and rollback
    // trusted the record, and the node stayed in Ironic in no record): Ironic's marker still names
    // the run, verify says so, rollback refuses until --force, which removes it too and says so
    let journal = files.iter().find(|p| p.to_string_lossy().ends_with(".nodes.jsonl")).unwrap();
    let dropped = uuid("bbbbbbbb", 2);
    let kept: String = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .filter(|l| !l.contains(&dropped))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(journal, kept).unwrap();
    let out = env.run(&["verify"]);
    assert_eq!(out.code, 4, "{}", out.text());
    assert!(out.stdout.contains(&dropped) && out.stdout.contains("missing from its record"), "{}", out.text());
    let out = Outcome::of(env.cmd(&["rollback", "--yes"]).env_remove("BM2IRONIC_NOVA_DB"));
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.stderr.contains(&dropped) && out.stderr.contains("--force"), "{}", out.text());
    assert_eq!(env.nodes().await.len(), 6, "nothing removed");

    // rollback: maintenance first, then delete; Ironic is empty and the BMC saw no power action
    let out = Outcome::of(env.cmd(&["rollback", "--yes", "--force"]).env_remove("BM2IRONIC_NOVA_DB"));
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(out.stdout.contains("removed 6 nodes"), "{}", out.text());
    assert!(
        out.stdout
            .contains(&format!("removed with --force (marked as this run's, missing from its record): {dropped}")),
        "{}",
        out.stdout
    );
    assert!(env.nodes().await.is_empty());
    assert!(ironic::get(&env.ironic.base, "/v1/ports").await["ports"].as_array().unwrap().is_empty());
    assert!(env.bmc.power_actions().is_empty(), "power actions reached the BMC: {:?}", env.bmc.power_actions());
    let log = env.ironic.log();
    assert!(
        !log.contains("Successfully set node") || !log.contains("power state to power"),
        "no power change in Ironic's log"
    );
}

/// The wizard's API path, its jobs run as the wizard runs them (each ends in the message it
/// reports), against the real Ironic: the load through the API (one node's adopt fails: the job
/// says which run to resume), fixed input and the same job again resumes that run and finishes
/// only that node, then the wizard's verify of the API run and its takeover check of it.
#[tokio::test(flavor = "multi_thread")]
async fn the_wizards_api_load_resume_verify_and_takeover_jobs() {
    use bm2ironic::core::ironic::verdict::{TakeoverEvent, TakeoverState};
    use bm2ironic::core::migrate::events::{LoadEvent, NodeStatus};
    use bm2ironic::tui::app::Msg;
    use bm2ironic::tui::jobs;
    use tokio::sync::mpsc::unbounded_channel;
    use tokio_util::sync::CancellationToken;

    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let env = Env::start(&PathBuf::from(venv), 6, "127.0.0.15", Some(6)).await;
    let bad = uuid("bbbbbbbb", 6);
    // the form as the operator filled it: the run is kept in Ironic's own database
    let WizardForm { connections, opts, decisions } = env.wizard_form(true);

    // one load job: its messages, and the message it ends with
    let load = |connections: jobs::Connections| {
        let (opts, decisions) = (opts.clone(), decisions.clone());
        async move {
            let (tx, mut rx) = unbounded_channel();
            let order =
                jobs::LoadOrder { opts, resolutions: decisions, reviewed: None, rehearse: false, via_api: true };
            let done = jobs::load(connections, order, CancellationToken::new(), tx, None).await;
            let mut seen = Vec::new();
            while let Ok(m) = rx.try_recv() {
                seen.push(m);
            }
            (seen, done)
        }
    };
    let started = |seen: &[Msg]| {
        seen.iter()
            .find_map(|m| match m {
                Msg::Load(LoadEvent::Started { run_id, nodes, .. }) => Some((run_id.clone(), *nodes)),
                _ => None,
            })
            .expect("a Started event")
    };

    let (seen, done) = load(connections.clone()).await;
    let (run, nodes) = started(&seen);
    assert_eq!(nodes, 6);
    let finished = match done {
        Msg::LoadDone(Ok(f)) => f,
        other => panic!("{other:?}"),
    };
    // the outcome the core decided, and the wizard's run report of it, held against what Ironic
    // holds now (before: "committed ... in one transaction" or "failed and rolled back, the target
    // is as it was", every node "not written", while the adopted nodes stayed in Ironic)
    let (kind, why) = finished.outcome.failure().expect("a partial load is not a success");
    assert!(
        kind == bm2ironic::core::kind::Kind::Runtime && why.contains("1 node(s) failed") && why.contains(run.as_str()),
        "{why}"
    );
    let in_ironic = env.nodes().await;
    let marked: Vec<&serde_json::Value> =
        in_ironic.iter().filter(|n| n["extra"]["bm2ironic"]["run"].as_str() == Some(run.as_str())).collect();
    assert_eq!(marked.len(), 6, "every node of the run is in Ironic");
    let settings = connections.settings().unwrap();
    let report = bm2ironic::tui::report::report_of(&settings, &finished, |i| i);
    assert_eq!(report.run.id.as_deref(), Some(run.as_str()));
    assert!(!report.run.committed);
    let line = &report.run.outcome;
    assert!(line.contains("partly done through the Ironic API: 5 nodes changed, 1 failed"), "{line}");
    assert!(line.contains(&format!("{} node(s) of this run are in Ironic", marked.len())), "{line}");
    assert!(!line.contains("transaction") && !line.contains("rolled back"), "{line}");
    for n in &marked {
        let uuid = n["uuid"].as_str().unwrap();
        let row = report.nodes.iter().find(|r| r.uuid.as_deref() == Some(uuid)).expect("a report row per node");
        let want = if n["provision_state"] == "adopt failed" {
            "failed through the API, left where it is"
        } else {
            "written through the API"
        };
        assert!(
            row.outcome.starts_with(want),
            "{uuid} is {} in Ironic, the report says {}",
            n["provision_state"],
            row.outcome
        );
    }
    assert!(report.rollback.iter().any(|r| r.contains("through the Ironic API")), "{:?}", report.rollback);
    assert!(!report.rollback.iter().any(|r| r.contains("one transaction")), "{:?}", report.rollback);
    assert!(
        seen.iter().any(|m| matches!(m, Msg::Load(LoadEvent::Node { uuid, status: NodeStatus::Failed { error }, .. }) if *uuid == bad && error.contains("no-such-image"))),
        "node 6's failure named with Ironic's error"
    );
    // where the time went: every request by kind and the conductor's waits (core/ironic/api/timings.rs)
    let calls = seen
        .iter()
        .find_map(|m| match m {
            Msg::Load(LoadEvent::Timings { calls }) => Some(calls.clone()),
            _ => None,
        })
        .expect("a Timings event before the summary");
    let count = |k: &str| calls.iter().filter(|t| t.kind == k).map(|t| t.count).sum::<u64>();
    assert_eq!(count("POST /v1/nodes"), 6, "{calls:?}");
    assert!(count("PUT /v1/nodes/{id}/states/provision") >= 12, "manage, then adopt or provide: {calls:?}");
    assert_eq!(count("wait → manageable"), 6, "{calls:?}");
    assert_eq!(count("wait → adopt failed"), 1, "{calls:?}");
    assert!(calls.iter().all(|t| t.total_ms > 0.0 && t.max_ms <= t.total_ms), "{calls:?}");
    // the waits: one list request per state a round for all the nodes (load_api/watch.rs), and a
    // node read once when it left its state, not polled (a poll per node per round before)
    let actions = count("PUT /v1/nodes/{id}/states/provision");
    assert!(count("GET /v1/nodes/{id}?…") <= 2 * actions, "{calls:?}");

    // the input fixed, the same job again: the same run, resumed, only node 6 changes
    let good = format!("file://{}", env.files.join("image.qcow2").display());
    env.nova.exec(&format!("UPDATE instances SET image_ref = '{good}' WHERE image_ref = 'no-such-image'")).await;
    let (seen, done) = load(connections.clone()).await;
    assert_eq!(started(&seen).0, run, "the unfinished run is resumed, not a new one started");
    let finished = match done {
        Msg::LoadDone(Ok(f)) => f,
        other => panic!("{other:?}"),
    };
    let summary = finished.summary().expect("counts").clone();
    assert!(summary.committed && summary.errors == 0, "{summary:?}");
    assert_eq!(summary.created, 1, "only the failed node changes: {summary:?}");
    // the report of the run that finished it: done through the API, the resumed nodes written by
    // it (not "already migrated"), and the verification made before the target closed
    let report = bm2ironic::tui::report::report_of(&settings, &finished, |i| i);
    assert!(report.run.committed && report.run.outcome.starts_with("done through the Ironic API"), "{:?}", report.run);
    assert!(report.nodes.iter().all(|r| r.outcome == "written through the API"), "{:?}", report.nodes);
    assert!(report.verify.ran && report.verify.ok, "{:?}", report.verify);
    assert!(report.verify.text.starts_with("6 nodes, 12 ports checked against"), "{:?}", report.verify);
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(6));

    // the wizard's verify step on that run: an API run, checked through the API against nova_bm
    let src = bm2ironic::core::source::nova_bm::NovaBmSource::open(
        &bm2ironic::core::db::url::DbUrl::parse(&env.src.reader_url).unwrap(),
    )
    .await
    .unwrap();
    let inventory = std::sync::Arc::new(src.read_inventory(|_| {}).await.unwrap());
    let settings = connections.settings().unwrap();
    let target = bm2ironic::core::ironic::api::ApiTarget { url: Some(env.ironic.base.clone()), ..Default::default() };
    let v = bm2ironic::core::migrate::steps::verify(
        &settings,
        Some(&run),
        &target,
        env.state.path().to_path_buf(),
        Some(inventory),
    )
    .await
    .unwrap();
    assert_eq!(
        (v.report.nodes_checked, v.report.ports_checked, v.report.differences.len()),
        (6, 12, 0),
        "{:?}",
        v.report.differences
    );

    // its takeover check of the same run: the nodes' power read from the fake BMC through Ironic
    // (node 6, adopted again after its failure, waits for the conductor's next power sync: the check
    // is stopped once the five others are decided)
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let check = tokio::spawn(jobs::takeover(connections.clone(), run.to_string(), vec![], tx, cancel.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while let Ok(Some(m)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        if let Msg::Takeover(TakeoverEvent::Progress(c)) = m {
            if c.taken_over + c.held >= 5 {
                cancel.cancel();
            }
            last = Some(c);
        }
    }
    cancel.cancel();
    let last = last.expect("the takeover's counts reach the wizard");
    assert!(last.taken_over >= 4 && last.held == 1 && last.failing == 0, "{last:?}");
    match check.await.unwrap() {
        Msg::TakeoverDone(Ok(o)) => {
            assert_eq!(o.nodes.len(), 6);
            assert!(o.nodes.iter().all(|n| n.state != TakeoverState::Failed), "{o:?}");
            let held = o.nodes.iter().find(|n| n.uuid == uuid("bbbbbbbb", 3)).unwrap();
            assert_eq!(held.state, TakeoverState::HeldInMaintenance, "node 3 is held, as decided");
        }
        other => panic!("{other:?}"),
    }
}

/// The wizard with the Ironic API and no Ironic database (a drift fixed in #30: its prepare needed
/// the database, so an API-only session could neither plan nor load): it plans against the API's
/// view, loads the plan it showed through the API, keeps the run in the state directory, and its
/// verify step finds the run there.
#[tokio::test(flavor = "multi_thread")]
async fn the_wizard_without_the_ironic_database_plans_loads_and_verifies_through_the_api() {
    use bm2ironic::core::migrate::steps::Planned;
    use bm2ironic::tui::app::Msg;
    use bm2ironic::tui::jobs;
    use tokio::sync::mpsc::unbounded_channel;
    use tokio_util::sync::CancellationToken;

    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let env = Env::start(&PathBuf::from(venv), 3, "127.0.0.16", None).await;
    // the form without the Ironic database: runs are kept in the state directory
    let WizardForm { connections, opts, decisions } = env.wizard_form(false);

    let (tx, _rx) = unbounded_channel();
    let prepared = match jobs::prepare(connections.clone(), opts.clone(), decisions.clone(), false, true, tx).await {
        Msg::Prepared(Ok(p)) => p,
        other => panic!("the wizard plans without the Ironic database: {other:?}"),
    };
    assert_eq!((prepared.plan.summary.create, prepared.plan.blocking()), (3, 0), "{:?}", prepared.plan.summary);

    let (tx, mut rx) = unbounded_channel();
    let reviewed = Some(Planned { redecided: None, prepared: prepared.clone() });
    let order = jobs::LoadOrder { opts, resolutions: decisions, reviewed, rehearse: false, via_api: true };
    let finished = match jobs::load(connections.clone(), order, CancellationToken::new(), tx, None).await {
        Msg::LoadDone(Ok(f)) => f,
        other => panic!("{other:?}"),
    };
    let summary = finished.summary().expect("counts").clone();
    assert!(summary.committed && summary.created == 3 && summary.errors == 0, "{summary:?}");
    assert!(
        std::iter::from_fn(|| rx.try_recv().ok()).any(|m| matches!(m, Msg::Load(_))),
        "progress reached the wizard"
    );
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(3));
    // the run is kept in the state directory (no database to keep it in), where the load's own
    // verification found it before the target closed
    match &finished.outcome.verify {
        Some(Ok(v)) => assert_eq!((v.nodes_checked, v.ports_checked, v.differences.len()), (3, 6, 0), "{v:?}"),
        other => panic!("{other:?}"),
    }
    assert!(env.state.path().join(format!("{}.json", summary.run_id)).is_file());
}
