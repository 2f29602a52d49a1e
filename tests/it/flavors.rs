//! `bm2ironic flavors` on real SQLite, MariaDB and PostgreSQL, with Juno-shaped (instance_types) and
//! modern-shaped (nova_api flavors) tables: the diff changes nothing, --apply changes exactly the
//! baremetal flavors in one transaction, --restore brings back the exact old values.

use crate::common::{bm, bm2ironic, Backend, Outcome, TestDb};

const TS: &str = "'2014-09-01 00:00:00'";

async fn juno_flavors(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "fjuno").await?;
    let (key, ts) = if backend == Backend::MySql {
        ("`key`", "DATETIME")
    } else {
        ("\"key\"", if backend == Backend::Postgres { "TIMESTAMP" } else { "DATETIME" })
    };
    t.exec(&format!("CREATE TABLE instance_types (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255), memory_mb INTEGER, vcpus INTEGER, root_gb INTEGER, flavorid VARCHAR(255), deleted INTEGER, created_at {ts}, updated_at {ts})")).await;
    t.exec(&format!("CREATE TABLE instance_type_extra_specs (id {}, instance_type_id INTEGER, {key} VARCHAR(255), value VARCHAR(255), deleted INTEGER, created_at {ts}, updated_at {ts}, deleted_at {ts})", if backend == Backend::MySql { "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY" } else if backend == Backend::Postgres { "SERIAL PRIMARY KEY" } else { "INTEGER PRIMARY KEY" })).await;
    t.exec(&format!("INSERT INTO instance_types VALUES (1, 'bm.large', 16384, 8, 20, 'bm.large', 0, {TS}, NULL), (2, 'm1.small', 2048, 1, 20, '2', 0, {TS}, NULL)")).await;
    t.exec(&format!(
        "INSERT INTO instance_type_extra_specs (instance_type_id, {key}, value, deleted, created_at) VALUES (1, 'cpu_arch', 'x86_64', 0, {TS}), (1, 'baremetal:deploy_kernel_id', 'old-nova-bm-kernel', 0, {TS}), (1, 'baremetal:deploy_ramdisk_id', 'old-nova-bm-ramdisk', 0, {TS}), (2, 'hw:cpu_policy', 'shared', 0, {TS})"
    ))
    .await;
    Some(t)
}

async fn modern_flavors(backend: Backend) -> Option<TestDb> {
    let t = TestDb::create(backend, "fmod").await?;
    let (key, ts) = if backend == Backend::MySql {
        ("`key`", "DATETIME")
    } else {
        ("\"key\"", if backend == Backend::Postgres { "TIMESTAMP" } else { "DATETIME" })
    };
    let id = if backend == Backend::MySql {
        "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY"
    } else if backend == Backend::Postgres {
        "SERIAL PRIMARY KEY"
    } else {
        "INTEGER PRIMARY KEY"
    };
    t.exec(&format!("CREATE TABLE flavors (id INTEGER NOT NULL PRIMARY KEY, name VARCHAR(255), memory_mb INTEGER, vcpus INTEGER, root_gb INTEGER, flavorid VARCHAR(255), created_at {ts}, updated_at {ts})")).await;
    t.exec(&format!("CREATE TABLE flavor_extra_specs (id {id}, flavor_id INTEGER NOT NULL, {key} VARCHAR(255) NOT NULL, value VARCHAR(255), created_at {ts}, updated_at {ts})")).await;
    t.exec(&format!("INSERT INTO flavors VALUES (1, 'bm.large', 16384, 8, 20, 'bm.large', {TS}, NULL), (2, 'm1.small', 2048, 1, 20, '2', {TS}, NULL)")).await;
    t.exec(&format!(
        "INSERT INTO flavor_extra_specs (flavor_id, {key}, value, created_at) VALUES (1, 'cpu_arch', 'x86_64', {TS}), (1, 'baremetal:deploy_kernel_id', 'old-kernel', {TS}), (1, 'resources:VCPU', '8', {TS}), (2, 'hw:cpu_policy', 'shared', {TS})"
    ))
    .await;
    Some(t)
}

async fn specs(t: &TestDb, table: &str, fk: &str) -> Vec<Vec<String>> {
    let key = if t.backend == Backend::MySql { "`key`" } else { "\"key\"" };
    let cast = |c: &str| {
        if t.backend == Backend::Postgres {
            format!("{c}::text")
        } else if t.backend == Backend::MySql {
            format!("CAST({c} AS CHAR)")
        } else {
            format!("CAST({c} AS TEXT)")
        }
    };
    t.rows(&format!("SELECT {}, {key}, value FROM {table} ORDER BY {fk}, {key}", cast(fk))).await
}

fn run(t: &TestDb, url: &str, args: &[&str]) -> Outcome {
    let _ = t;
    bm(["flavors"]).args(args).env("BM2IRONIC_NOVA_DB", url).run()
}

async fn juno_deploy_images_diff_apply_restore(backend: Backend) {
    let Some(t) = juno_flavors(backend).await else { return };
    let before = specs(&t, "instance_type_extra_specs", "instance_type_id").await;
    let Outcome { code, stdout: out, stderr: err } =
        run(&t, &t.reader_url, &["--deploy-kernel", "ironic-kernel", "--deploy-ramdisk", "ironic-ramdisk"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("old-nova-bm-kernel") && out.contains("ironic-kernel") && out.contains("2 change(s)"),
        "{out}"
    );
    assert!(!out.contains("m1.small"), "only baremetal flavors");
    assert_eq!(specs(&t, "instance_type_extra_specs", "instance_type_id").await, before, "a diff changes nothing");
    let Outcome { code, stdout: out, stderr: err } = run(
        &t,
        &t.admin_url,
        &["--deploy-kernel", "ironic-kernel", "--deploy-ramdisk", "ironic-ramdisk", "--apply", "--yes"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("applied as change set"), "{out}");
    let after = specs(&t, "instance_type_extra_specs", "instance_type_id").await;
    assert!(
        after.contains(&vec!["1".into(), "baremetal:deploy_kernel_id".into(), "ironic-kernel".into()]),
        "{after:?}"
    );
    assert!(after.contains(&vec!["2".into(), "hw:cpu_policy".into(), "shared".into()]));
    let Outcome { code, stderr: err, .. } = run(&t, &t.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        specs(&t, "instance_type_extra_specs", "instance_type_id").await,
        before,
        "restore brings back the exact old values"
    );
}

async fn modern_resource_class_diff_apply_restore(backend: Backend) {
    let Some(t) = modern_flavors(backend).await else { return };
    let before = specs(&t, "flavor_extra_specs", "flavor_id").await;
    let Outcome { code, stdout: out, stderr: err } =
        run(&t, &t.reader_url, &["--resource-class", "baremetal-gold", "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["schema"], "modern");
    let keys: Vec<&str> = doc["changes"].as_array().unwrap().iter().map(|c| c["key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        vec!["resources:CUSTOM_BAREMETAL_GOLD", "resources:VCPU", "resources:MEMORY_MB", "resources:DISK_GB"]
    );
    assert_eq!(doc["changes"][1]["old"], "8", "the old VCPU value is known");
    let Outcome { code, stderr: err, .. } =
        run(&t, &t.admin_url, &["--resource-class", "baremetal-gold", "--apply", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let after = specs(&t, "flavor_extra_specs", "flavor_id").await;
    for (k, v) in [
        ("resources:CUSTOM_BAREMETAL_GOLD", "1"),
        ("resources:VCPU", "0"),
        ("resources:MEMORY_MB", "0"),
        ("resources:DISK_GB", "0"),
    ] {
        assert!(after.contains(&vec!["1".into(), k.into(), v.into()]), "{k}: {after:?}");
    }
    // applying again changes nothing more
    let Outcome { stdout: out, .. } =
        run(&t, &t.admin_url, &["--resource-class", "baremetal-gold", "--apply", "--yes"]);
    assert!(out.contains("0 change(s)"), "{out}");
    let Outcome { code, stderr: err, .. } = run(&t, &t.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(specs(&t, "flavor_extra_specs", "flavor_id").await, before, "restore: VCPU back to 8, added keys gone");
    let Outcome { code, stderr: err, .. } = run(&t, &t.admin_url, &["--restore", "--yes"]);
    assert_eq!(code, 1, "nothing left to restore: {err}");
}

per_backend! {
    juno_deploy_images_diff_apply_restore => super::juno_deploy_images_diff_apply_restore;
    modern_resource_class_diff_apply_restore => super::modern_resource_class_diff_apply_restore;
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_restores_the_flavors_too() {
    use bm2ironic::core::demo::fixture::Fixture;
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "rsrc", &Fixture::generated(4, 1)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "rtgt").await else { return };
    let Some(nova) = juno_flavors(Backend::Sqlite).await else { return };
    let before = specs(&nova, "instance_type_extra_specs", "instance_type_id").await;
    let logs = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .env("BM2IRONIC_NOVA_DB", &nova.admin_url)
            .args(args)
            .output()
            .unwrap()
    };
    assert!(cmd(&["flavors", "--deploy-kernel", "k2", "--deploy-ramdisk", "r2", "--apply", "--yes"]).status.success());
    assert_ne!(specs(&nova, "instance_type_extra_specs", "instance_type_id").await, before);
    // (this Nova DB holds only flavors: the load runs without it)
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["migrate", "--yes", "--default-arch", "x86_64", "--deploy-kernel", "k2", "--deploy-ramdisk", "r2"])
        // about flavors, not boots (no TFTP tree): each instance's boot is the operator's word
        .args(["--resolve", "unknown-boot=local-boot"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = cmd(&["rollback", "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Restored 2 flavor spec(s)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(specs(&nova, "instance_type_extra_specs", "instance_type_id").await, before);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0);
}

/// Modern Nova keeps its flavors in nova_api: the demo's nova DB has none (the message names
/// --nova-api-db), `--nova-api-db` (or its variable) finds them while `--nova-db` still gives the instances.
#[tokio::test(flavor = "multi_thread")]
async fn modern_flavors_come_from_the_nova_api_database() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = bm2ironic::core::demo::sandbox::build(&tmp.path().join("sb")).await.unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["--nova-db", &sb.nova_url, "flavors", "--resource-class", "baremetal"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no flavor tables") && err.contains("--nova-api-db"), "{err}");
    for how in ["flag", "env"] {
        let mut cmd = bm2ironic(logs.path());
        cmd.args(["--nova-db", &sb.nova_url]);
        if how == "flag" {
            cmd.args(["--nova-api-db", &sb.nova_api_url]);
        } else {
            cmd.env("BM2IRONIC_NOVA_API_DB", &sb.nova_api_url);
        }
        let out = cmd.args(["flavors", "--resource-class", "baremetal", "--json"]).output().unwrap();
        assert!(out.status.success(), "{how}: {}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["schema"], "modern", "{how}");
        assert_eq!(doc["changes"].as_array().unwrap().len(), 4, "{how}: {doc}");
    }
    // nova.conf: [database] for the instances, [api_database] for the flavors
    let conf = tmp.path().join("nova.conf");
    std::fs::write(
        &conf,
        format!(
            "[database]\nconnection = {}\n[api_database]\nconnection = {}\n[baremetal]\nsql_connection = {}\n",
            sb.nova_url, sb.nova_api_url, sb.nova_bm_url
        ),
    )
    .unwrap();
    let out = bm2ironic(logs.path())
        .arg("--nova-conf")
        .arg(&conf)
        .args(["flavors", "--resource-class", "baremetal", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
