//! `no-matching-flavor` on real SQLite, MariaDB and PostgreSQL: `bm2ironic plan` for a Juno target
//! with a Juno-shaped Nova database names each free node that no live flavor fits exactly (Juno's
//! Exact* filters and the `cpu_arch` spec), and only those. The real scheduler's side of it (Juno's
//! nova-scheduler never placing a `nova boot` on such a node) is in juno_nova.rs.

use serde_json::Value;

use crate::common::{bm, Backend, Outcome, TestDb, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

const TS: &str = "'2014-09-01 00:00:00'";

/// nova_bm: nodes 1-6 of `Fixture::generated` on one host, instances on 3 and 6; free 1 and 2 are
/// what flavor bm.large asks for (8 vcpus, 16384 MB, 40 GB), 4 has a larger disk, 5 less memory.
fn inventory() -> Fixture {
    let mut f = Fixture::generated(6, 1);
    for n in &mut f.nodes {
        n.local_gb = Some(40);
        match n.id {
            4 => n.local_gb = Some(500),
            5 => n.memory_mb = Some(12288),
            _ => {}
        }
    }
    f
}

/// A Juno-shaped Nova database: the instances of nodes 3 and 6, no service, and the flavors.
async fn nova(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "fitnova").await?;
    let (q, ts) = match backend {
        Backend::MySql => ('`', "DATETIME"),
        Backend::Postgres => ('"', "TIMESTAMP"),
        Backend::Sqlite => ('"', "DATETIME"),
    };
    let ddl = [
        "CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), deleted INTEGER)".to_string(),
        format!("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), {q}binary{q} VARCHAR(255), disabled BOOLEAN, deleted INTEGER, updated_at {ts})"),
        "CREATE TABLE instance_types (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255), memory_mb INTEGER NOT NULL, vcpus INTEGER NOT NULL, swap INTEGER NOT NULL, root_gb INTEGER, ephemeral_gb INTEGER, disabled BOOLEAN, deleted INTEGER)".to_string(),
        format!("CREATE TABLE instance_type_extra_specs (id INTEGER NOT NULL PRIMARY KEY, instance_type_id INTEGER NOT NULL, {q}key{q} VARCHAR(255), value VARCHAR(255), deleted INTEGER, created_at {ts})"),
    ];
    for s in ddl {
        t.exec(&s).await;
    }
    for id in [3, 6] {
        t.exec(&format!("INSERT INTO instances VALUES ({id}, 'aaaaaaaa-0000-4000-8000-{id:012}', 'image', 40, 0, 'bbbbbbbb-0000-4000-8000-{id:012}', 'bm-compute-1', 'active', 0)")).await;
    }
    let (yes, no) = if backend == Backend::Postgres { ("true", "false") } else { ("1", "0") };
    // bm.large fits 1 and 2; bm.split too (30 + 9 GB + 1 GB of swap); a disabled flavor would fit 4,
    // a deleted one 5; m1.small and a flavor named with a terminal escape fit nothing
    let evil = evil_name(backend);
    t.exec(&format!(
        "INSERT INTO instance_types VALUES (1, 'bm.large', 16384, 8, 0, 40, 0, {no}, 0), (2, 'bm.split', 16384, 8, 1024, 30, 9, {no}, 0), \
         (3, 'bm.disk', 16384, 8, 0, 500, 0, {yes}, 0), (4, 'bm.old', 12288, 8, 0, 40, 0, {no}, 4), (5, 'm1.small', 2048, 1, 0, 20, 0, {no}, 0), \
         (6, {evil}, 1, 1, 0, 1, 0, {no}, 0)"
    ))
    .await;
    t.exec(&format!(
        "INSERT INTO instance_type_extra_specs VALUES (1, 1, 'cpu_arch', 'x86_64', 0, {TS}), (2, 1, 'baremetal:deploy_kernel_id', 'k', 0, {TS}), \
         (3, 2, 'capabilities:cpu_arch', '<or> i686 <or> x86_64', 0, {TS}), (4, 5, 'hw:cpu_policy', 'shared', 0, {TS})"
    ))
    .await;
    Some(t)
}

/// A flavor name holding an OSC sequence (ESC ] 0;owned BEL), as an SQL expression of `backend`.
fn evil_name(backend: Backend) -> String {
    match backend {
        Backend::MySql => "CONCAT('evil', CHAR(27), ']0;owned', CHAR(7))".into(),
        Backend::Postgres => "'evil' || chr(27) || ']0;owned' || chr(7)".into(),
        Backend::Sqlite => "'evil' || char(27) || ']0;owned' || char(7)".into(),
    }
}

fn plan(src: &TestDb, nova: &TestDb, tgt: &TestDb, json: bool) -> Outcome {
    let mut args = vec!["plan"];
    if json {
        args.push("--json");
    }
    bm(args).args(STANDARD_RESOLUTIONS).source(src).nova(Some(nova)).target(tgt).run()
}

/// The nova_bm ids `no-matching-flavor` names, and its conflicts' details.
fn unfit(out: &Outcome) -> (Vec<i64>, Vec<String>) {
    let p: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.text()));
    let c: Vec<&Value> =
        p["conflicts"].as_array().unwrap().iter().filter(|c| c["code"] == "no-matching-flavor").collect();
    for x in &c {
        assert_eq!((x["blocking"].as_bool(), x["action"].as_str()), (Some(false), Some("migrate")), "{x}");
    }
    (
        c.iter().map(|x| x["subject"]["node"]["nova_bm_id"].as_i64().unwrap()).collect(),
        c.iter().map(|x| x["detail"].as_str().unwrap().to_string()).collect(),
    )
}

async fn free_nodes_no_flavor_fits_are_named(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "fitsrc", &inventory()).await else { return };
    let Some(nova) = nova(backend).await else { return };
    let Some(tgt) = TestDb::juno(backend, "fitjuno").await else { return };
    let out = plan(&src, &nova, &tgt, true);
    let (ids, details) = unfit(&out);
    assert_eq!(ids, [4, 5], "{details:?}");
    assert!(details[0].contains("cpus 8, memory_mb 16384, local_gb 500, cpu_arch x86_64"), "{}", details[0]);
    assert!(
        details[0].contains("bm.disk (disabled)") && details[0].contains("bm.large (disk 40+0 GB"),
        "{}",
        details[0]
    );
    assert!(details[1].contains("bm.large (memory_mb 16384)"), "{}", details[1]);
    assert!(!details.iter().any(|d| d.contains("bm.old")), "a deleted flavor is compared: {details:?}");
    // the text plan names them too, the flavor's escape shown, never sent
    let text = plan(&src, &nova, &tgt, false);
    assert!(text.stdout.contains("no-matching-flavor"), "{}", text.text());
    assert!(!text.stdout.contains('\x1b') && !text.stdout.contains('\x07'), "a raw escape: {:?}", text.stdout);

    // one field of one node changed: node 1's memory no longer fits, and it is named
    src.exec("UPDATE bm_nodes SET memory_mb = 16000 WHERE id = 1").await;
    assert_eq!(unfit(&plan(&src, &nova, &tgt, true)).0, [1, 4, 5]);
    // the flavor's arch changed: neither node fits bm.large, node 2 still fits bm.split (<or>)
    let key = if backend == Backend::MySql { "`key`" } else { "\"key\"" };
    nova.exec(&format!("UPDATE instance_type_extra_specs SET value = 'i686' WHERE {key} = 'cpu_arch'")).await;
    assert_eq!(unfit(&plan(&src, &nova, &tgt, true)).0, [1, 4, 5]);
    nova.exec("UPDATE instance_type_extra_specs SET value = 's== aarch64' WHERE instance_type_id = 2").await;
    assert_eq!(unfit(&plan(&src, &nova, &tgt, true)).0, [1, 2, 4, 5]);

    // a modern target schedules by resource class: not checked
    let Some(modern) = TestDb::ironic(backend, "fitmodern").await else { return };
    assert_eq!(unfit(&plan(&src, &nova, &modern, true)).0, Vec::<i64>::new());
}

per_backend! {
    free_nodes_no_flavor_fits_are_named => super::free_nodes_no_flavor_fits_are_named;
}
