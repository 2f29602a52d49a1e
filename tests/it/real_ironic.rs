//! A real Ironic (PyPI ironic==39.0.0, all-in-one, noauth, loopback) reads what `migrate --via db`
//! wrote: every node and port through GET /v1/nodes/detail and /v1/ports/detail, `verify
//! --ironic-url` passes, and Ironic can still create a node afterwards (ids and sequences sane).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{bm2ironic, server_env, Backend, TestDb, IRONIC_VENV, STANDARD_RESOLUTIONS};
use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::Value;

/// The running Ironic; stopped (its whole process group) when dropped, even when the test fails.
struct Ironic {
    child: Child,
    base: String,
    dir: PathBuf,
}

impl Drop for Ironic {
    fn drop(&mut self) {
        let pgid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-s", "TERM", "--", &format!("-{pgid}")]).status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-s", "KILL", "--", &format!("-{pgid}")]).status();
        let _ = self.child.wait();
    }
}

fn sqlalchemy_url(admin_url: &str) -> String {
    let u = DbUrl::parse(admin_url).unwrap();
    match u.backend {
        bm2ironic::core::db::url::Backend::Sqlite => admin_url.to_string(),
        bm2ironic::core::db::url::Backend::MySql => {
            format!("{}?charset=utf8", admin_url.replacen("mysql://", "mysql+pymysql://", 1))
        }
        bm2ironic::core::db::url::Backend::Postgres => admin_url.replacen("postgres://", "postgresql+psycopg2://", 1),
    }
}

async fn start_ironic(venv: &Path, db: &TestDb, port: u16) -> Ironic {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap().keep();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ironic.sh");
    let out = Command::new("bash")
        .arg(script)
        .args(["conf"])
        .arg(&dir)
        .arg(sqlalchemy_url(&db.admin_url))
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let conf = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let child = Command::new(venv.join("bin/ironic"))
        .args(["--config-file", &conf])
        .env("PYTHONWARNINGS", "ignore")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("ironic.stderr")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let ironic = Ironic { child, base: format!("http://127.0.0.1:{port}"), dir };
    let client = reqwest::Client::new();
    for _ in 0..300 {
        let ok = client
            .get(format!("{}/v1/drivers", ironic.base))
            .header("X-OpenStack-Ironic-API-Version", "latest")
            .send()
            .await
            .ok()
            .filter(|r| r.status().is_success());
        if let Some(r) = ok {
            if r.text().await.unwrap_or_default().contains("\"ipmi\"") {
                return ironic;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = std::fs::read_to_string(ironic.dir.join("ironic.log")).unwrap_or_default();
    panic!("Ironic did not come up on port {port}:\n{}", log.lines().rev().take(30).collect::<Vec<_>>().join("\n"));
}

async fn get(base: &str, path: &str) -> Value {
    let r = reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body = r.text().await.unwrap();
    assert!(status.is_success(), "GET {path}: HTTP {status}: {body}");
    serde_json::from_str(&body).unwrap()
}

async fn real_ironic_reads_every_migrated_node_and_port(backend: Backend, port: u16) {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(src) = TestDb::with_fixture(backend, "src", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "api").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let run = |a: Vec<&str>| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(a)
            .output()
            .unwrap()
    };
    let mut a = vec!["plan", "--json"];
    a.extend(STANDARD_RESOLUTIONS);
    let out = run(a);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected: HashMap<String, &Value> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["action"] == "create")
        .map(|n| (n["uuid"].as_str().unwrap().to_string(), n))
        .collect();
    assert_eq!(expected.len(), 11);

    let mut a = vec!["migrate", "--yes"];
    a.extend(STANDARD_RESOLUTIONS);
    let out = run(a);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let ironic = start_ironic(Path::new(&venv), &tgt, port).await;
    let nodes = get(&ironic.base, "/v1/nodes/detail").await;
    let nodes = nodes["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), expected.len(), "every migrated node is listed by the API");
    for n in nodes {
        let uuid = n["uuid"].as_str().unwrap();
        let want = expected.get(uuid).unwrap_or_else(|| panic!("unexpected node {uuid}"));
        assert_eq!(n["provision_state"], want["provision_state"], "{uuid}");
        assert_eq!(n["driver"], "ipmi", "{uuid}");
        assert_eq!(n["maintenance"], want["maintenance"], "{uuid}");
        assert_eq!(n["properties"]["cpu_arch"], "x86_64", "{uuid}");
        assert_eq!(n["driver_info"]["deploy_kernel"], "file:///var/lib/ironic/deploy.kernel");
        if n["uuid"] != "bbbbbbbb-0000-4000-8000-000000000007" {
            assert_eq!(n["driver_info"]["ipmi_password"], "******", "{uuid}: the API masks it, so it is there");
        } else {
            assert!(n["driver_info"].get("ipmi_address").is_none(), "node 7 has no BMC in nova_bm");
        }
    }
    let by_uuid = |u: &str| nodes.iter().find(|n| n["uuid"] == u).unwrap();
    let n1 = by_uuid("bbbbbbbb-0000-4000-8000-000000000001");
    assert_eq!(n1["instance_uuid"], "aaaaaaaa-0000-4000-8000-000000000001");
    assert_eq!(n1["provision_state"], "active");
    assert_eq!(n1["properties"]["cpus"], 8);
    assert_eq!(n1["properties"]["memory_mb"], 16384);
    assert_eq!(n1["instance_info"]["root_gb"], 20);
    assert_eq!(by_uuid("bbbbbbbb-0000-4000-8000-000000000002")["provision_state"], "available");
    let n4 = by_uuid("bbbbbbbb-0000-4000-8000-000000000004");
    assert_eq!((n4["provision_state"].as_str(), n4["maintenance"].as_bool()), (Some("active"), Some(true)));

    let ports = get(&ironic.base, "/v1/ports/detail").await;
    let ports = ports["ports"].as_array().unwrap();
    let got: BTreeSet<String> = ports.iter().map(|p| p["address"].as_str().unwrap().to_string()).collect();
    let want: BTreeSet<String> = expected
        .values()
        .flat_map(|n| n["ports"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, want, "every port, MACs normalised");
    assert!(got.contains("52:54:00:aa:bb:11"));
    let vif_port = ports.iter().find(|p| p["address"] == "52:54:00:00:00:01").unwrap();
    assert_eq!(vif_port["internal_info"]["tenant_vif_port_id"], "cccccccc-0000-4000-8000-000000000001");

    // verify through the API too
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["verify", "--ironic-url", &ironic.base])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("and the Ironic API: 0 difference(s)"));

    // a row the database accepts but the API cannot read is caught by verify through the API only
    tgt.exec("UPDATE nodes SET version = NULL WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'").await;
    let verify = |api: bool| {
        let mut c = bm2ironic(logs.path());
        c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", &tgt.admin_url).arg("verify");
        if api {
            c.args(["--ironic-url", &ironic.base]);
        }
        c.output().unwrap()
    };
    assert_eq!(verify(false).status.code(), Some(0), "the database alone sees nothing wrong");
    let out = verify(true);
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("HTTP 500"), "{}", String::from_utf8_lossy(&out.stdout));
    tgt.exec("UPDATE nodes SET version = '1.44' WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'").await;

    // Ironic can still enroll a node: ids and sequences were left to the database
    let r = reqwest::Client::new()
        .post(format!("{}/v1/nodes", ironic.base))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&serde_json::json!({"driver": "fake-hardware", "name": "enrolled-after-migration"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap_or_default());
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::MySql, 6401).await
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::Postgres, 6402).await
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::Sqlite, 6403).await
}
