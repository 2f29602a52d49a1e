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

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{bm2ironic, server_env, Backend, TestDb};
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::{json, Value};

const JUNO_VENV: &str = "BM2IRONIC_TEST_JUNO_VENV";

/// The Juno venv, or None after a loud skip (a failure in CI).
pub(crate) fn juno_venv() -> Option<PathBuf> {
    match std::env::var(JUNO_VENV) {
        Ok(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            crate::common::skip(&format!(
                "{JUNO_VENV} is not set, so the real Juno Ironic is not here: scripts/test.sh installs it (scripts/juno.sh env; docs/juno.md)"
            ));
            None
        }
    }
}

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The URL SQLAlchemy (Juno's) takes for a test database.
pub(crate) fn sqlalchemy_url(db: &TestDb) -> String {
    match db.backend {
        Backend::Sqlite => db.admin_url.clone(),
        Backend::MySql => format!("{}?charset=utf8", db.admin_url.replacen("mysql://", "mysql+pymysql://", 1)),
        Backend::Postgres => unreachable!("Juno on PostgreSQL is not tested"),
    }
}

/// scripts/juno.sh with the venv the environment names.
pub(crate) fn juno_sh(venv: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(repo().join("scripts/juno.sh"))
        .args(args)
        .env("BM2_JUNO_BASE", venv.parent().unwrap())
        .output()
        .unwrap()
}

/// A fresh database with the schema Juno's own `ironic-dbsync upgrade` makes.
pub(crate) async fn dbsync(venv: &Path, backend: Backend, tag: &str) -> TestDb {
    let db = TestDb::create(backend, tag).await.expect("database server configured");
    let out = juno_sh(venv, &["dbsync", &sqlalchemy_url(&db)]);
    assert!(out.status.success(), "juno.sh dbsync: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "487deb87cc9d", "Juno's alembic head");
    db
}

/// What a schema is, as lines that compare: columns (type, nullability, default), indexes and unique
/// constraints (with their columns), foreign keys, CHECK constraints, table options.
async fn shape(db: &TestDb) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |rows: Vec<Vec<String>>, f: &dyn Fn(&[String]) -> String| {
        for r in rows {
            out.insert(f(&r));
        }
    };
    match db.backend {
        Backend::Sqlite => {
            let tables = "FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'";
            add(
                db.rows(&format!("SELECT m.name, p.name, upper(p.type), CAST(p.\"notnull\" AS TEXT), CAST(p.pk AS TEXT), COALESCE(p.dflt_value, '') {tables}")).await,
                &|r| format!("{}.{} {} notnull={} pk={} default={}", r[0], r[1], r[2], r[3], r[4], r[5]),
            );
            // constraint-made unique indexes have generated names: their columns say what they are
            add(
                db.rows("SELECT m.name, il.name, CAST(il.\"unique\" AS TEXT), il.origin, (SELECT group_concat(ii.name, ',') FROM pragma_index_info(il.name) ii) FROM sqlite_master m JOIN pragma_index_list(m.name) il WHERE m.type = 'table'").await,
                &|r| {
                    let name = if r[3] == "c" { r[1].as_str() } else { "-" };
                    format!("{} index {name} unique={} origin={} ({})", r[0], r[2], r[3], r[4])
                },
            );
            add(
                db.rows("SELECT m.name, f.\"from\", f.\"table\", f.\"to\" FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'").await,
                &|r| format!("{} foreign key ({}) -> {}({})", r[0], r[1], r[2], r[3]),
            );
            // CHECK constraints and constraint names live only in the table's SQL
            for r in db.rows("SELECT name, sql FROM sqlite_master WHERE type = 'table'").await {
                let sql = r[1].split_whitespace().collect::<Vec<_>>().join(" ");
                for (i, _) in sql.match_indices("CHECK (") {
                    let body = &sql[i + 6..];
                    let mut depth = 0;
                    let end = body
                        .char_indices()
                        .find(|(_, c)| {
                            depth += match c {
                                '(' => 1,
                                ')' => -1,
                                _ => 0,
                            };
                            depth == 0
                        })
                        .map_or(body.len(), |(k, _)| k + 1);
                    out.insert(format!("{} check {}", r[0], &body[..end]));
                }
                for w in sql.split("CONSTRAINT ").skip(1) {
                    out.insert(format!("{} constraint {}", r[0], w.split_whitespace().next().unwrap_or("")));
                }
            }
        }
        Backend::MySql => {
            let here = "TABLE_SCHEMA = DATABASE()";
            add(
                db.rows(&format!("SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, ''), EXTRA FROM information_schema.COLUMNS WHERE {here}")).await,
                &|r| format!("{}.{} {} nullable={} default={} {}", r[0], r[1], r[2], r[3], r[4], r[5]),
            );
            add(
                db.rows(&format!("SELECT TABLE_NAME, INDEX_NAME, CAST(NON_UNIQUE AS CHAR), GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) FROM information_schema.STATISTICS WHERE {here} GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE")).await,
                &|r| format!("{} index {} non_unique={} ({})", r[0], r[1], r[2], r[3]),
            );
            add(
                db.rows(&format!("SELECT TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE {here} AND REFERENCED_TABLE_NAME IS NOT NULL")).await,
                &|r| format!("{} foreign key {} ({}) -> {}({})", r[0], r[1], r[2], r[3], r[4]),
            );
            // CHECK constraints get generated names (CONSTRAINT_1, ...): their clause says what they are
            add(
                db.rows("SELECT TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE()").await,
                &|r| format!("{} check {}", r[0], r[1]),
            );
            add(
                db.rows(&format!(
                    "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES WHERE {here}"
                ))
                .await,
                &|r| format!("{} engine={} collation={}", r[0], r[1], r[2]),
            );
        }
        Backend::Postgres => unreachable!(),
    }
    out.extend(
        db.rows("SELECT version_num FROM alembic_version").await.into_iter().map(|r| format!("alembic {}", r[0])),
    );
    out
}

/// The shapes' differences, one line each, or nothing.
fn schema_diff(asset: &BTreeSet<String>, juno: &BTreeSet<String>) -> String {
    let mut d = String::new();
    for l in asset.difference(juno) {
        d.push_str(&format!("  only in the asset:       {l}\n"));
    }
    for l in juno.difference(asset) {
        d.push_str(&format!("  only in Juno's dbsync:   {l}\n"));
    }
    d
}

async fn dbsync_schema_is_the_asset(backend: Backend) {
    let Some(venv) = juno_venv() else { return };
    if backend == Backend::MySql && server_env(crate::common::MYSQL_ADMIN).is_none() {
        return;
    }
    let juno = dbsync(&venv, backend, "jdbsync").await;
    let asset = TestDb::juno(backend, "jasset").await.unwrap();
    let (j, a) = (shape(&juno).await, shape(&asset).await);
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

/// Juno's ironic-api on a database; stopped (its whole process group) when dropped.
struct JunoApi {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Drop for JunoApi {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-s", "TERM", "--", &group]).status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-s", "KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

impl JunoApi {
    /// Starts Juno's API alone (reads need no conductor) on a free loopback port.
    async fn start(venv: &Path, db: &TestDb) -> JunoApi {
        use std::os::unix::process::CommandExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap().keep();
        let out = juno_sh(venv, &["conf", dir.to_str().unwrap(), &sqlalchemy_url(db), &port.to_string()]);
        assert!(out.status.success(), "juno.sh conf: {}", String::from_utf8_lossy(&out.stderr));
        let conf = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let child = Command::new(venv.join("bin/ironic-api"))
            .args(["--config-file", &conf])
            .env("PYTHONWARNINGS", "ignore")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let api = JunoApi { child, base: format!("http://127.0.0.1:{port}"), dir };
        for _ in 0..300 {
            if let Ok(r) = reqwest::get(format!("{}/v1", api.base)).await {
                if r.status().is_success() {
                    return api;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let log = std::fs::read_to_string(api.dir.join("ironic.log")).unwrap_or_default();
        panic!("Juno's ironic-api did not answer on port {port}:\n{log}");
    }

    /// GET, the JSON body, or a panic with Juno's answer.
    async fn get(&self, path: &str) -> Value {
        let r = reqwest::get(format!("{}{path}", self.base)).await.unwrap();
        let status = r.status();
        let body = r.text().await.unwrap();
        assert!(status.is_success(), "Juno's API: GET {path}: HTTP {status}: {body}");
        serde_json::from_str(&body).unwrap()
    }
}

/// The small clean cloud of these tests: six nodes on two hosts, IPMI at 127.0.0.1; nodes 3 and 6
/// run instances (their first NIC bound to a VIF); the others are free (node 1's first NIC still
/// names a VIF, which a free node does not keep). Two NICs each.
fn inventory() -> Fixture {
    let mut f = Fixture::generated(6, 2);
    for (iface, vif) in [
        (1, "cccccccc-0000-4000-8000-000000000001"),
        (5, "cccccccc-0000-4000-8000-000000000005"),
        (11, "cccccccc-0000-4000-8000-000000000011"),
    ] {
        f.interfaces.iter_mut().find(|i| i.id == iface).unwrap().vif_uuid = Some(vif.into());
    }
    f
}

/// A Nova database (SQLite) with the instances of `instances`: (nova_bm id, image_ref, root_gb),
/// and the two baremetal nova-computes, stopped long ago.
pub(crate) async fn nova_db(instances: &[(i64, Option<&str>, Option<i64>)]) -> TestDb {
    let t = TestDb::create(Backend::Sqlite, "jnova").await.unwrap();
    let mut sql = vec![
        "CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)".to_string(),
        "CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)".to_string(),
        "INSERT INTO services VALUES (1, 'bm-compute-1', 'nova-compute', 'compute', 9, 0, 0, '2014-09-01 00:00:00', '2014-09-01 00:00:00'), (2, 'bm-compute-2', 'nova-compute', 'compute', 9, 0, 0, '2014-09-01 00:00:00', '2014-09-01 00:00:00')".to_string(),
    ];
    let q = |v: Option<&str>| v.map_or("NULL".to_string(), |v| format!("'{v}'"));
    for (id, image, root) in instances {
        sql.push(format!(
            "INSERT INTO instances VALUES ({id}, 'aaaaaaaa-0000-4000-8000-{id:012}', {}, {}, 0, 'bbbbbbbb-0000-4000-8000-{id:012}', 'bm-compute-{}', 'active', 1, 0)",
            q(*image),
            root.map_or("NULL".to_string(), |r| r.to_string()),
            (id - 1) % 2 + 1
        ));
    }
    for s in sql {
        t.exec(&s).await;
    }
    t
}

pub(crate) const KERNEL: &str = "2bcb0e2e-1d8e-4b3a-9a67-6b0f7c2f1a11";
pub(crate) const RAMDISK: &str = "7c1f4f8e-52b0-4a7e-8a2d-0e0a2f7d3b22";
const ARGS: &[&str] = &["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"];

/// bm2ironic with nova_bm, Nova and the Ironic database given.
/// The copy of nova baremetal's TFTP tree of `inventory()`'s instances, beside the audit log.
fn tftp_tree(logs: &Path) -> std::path::PathBuf {
    let tree = logs.join("tftpboot");
    if !tree.exists() {
        inventory().write_tftp_tree(&tree).unwrap();
    }
    tree
}

pub(crate) fn cli(logs: &Path, src: &TestDb, nova: &TestDb, tgt: &TestDb) -> assert_cmd::Command {
    let mut c = bm2ironic(logs);
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_NOVA_DB", &nova.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .arg("--tftp-root")
        .arg(tftp_tree(logs));
    c
}

pub(crate) fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

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

    let out =
        cli(logs.path(), &src, &nova, &tgt).args(["migrate", "--via", "db", "--yes"]).args(ARGS).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run = tgt.rows("SELECT id FROM bm2ironic_runs").await.remove(0).remove(0);

    let api = JunoApi::start(&venv, &tgt).await;
    let nodes = api.get("/v1/nodes/detail").await;
    let nodes = nodes["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 6, "every node is listed");
    for id in 1..=6 {
        let want = expected_node(id, &run);
        let got = nodes.iter().find(|n| n["uuid"] == want["uuid"]).unwrap_or_else(|| panic!("node {id} not listed"));
        for (field, w) in want.as_object().unwrap() {
            assert_eq!(&got[field], w, "node {id}: {field} as Juno's API shows it");
        }
        // one node alone reads the same
        assert_eq!(&api.get(&format!("/v1/nodes/{}", want["uuid"].as_str().unwrap())).await["extra"], &want["extra"]);
    }

    let ports = api.get("/v1/ports/detail").await;
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
        let own = api.get(&format!("/v1/ports/detail?node_uuid={node_uuid}")).await;
        assert_eq!(own["ports"].as_array().unwrap().len(), 2, "node {id}'s ports");
    }

    // verify through Juno's API: nothing to report
    let out = cli(logs.path(), &src, &nova, &tgt).args(["verify", "--ironic-url", &api.base]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("and the Ironic API: 0 difference(s)"), "{}", text(&out));
    // the flat marker is ours: a second plan finds every node already migrated (none is uuid-in-ironic)
    let out = cli(logs.path(), &src, &nova, &tgt).args(["plan", "--json"]).args(ARGS).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["summary"]["already_migrated"], 6, "{}", plan["conflicts"]);

    // and what the API shows differently is found (a node Juno's API cannot read)
    tgt.exec("UPDATE nodes SET extra = '{\"nested\": {\"a\": 1}}' WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'")
        .await;
    let out = cli(logs.path(), &src, &nova, &tgt).args(["verify", "--ironic-url", &api.base]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(text(&out).contains("HTTP 400"), "{}", text(&out));
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

    let out = cli(logs.path(), &src, &nova, &tgt).args(["plan", "--json"]).args(ARGS).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "blocked: {}", text(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found: Vec<&Value> =
        plan["conflicts"].as_array().unwrap().iter().filter(|c| c["code"] == "incomplete-instance-info").collect();
    assert_eq!(found.len(), 1, "{}", plan["conflicts"]);
    assert_eq!((&found[0]["subject"]["node"]["nova_bm_id"], &found[0]["action"]), (&json!(3), &Value::Null));
    assert!(found[0]["detail"].as_str().unwrap().contains("image_source"), "{}", found[0]);

    let out = cli(logs.path(), &src, &nova, &tgt)
        .args(["migrate", "--yes", "--resolve", "incomplete-instance-info=maintenance"])
        .args(ARGS)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // Juno's API reads the node held in maintenance, the reason in the flat marker
    let api = JunoApi::start(&venv, &tgt).await;
    let n = api.get("/v1/nodes/bbbbbbbb-0000-4000-8000-000000000003").await;
    assert_eq!((&n["provision_state"], &n["maintenance"]), (&json!("active"), &json!(true)));
    assert_eq!(n["instance_info"]["root_gb"], 40);
    assert!(n["instance_info"].get("image_source").is_none());
    let reason = n["extra"]["bm2ironic_maintenance_reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("bm2ironic: instance_info lacks image_source"), "{}", n["extra"]);
    assert_eq!(api.get("/v1/nodes/detail").await["nodes"].as_array().unwrap().len(), 6);
    let n6 = api.get("/v1/nodes/bbbbbbbb-0000-4000-8000-000000000006").await;
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
    let api = JunoApi::start(&venv, &tgt).await;
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .args(["migrate", "--via", "api", "--yes", "--ironic-url", &api.base, "--state-dir"])
        .arg(logs.path().join("state"))
        .args(ARGS)
        .output()
        .unwrap();
    let said = text(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("Juno") && said.contains("1.17") && said.contains("--via db"), "{said}");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0, "nothing written");
}

/// `bm2ironic proxy` over Juno's version-less API (no microversions, no `?fields=`, which Juno
/// answers 400 "Unknown argument"): the proxy reads the detail lists and whole nodes instead, and
/// answers Nova's os-baremetal-nodes calls: the list, a node by uuid with its MACs, a node by its
/// nova_bm integer id (the flat marker).
#[tokio::test(flavor = "multi_thread")]
async fn proxy_reads_the_juno_api() {
    use std::os::unix::process::CommandExt;
    let Some(venv) = juno_venv() else { return };
    let src = TestDb::with_fixture(Backend::Sqlite, "jpsrc", &inventory()).await.unwrap();
    let nova = nova_db(&[(3, Some("glance-image-3"), Some(40)), (6, Some("glance-image-6"), None)]).await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jptgt").await;
    let logs = tempfile::tempdir().unwrap();
    let out =
        cli(logs.path(), &src, &nova, &tgt).args(["migrate", "--via", "db", "--yes"]).args(ARGS).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let api = JunoApi::start(&venv, &tgt).await;
    let stderr = logs.path().join("proxy.stderr");
    let proxy = JunoApi {
        child: Command::new(assert_cmd::cargo::cargo_bin("bm2ironic"))
            .arg("--log-dir")
            .arg(logs.path().join("plogs"))
            .args(["proxy", "--listen", "127.0.0.1:6469", "--auth", "noauth", "--ironic-url", &api.base])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .process_group(0)
            .spawn()
            .unwrap(),
        base: "http://127.0.0.1:6469".into(),
        dir: logs.path().to_path_buf(),
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !reqwest::get(format!("{}/healthz", proxy.base)).await.is_ok_and(|r| r.status().is_success()) {
        assert!(std::time::Instant::now() < deadline, "{}", std::fs::read_to_string(&stderr).unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let list = proxy.get("/v2.1/os-baremetal-nodes").await;
    assert_eq!(list["nodes"].as_array().map(Vec::len), Some(6), "{list}");
    let n3 = "bbbbbbbb-0000-4000-8000-000000000003";
    for id in [n3, "3"] {
        let show = proxy.get(&format!("/v2.1/os-baremetal-nodes/{id}")).await;
        let s = show.to_string();
        assert!(s.contains(n3) && s.contains("52:55:00:00:00:03") && s.contains("52:55:01:00:00:03"), "{id}: {s}");
    }
    // the real client: python-novaclient 7.1.2, its token from the real Keystone (the proxy runs
    // without auth here), `nova baremetal-node-list` and `baremetal-node-show 3`
    let Some(nova_venv) = crate::common::server_env(crate::proxy::NOVACLIENT_VENV) else { return };
    let Some(ks) = crate::common::server_env(crate::api_env::KEYSTONE_URL) else { return };
    let nova = |args: &[&str]| {
        let mut c = Command::new(Path::new(&nova_venv).join("bin/nova"));
        for (k, _) in std::env::vars() {
            if k.starts_with("OS_") || k.starts_with("NOVA") {
                c.env_remove(k);
            }
        }
        c.envs([
            ("OS_AUTH_URL", ks.as_str()),
            ("OS_USERNAME", "admin"),
            ("OS_PASSWORD", crate::api_env::ADMIN_PASSWORD),
            ("OS_PROJECT_NAME", "admin"),
            ("OS_USER_DOMAIN_NAME", "Default"),
            ("OS_PROJECT_DOMAIN_NAME", "Default"),
            ("OS_IDENTITY_API_VERSION", "3"),
            ("PYTHONWARNINGS", "ignore"),
        ])
        .args(["--os-compute-api-version", "2.1", "--endpoint-override", &format!("{}/v2.1", proxy.base)])
        .args(args)
        .output()
        .unwrap()
    };
    let out = nova(&["baremetal-node-list"]);
    assert!(out.status.success(), "{}", text(&out));
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    for id in 1..=6 {
        assert!(listed.contains(&format!("bbbbbbbb-0000-4000-8000-{id:012}")), "node {id}: {listed}");
    }
    let out = nova(&["baremetal-node-show", "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(shown.contains(n3) && shown.contains("52:55:00:00:00:03"), "{shown}");
}
