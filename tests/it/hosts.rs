//! `bm2ironic hosts` on real SQLite, MariaDB and PostgreSQL: nova_bm with two old baremetal compute
//! hosts (one named with an escape sequence and blanks), a Juno-shaped Nova database; the plan
//! changes nothing, --apply moves exactly the migrated nodes' instances in one transaction, a
//! running old host or an instance changed since the plan is refused with nothing written,
//! --restore gives back the very rows (and refuses an instance moved since).

use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::migrate::hosts::{self, HostsError};
use bm2ironic::core::source::model::BmNode;

use crate::common::{bm, Backend, Outcome, TestDb};

const HOSTILE: &str = "bm\u{1b}[31m host 2 ";
const U1: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const U2: &str = "aaaaaaaa-0000-4000-8000-000000000002";
const U3: &str = "aaaaaaaa-0000-4000-8000-000000000003";
const U4: &str = "aaaaaaaa-0000-4000-8000-000000000004";
const I1: &str = "11111111-0000-4000-8000-000000000001";
const I2: &str = "11111111-0000-4000-8000-000000000002";
const I3: &str = "11111111-0000-4000-8000-000000000003";
const I4: &str = "11111111-0000-4000-8000-000000000004";
const TO: &str = "ironic-compute";

fn bm_node(id: i64, uuid: &str, host: &str, instance: Option<&str>, deleted: bool) -> BmNode {
    BmNode {
        id,
        uuid: Some(uuid.into()),
        service_host: Some(host.into()),
        task_state: Some(if instance.is_some() { "active" } else { "deleted" }.into()),
        instance_uuid: instance.map(String::from),
        cpus: Some(4),
        memory_mb: Some(8192),
        local_gb: Some(100),
        pm_address: Some("127.0.0.1".into()),
        pm_user: Some("admin".into()),
        pm_password: Some(Secret::new("bmc-pw")),
        deleted_raw: Some(if deleted { id } else { 0 }),
        deleted,
        ..Default::default()
    }
}

/// nova_bm: node 1 on bm-1 and node 2 on the hostile host hold instances; node 3 is free; node 4
/// is soft-deleted and still names an instance (left alone).
fn nova_bm_fixture() -> Fixture {
    Fixture {
        schema_version: 10,
        nodes: vec![
            bm_node(1, U1, "bm-1", Some(I1), false),
            bm_node(2, &U2.to_uppercase(), HOSTILE, Some(I2), false),
            bm_node(3, U3, "bm-1", None, false),
            bm_node(4, U4, "bm-1", Some(I4), true),
        ],
        interfaces: vec![],
    }
}

/// A Juno-shaped Nova database: the instances and services columns nova-compute and bm2ironic use.
async fn nova_db(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "hosts_nova").await?;
    let ts = if backend == Backend::Postgres { "TIMESTAMP" } else { "DATETIME" };
    let bin = if backend == Backend::MySql { "`binary`" } else { "\"binary\"" };
    t.exec(&format!("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, host VARCHAR(255), node VARCHAR(255), launched_on TEXT, vm_state VARCHAR(255), deleted INTEGER, updated_at {ts})")).await;
    t.exec(&format!("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), {bin} VARCHAR(255), topic VARCHAR(255), disabled BOOLEAN, deleted INTEGER, updated_at {ts})")).await;
    let hostile = HOSTILE.replace('\'', "''");
    t.exec(&format!(
        "INSERT INTO instances VALUES \
         (1, '{I1}', 'img', 10, 0, 'bm-1', '{U1}', 'bm-1', 'active', 0, '2014-10-01 10:00:00'), \
         (2, '{I2}', 'img', 10, 0, '{hostile}', '{}', '{hostile}', 'stopped', 0, '2014-10-02 10:00:00'), \
         (3, '{I3}', 'img', 10, 0, 'kvm-1', 'kvm-1.example', 'kvm-1', 'active', 0, NULL), \
         (4, '{I4}', 'img', 10, 0, 'bm-1', '{U4}', 'bm-1', 'deleted', 4, NULL)",
        U2.to_uppercase()
    ))
    .await;
    t.exec(&format!("INSERT INTO services VALUES (1, 'bm-1', 'nova-compute', 'compute', {f}, 0, '2014-10-01 00:00:00'), (2, '{hostile}', 'nova-compute', 'compute', {f}, 0, '2014-10-01 00:00:00')", f = if backend == Backend::Postgres { "false" } else { "0" })).await;
    let db = t.admin().await;
    t.grant_reader(&db).await;
    db.close().await;
    Some(t)
}

async fn instance_rows(t: &TestDb) -> Vec<Vec<String>> {
    let text = |c: &str| match t.backend {
        Backend::Postgres => format!("{c}::text"),
        Backend::MySql => format!("CAST({c} AS CHAR)"),
        Backend::Sqlite => format!("CAST({c} AS TEXT)"),
    };
    t.rows(&format!(
        "SELECT uuid, host, node, launched_on, vm_state, {}, {} FROM instances ORDER BY id",
        text("deleted"),
        text("updated_at")
    ))
    .await
}

/// An Ironic database (SQLite) that holds the nodes of `uuids`: what `hosts --apply` checks.
async fn ironic_holding(uuids: &[&str]) -> TestDb {
    let t = TestDb::ironic(Backend::Sqlite, "hosts_ironic").await.unwrap();
    for u in uuids {
        t.exec(&format!(
            "INSERT INTO nodes (uuid, version, maintenance, console_enabled) VALUES ('{u}', '1.44', 0, 0)"
        ))
        .await;
    }
    t
}

fn run(src: &TestDb, nova_url: &str, args: &[&str]) -> Outcome {
    run_with(src, nova_url, None, args)
}

fn run_with(src: &TestDb, nova_url: &str, ironic: Option<&str>, args: &[&str]) -> Outcome {
    let c = bm(["hosts"]).args(args).source(src).env("BM2IRONIC_NOVA_DB", nova_url);
    match ironic {
        Some(i) => c.env("BM2IRONIC_IRONIC_DB", i).run(),
        None => c.run(),
    }
}

async fn two_old_hosts_plan_apply_restore(backend: Backend) {
    let Some(bm) = TestDb::with_fixture(backend, "hosts_bm", &nova_bm_fixture()).await else { return };
    let Some(nova) = nova_db(backend).await else { return };
    let before = instance_rows(&nova).await;

    // the plan (read-only user): two instances from two old hosts, the hostile name shown escaped
    let Outcome { code, stdout: out, stderr: err } = run(&bm, &nova.reader_url, &["--to", TO]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 instance(s) to move to ironic-compute from 2 old host(s)"), "{out}");
    assert!(
        out.contains("bm\\x1b[31m host 2 ") && !out.contains('\u{1b}'),
        "the hostile host is named, escaped: {out}"
    );
    let Outcome { code, stdout: out, .. } = run(&bm, &nova.reader_url, &["--to", TO, "--json"]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let moves = doc["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 2, "{doc}");
    assert_eq!(moves[1]["old_host"], HOSTILE);
    assert_eq!(moves[1]["new_node"], U2, "the node is the Ironic node's uuid, lower-cased");
    assert_eq!(instance_rows(&nova).await, before, "a plan changes nothing");

    // apply checks that Ironic holds the nodes: none there (a rollback ran), or no Ironic given
    let empty = ironic_holding(&[]).await;
    let Outcome { code, stderr: err, .. } =
        run_with(&bm, &nova.admin_url, Some(&empty.admin_url), &["--to", TO, "--apply", "--yes"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("Ironic holds no node {U1} for instance {I1}")), "{err}");
    let Outcome { code, stderr: err, .. } = run_with(&bm, &nova.admin_url, None, &["--to", TO, "--apply", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give the Ironic database"), "{err}");

    // the plan skipped one node (Ironic holds only the other): its instance is refused, and can be
    // left out by name, the consequence said (#48 item 8; before: no way but to migrate it)
    let one = ironic_holding(&[U2]).await;
    let Outcome { code, stderr: err, .. } = run_with(&bm, &nova.reader_url, Some(&one.admin_url), &["--to", TO]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("--leave-out {I1}")), "the refusal names the way out: {err}");
    let o = run_with(&bm, &nova.reader_url, Some(&one.admin_url), &["--to", TO, "--leave-out", I1, "--json"]);
    assert_eq!(o.code, 0, "{}", o.text());
    let doc = o.json();
    assert_eq!(doc["moves"].as_array().unwrap().len(), 1, "{doc}");
    let note = doc["notes"].as_array().unwrap().iter().find(|n| n["instance_uuid"] == I1).expect("named");
    assert!(note["reason"].as_str().unwrap().contains("Nova cannot reboot"), "{note}");
    let o = run_with(&bm, &nova.reader_url, Some(&one.admin_url), &["--to", TO, "--leave-out", "nope"]);
    assert_eq!(o.code, 2, "an uuid that names nothing is a mistake: {}", o.text());
    assert_eq!(instance_rows(&nova).await, before, "nothing written");

    // apply: exactly the two instances, host and node
    let ironic = ironic_holding(&[U1, U2]).await;
    let Outcome { code, stdout: out, stderr: err } =
        run_with(&bm, &nova.admin_url, Some(&ironic.admin_url), &["--to", TO, "--apply", "--yes", "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["applied"], true);
    let after = instance_rows(&nova).await;
    assert_eq!(after[0][1..3], [TO.to_string(), U1.to_string()]);
    assert_eq!(after[1][1..3], [TO.to_string(), U2.to_string()]);
    assert_eq!(after[0][3], "bm-1", "launched_on is history: left as it was");
    assert_eq!(after[2], before[2], "an instance no nova_bm node holds is not touched");
    assert_eq!(after[3], before[3], "a soft-deleted node's instance is not touched");
    assert_eq!(after[0][6], before[0][6], "updated_at left as it was");
    let Outcome { code, stdout: out, .. } = run(&bm, &nova.reader_url, &["--to", TO, "--json"]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (doc["moves"].as_array().unwrap().len(), doc["unchanged"].as_u64()),
        (0, Some(2)),
        "applied: nothing left"
    );

    // an instance moved since the change: restore refuses, nothing restored
    nova.exec(&format!("UPDATE instances SET host = 'elsewhere' WHERE uuid = '{I1}'")).await;
    let Outcome { code, stderr: err, .. } = run(&bm, &nova.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("changed since change set"), "{err}");
    assert_eq!(instance_rows(&nova).await[1][1], TO, "nothing restored");
    nova.exec(&format!("UPDATE instances SET host = '{TO}' WHERE uuid = '{I1}'")).await;
    let Outcome { code, stdout: out, stderr: err } = run(&bm, &nova.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("restored the host and node of 2 instance(s)"), "{out}");
    assert_eq!(instance_rows(&nova).await, before, "restore gives back the very rows");
    let Outcome { code, stderr: err, .. } = run(&bm, &nova.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 2, "nothing left to restore: {err}");
}

async fn running_old_host_and_changed_instance_are_refused(backend: Backend) {
    let Some(bm) = TestDb::with_fixture(backend, "hosts_bm2", &nova_bm_fixture()).await else { return };
    let Some(nova) = nova_db(backend).await else { return };
    let before = instance_rows(&nova).await;

    // an instance changed between the plan and the write: the whole change is rolled back
    let nova_db = Db::connect(&DbUrl::parse(&nova.admin_url).unwrap(), Access::ReadWrite).await.unwrap();
    let plan =
        hosts::preview_hosts(&DbUrl::parse(&bm.reader_url).unwrap(), &nova_db, TO, Default::default()).await.unwrap();
    assert_eq!(plan.moves.len(), 2);
    nova.exec(&format!("UPDATE instances SET node = 'rebuilt' WHERE uuid = '{I2}'")).await;
    let e = hosts::apply_hosts(&nova_db, &plan, "test-set").await.unwrap_err();
    assert!(matches!(e, HostsError::ChangedSincePlan { .. }), "{e}");
    nova_db.close().await;
    nova.exec(&format!("UPDATE instances SET node = '{}' WHERE uuid = '{I2}'", U2.to_uppercase())).await;
    assert_eq!(instance_rows(&nova).await, before, "nothing written");

    // a baremetal nova-compute still running on an old host: exit 3, nothing written
    let now = match backend {
        Backend::Postgres => "(now() AT TIME ZONE 'utc')",
        Backend::MySql => "UTC_TIMESTAMP()",
        Backend::Sqlite => "CURRENT_TIMESTAMP",
    };
    nova.exec(&format!("UPDATE services SET updated_at = {now} WHERE host = 'bm-1'")).await;
    let ironic = ironic_holding(&[U1, U2]).await;
    let Outcome { code, stdout: out, stderr: err } =
        run_with(&bm, &nova.admin_url, Some(&ironic.admin_url), &["--to", TO, "--apply", "--yes"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("old host bm-1 sent a heartbeat") && err.contains("Nova counts it down after 60s"), "{err}");
    assert_eq!(instance_rows(&nova).await, before, "nothing written");
    // a hostile new host name is refused, named, never echoed
    let Outcome { code, stderr: err, .. } = run(&bm, &nova.admin_url, &["--to", "new\u{1b}[2J host"]);
    assert_eq!(code, 2);
    assert!(err.contains("blanks or control characters") && !err.contains('\u{1b}'), "{err}");
}

per_backend! {
    two_old_hosts_plan_apply_restore => super::two_old_hosts_plan_apply_restore;
    running_old_host_and_changed_instance_are_refused => super::running_old_host_and_changed_instance_are_refused;
}
