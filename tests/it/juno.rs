//! The REAL Juno Ironic (openstack/ironic 2014.2, installed by scripts/juno.sh, skipped loudly when
//! `BM2IRONIC_TEST_JUNO_VENV` is not set) against what bm2ironic does for a Juno target, on SQLite
//! and MariaDB:
//! - the schema Juno's own `ironic-dbsync upgrade` makes is the one in assets/ironic/schema-juno.*;
//! - `migrate --via db` into such a database, then Juno's own API reads every node and port as
//!   docs/mapping.md says (flat `extra`, free nodes NULL, `pxe_*` driver and keys, the VIF in
//!   `extra.vif_port_id`, `instance_info.image_source` + `root_gb`), and `verify --ironic-url`
//!   against it finds nothing;
//! - an instance without `image_source` is a blocking conflict for a Juno target;
//! - `migrate --via api` against Juno is refused (no adopt before API 1.17);
//! - `bm2ironic proxy` over Juno's API (no `fields`) answers Nova's os-baremetal-nodes calls, to
//!   HTTP and to python-novaclient 7.1.2.

use std::path::Path;
use std::time::Duration;

use crate::common::ironic::{self, start_ironic, Ironic, IronicOptions, Release};
use crate::common::juno::{cli, dbsync, inventory, juno_venv, nova_db, KERNEL, RAMDISK};
use crate::common::keystone::KEYSTONE_URL;
use crate::common::proxy::{novaclient, start_proxy, NOVACLIENT_VENV};
use crate::common::schema::{schema_diff, shape, ALEMBIC};
use crate::common::{bm, server_env, Backend, TestDb};
use serde_json::{json, Value};

async fn dbsync_schema_is_the_asset(backend: Backend) {
    let Some(venv) = juno_venv() else { return };
    if backend == Backend::MySql && server_env(crate::common::MYSQL_ADMIN).is_none() {
        return;
    }
    let juno = dbsync(&venv, backend, "jdbsync").await;
    let asset = TestDb::juno(backend, "jasset").await.unwrap();
    let (j, a) = (shape(&juno, ALEMBIC).await, shape(&asset, ALEMBIC).await);
    assert!(j.len() > 40, "the schema was read: {j:#?}");
    let file = if backend == Backend::Sqlite { "sqlite" } else { "mysql" };
    let diff = schema_diff(&a, &j);
    assert!(
        diff.is_empty(),
        "assets/ironic/schema-juno.{file}.sql is not what Juno's ironic-dbsync upgrade makes:\n{diff}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::MySql).await
}

/// Juno's API alone (reads need no conductor) on `db`.
async fn juno_api(venv: &Path, db: &TestDb) -> Ironic {
    start_ironic(IronicOptions::juno(venv, &db.admin_url, Release::JunoApi)).await
}

const ARGS: &[&str] = &["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"];

/// Node `id` of `inventory()` as docs/mapping.md says Juno's API must show it after run `run`.
fn expected_node(id: i64, run: &str) -> Value {
    let instance = id % 3 == 0;
    let uuid = |p: &str| format!("{p}-0000-4000-8000-{id:012}");
    let mut extra = json!({"bm2ironic_nova_bm_id": id, "bm2ironic_service_host": format!("bm-compute-{}", (id - 1) % 2 + 1), "bm2ironic_run": run});
    if instance {
        // the learned root uuid, kept where Juno's takeover (LP#1421370) does not overwrite it
        extra["bm2ironic_root_uuid"] = json!(bm2ironic::core::demo::fixture::root_uuid_of(&uuid("aaaaaaaa")));
    }
    json!({
        "uuid": uuid("bbbbbbbb"),
        "instance_uuid": if instance { json!(uuid("aaaaaaaa")) } else { Value::Null },
        "driver": "pxe_ipmitool",
        // Juno returns the password as it is stored
        "driver_info": {"ipmi_address": "127.0.0.1", "ipmi_username": "admin", "ipmi_password": format!("bmc-Secret-{id}"),
                        "pxe_deploy_kernel": KERNEL, "pxe_deploy_ramdisk": RAMDISK},
        "properties": {"cpus": 8, "memory_mb": 16384, "local_gb": 500, "cpu_arch": "x86_64"},
        // Nova's root_gb (node 3: 40), else nova_bm's root_mb / 1024 (20)
        "instance_info": if instance {
            json!({"image_source": format!("glance-image-{id}"), "root_gb": if id == 3 { 40 } else { 20 },
                   // no kernel / ramdisk: the tree's are files, and Juno 2014.2 fetches images from
                   // Glance only (it reads them from the image's kernel_id / ramdisk_id there)
                   "swap_mb": 1024, "ephemeral_gb": 0, "preserve_ephemeral": false})
        } else { json!({}) },
        "provision_state": if instance { json!("active") } else { Value::Null },
        "target_provision_state": null,
        "power_state": null,
        "maintenance": false,
        "console_enabled": false,
        // flat: Juno's API answers 400 to a list holding a nested value
        "extra": extra,
        "created_at": "2014-05-01T10:00:00+00:00",
        "updated_at": format!("2014-06-01T10:{id:02}:00+00:00"),
    })
}

/// The ports of node `id` of `inventory()`: (MAC, extra).
fn expected_ports(id: i64) -> Vec<(String, Value)> {
    (0..2i64)
        .map(|k| {
            let iface = id * 2 - 1 + k;
            let mut extra = json!({"bm2ironic_nova_bm_interface_id": iface});
            if id % 3 == 0 && k == 0 {
                extra["vif_port_id"] = json!(format!("cccccccc-0000-4000-8000-{iface:012}"));
            }
            (format!("52:55:{k:02x}:00:00:{id:02x}"), extra)
        })
        .collect()
}

async fn juno_api_reads_what_was_migrated(backend: Backend) {
    let Some(venv) = juno_venv() else { return };
    let Some(src) = TestDb::with_fixture(backend, "jsrc", &inventory()).await else { return };
    let nova = nova_db(&[(3, Some("glance-image-3"), Some(40)), (6, Some("glance-image-6"), None)]).await;
    let tgt = dbsync(&venv, backend, "jtgt").await;
    let logs = tempfile::tempdir().unwrap();

    let out = cli(logs.path(), &src, &nova, &tgt, ["migrate", "--via", "db", "--yes"]).args(ARGS).run();
    assert!(out.success(), "{}", out.text());
    let run = tgt.rows("SELECT id FROM bm2ironic_runs").await.remove(0).remove(0);

    let api = juno_api(&venv, &tgt).await;
    let nodes = ironic::get_ok_unversioned(&api.base, "/v1/nodes/detail").await;
    let nodes = nodes["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 6, "every node is listed");
    for id in 1..=6 {
        let want = expected_node(id, &run);
        let got = nodes.iter().find(|n| n["uuid"] == want["uuid"]).unwrap_or_else(|| panic!("node {id} not listed"));
        for (field, w) in want.as_object().unwrap() {
            assert_eq!(&got[field], w, "node {id}: {field} as Juno's API shows it");
        }
        // one node alone reads the same
        assert_eq!(
            &ironic::get_ok_unversioned(&api.base, &format!("/v1/nodes/{}", want["uuid"].as_str().unwrap())).await
                ["extra"],
            &want["extra"]
        );
    }

    let ports = ironic::get_ok_unversioned(&api.base, "/v1/ports/detail").await;
    let ports = ports["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 12, "every port is listed");
    for id in 1..=6 {
        let node_uuid = format!("bbbbbbbb-0000-4000-8000-{id:012}");
        for (mac, extra) in expected_ports(id) {
            let p =
                ports.iter().find(|p| p["address"] == mac.as_str()).unwrap_or_else(|| panic!("port {mac} not listed"));
            assert_eq!(p["node_uuid"], node_uuid.as_str(), "port {mac}");
            assert_eq!(p["extra"], extra, "port {mac}: extra (the VIF in vif_port_id, only with the instance)");
        }
        let own = ironic::get_ok_unversioned(&api.base, &format!("/v1/ports/detail?node_uuid={node_uuid}")).await;
        assert_eq!(own["ports"].as_array().unwrap().len(), 2, "node {id}'s ports");
    }

    // verify through Juno's API: nothing to report
    let out = cli(logs.path(), &src, &nova, &tgt, ["verify", "--ironic-url", &api.base]).run();
    assert!(out.success(), "{}", out.text());
    assert!(out.stdout.contains("and the Ironic API: 0 difference(s)"), "{}", out.text());
    // the flat marker is ours: a second plan finds every node already migrated (none is uuid-in-ironic)
    let out = cli(logs.path(), &src, &nova, &tgt, ["plan", "--json"]).args(ARGS).run();
    assert!(out.success(), "{}", out.text());
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(plan["summary"]["already_migrated"], 6, "{}", plan["conflicts"]);

    // and what the API shows differently is found (a node Juno's API cannot read)
    tgt.exec("UPDATE nodes SET extra = '{\"nested\": {\"a\": 1}}' WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'")
        .await;
    let out = cli(logs.path(), &src, &nova, &tgt, ["verify", "--ironic-url", &api.base]).run();
    assert_eq!(out.code, 4, "{}", out.text());
    assert!(out.text().contains("HTTP 400"), "{}", out.text());
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_juno_api_reads_what_was_migrated() {
    juno_api_reads_what_was_migrated(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_juno_api_reads_what_was_migrated() {
    juno_api_reads_what_was_migrated(Backend::MySql).await
}

async fn instance_without_image_source_blocks(backend: Backend) {
    let Some(venv) = juno_venv() else { return };
    let Some(src) = TestDb::with_fixture(backend, "jsrc", &inventory()).await else { return };
    // Nova names no image for node 3's instance
    let nova = nova_db(&[(3, None, Some(40)), (6, Some("glance-image-6"), None)]).await;
    let tgt = dbsync(&venv, backend, "jtgt").await;
    let logs = tempfile::tempdir().unwrap();

    let out = cli(logs.path(), &src, &nova, &tgt, ["plan", "--json"]).args(ARGS).run();
    assert_eq!(out.code, 3, "blocked: {}", out.text());
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    let found: Vec<&Value> =
        plan["conflicts"].as_array().unwrap().iter().filter(|c| c["code"] == "incomplete-instance-info").collect();
    assert_eq!(found.len(), 1, "{}", plan["conflicts"]);
    assert_eq!((&found[0]["subject"]["node"]["nova_bm_id"], &found[0]["action"]), (&json!(3), &Value::Null));
    assert!(found[0]["detail"].as_str().unwrap().contains("image_source"), "{}", found[0]);

    let out =
        cli(logs.path(), &src, &nova, &tgt, ["migrate", "--yes", "--resolve", "incomplete-instance-info=maintenance"])
            .args(ARGS)
            .run();
    assert!(out.success(), "{}", out.text());
    // Juno's API reads the node held in maintenance, the reason in the flat marker
    let api = juno_api(&venv, &tgt).await;
    let n = ironic::get_ok_unversioned(&api.base, "/v1/nodes/bbbbbbbb-0000-4000-8000-000000000003").await;
    assert_eq!((&n["provision_state"], &n["maintenance"]), (&json!("active"), &json!(true)));
    assert_eq!(n["instance_info"]["root_gb"], 40);
    assert!(n["instance_info"].get("image_source").is_none());
    let reason = n["extra"]["bm2ironic_maintenance_reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("bm2ironic: instance_info lacks image_source"), "{}", n["extra"]);
    assert_eq!(ironic::get_ok_unversioned(&api.base, "/v1/nodes/detail").await["nodes"].as_array().unwrap().len(), 6);
    let n6 = ironic::get_ok_unversioned(&api.base, "/v1/nodes/bbbbbbbb-0000-4000-8000-000000000006").await;
    assert_eq!(n6["maintenance"], false, "node 6 has all Juno needs");
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_instance_without_image_source_blocks() {
    instance_without_image_source_blocks(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_instance_without_image_source_blocks() {
    instance_without_image_source_blocks(Backend::MySql).await
}

/// `migrate --via api` against Juno's API: refused before anything is written, saying why (the
/// adopt flow came with API 1.17; Juno has no API versions at all) and what to do (`--via db`).
#[tokio::test(flavor = "multi_thread")]
async fn via_api_is_refused() {
    let Some(venv) = juno_venv() else { return };
    let src = TestDb::with_fixture(Backend::Sqlite, "jsrc", &inventory()).await.unwrap();
    let tgt = dbsync(&venv, Backend::Sqlite, "jtgt").await;
    let api = juno_api(&venv, &tgt).await;
    let logs = tempfile::tempdir().unwrap();
    let out = bm(["migrate", "--via", "api", "--yes", "--ironic-url", &api.base, "--state-dir"])
        .arg(logs.path().join("state"))
        .args(ARGS)
        .logs(logs.path())
        .source(&src)
        .run();
    let said = out.text();
    assert_ne!(out.code, 0, "{said}");
    assert!(said.contains("Juno") && said.contains("1.17") && said.contains("--via db"), "{said}");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0, "nothing written");
}

/// `bm2ironic proxy` over Juno's version-less API (no microversions, no `?fields=`, which Juno
/// answers 400 "Unknown argument"): the proxy reads the detail lists and whole nodes instead, and
/// answers Nova's os-baremetal-nodes calls: the list, a node by uuid with its MACs, a node by its
/// nova_bm integer id (the flat marker).
#[tokio::test(flavor = "multi_thread")]
async fn proxy_reads_the_juno_api() {
    let Some(venv) = juno_venv() else { return };
    let src = TestDb::with_fixture(Backend::Sqlite, "jpsrc", &inventory()).await.unwrap();
    let nova = nova_db(&[(3, Some("glance-image-3"), Some(40)), (6, Some("glance-image-6"), None)]).await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jptgt").await;
    let logs = tempfile::tempdir().unwrap();
    let out = cli(logs.path(), &src, &nova, &tgt, ["migrate", "--via", "db", "--yes"]).args(ARGS).run();
    assert!(out.success(), "{}", out.text());
    let api = juno_api(&venv, &tgt).await;
    let proxy = start_proxy(&["--auth", "noauth", "--ironic-url", &api.base], &[]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !reqwest::get(format!("{}/healthz", proxy.base)).await.is_ok_and(|r| r.status().is_success()) {
        assert!(std::time::Instant::now() < deadline, "{}", proxy.output());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let list = ironic::get_ok_unversioned(&proxy.base, "/v2.1/os-baremetal-nodes").await;
    assert_eq!(list["nodes"].as_array().map(Vec::len), Some(6), "{list}");
    let n3 = "bbbbbbbb-0000-4000-8000-000000000003";
    for id in [n3, "3"] {
        let show = ironic::get_ok_unversioned(&proxy.base, &format!("/v2.1/os-baremetal-nodes/{id}")).await;
        let s = show.to_string();
        assert!(s.contains(n3) && s.contains("52:55:00:00:00:03") && s.contains("52:55:01:00:00:03"), "{id}: {s}");
    }
    // the real client: python-novaclient 7.1.2, its token from the real Keystone (the proxy runs
    // without auth here), `nova baremetal-node-list` and `baremetal-node-show 3`
    let Some(nova_venv) = server_env(NOVACLIENT_VENV) else { return };
    let Some(ks) = server_env(KEYSTONE_URL) else { return };
    let nova = |args: &[&str]| novaclient(Path::new(&nova_venv), &ks, &proxy.base, args);
    let out = nova(&["baremetal-node-list"]);
    assert!(out.success(), "{}", out.text());
    let listed = out.stdout.clone();
    for id in 1..=6 {
        assert!(listed.contains(&format!("bbbbbbbb-0000-4000-8000-{id:012}")), "node {id}: {listed}");
    }
    let out = nova(&["baremetal-node-show", "3"]);
    assert!(out.success(), "{}", out.text());
    let shown = out.stdout.clone();
    assert!(shown.contains(n3) && shown.contains("52:55:00:00:00:03"), "{shown}");
}
