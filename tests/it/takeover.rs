//! The takeover check against a real Ironic (PyPI ironic==39.0.0 on SQLite) whose `ipmi` nodes point
//! at fake BMCs on 127.0.0.1 (PyPI pyghmi, scripts/fakebmc.py): healthy nodes pass, the machine
//! that was powered off stays off (the 2014 tool would have powered it on), and a node whose BMC
//! stops answering is named.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{bm2ironic, server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::demo::fixture::Fixture;

struct Killed(Child);
/// A fake BMC and the power changes it printed.
type Bmc = (Killed, Arc<Mutex<Vec<String>>>);
impl Drop for Killed {
    fn drop(&mut self) {
        let pg = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-s", "KILL", "--", &pg]).status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A fake BMC; its stdout lines ("power on", "power off") are collected.
fn bmc(venv: &Path, port: u16, password: &str) -> Bmc {
    use std::os::unix::process::CommandExt;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fakebmc.py");
    let mut child = Command::new(venv.join("bin/python"))
        .arg(script)
        .args([&port.to_string(), "admin", password])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().unwrap();
    let l2 = lines.clone();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            l2.lock().unwrap().push(l);
        }
    });
    (Killed(child), lines)
}

async fn api_node(base: &str, uuid: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(format!("{base}/v1/nodes/{uuid}"))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn takeover_passes_on_healthy_nodes_and_names_an_unreachable_bmc() {
    use std::os::unix::process::CommandExt;
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = Path::new(&venv).to_path_buf();
    // three nodes; node 3 holds an instance whose machine is powered off (task_state still 'active')
    let mut f = Fixture::generated(3, 1);
    for n in &mut f.nodes {
        n.pm_password = Some(bm2ironic::core::db::secret::Secret::new(format!("bmc-pass-{}", n.id)));
    }
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "tsrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "ttgt").await else { return };
    let tmp = tempfile::tempdir().unwrap();
    for name in ["deploy.kernel", "deploy.initramfs"] {
        std::fs::write(tmp.path().join(name), b"x").unwrap();
    }
    let logs = tempfile::tempdir().unwrap();
    let k = format!("file://{}", tmp.path().join("deploy.kernel").display());
    let r = format!("file://{}", tmp.path().join("deploy.initramfs").display());
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["migrate", "--yes", "--default-arch", "x86_64", "--deploy-kernel", &k, "--deploy-ramdisk", &r])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // nova_bm knows no IPMI port: give each node its own fake BMC port (an operator edit, after the load)
    let base_port = 16230 + (std::process::id() % 500) as u16 * 4;
    let rows = tgt.rows("SELECT uuid, driver_info FROM nodes ORDER BY id").await;
    assert_eq!(rows.len(), 3);
    for (i, row) in rows.iter().enumerate() {
        let mut di: serde_json::Value = serde_json::from_str(&row[1]).unwrap();
        di["ipmi_port"] = serde_json::json!(base_port + i as u16);
        tgt.exec(&format!("UPDATE nodes SET driver_info = '{}' WHERE uuid = '{}'", di, row[0])).await;
    }
    let uuids: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    let bmcs: Vec<_> = (0..3).map(|i| bmc(&venv, base_port + i as u16, &format!("bmc-pass-{}", i + 1))).collect();
    let mut bmcs: Vec<Option<Bmc>> = bmcs.into_iter().map(Some).collect();
    std::thread::sleep(Duration::from_millis(500));

    // a real Ironic on that database, power sync every 3 s
    let dir = tmp.path().join("ironic");
    let port = 6405u16;
    let conf = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ironic.sh"))
        .args(["conf"])
        .arg(&dir)
        .arg(&tgt.admin_url)
        .arg(port.to_string())
        .env("BM2_IRONIC_SYNC_INTERVAL", "3")
        .output()
        .unwrap();
    let conf = String::from_utf8(conf.stdout).unwrap().trim().to_string();
    let _ironic = Killed(
        Command::new(venv.join("bin/ironic"))
            .args(["--config-file", &conf])
            .env("PYTHONWARNINGS", "ignore")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !reqwest::get(format!("{base}/v1/")).await.map(|r| r.status().is_success()).unwrap_or(false) {
        assert!(Instant::now() < deadline, "Ironic did not start");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ironic_log = dir.join("ironic.log");
    let verify = |extra: &[&str]| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .env("BM2IRONIC_IRONIC_URL", &base)
            .args(["verify", "--takeover", "--timeout", "90s", "--log"])
            .arg(format!("ironic={}", ironic_log.display()))
            .args(extra)
            .output()
            .unwrap()
    };
    let out = verify(&[]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("takeover: 0 of 3 node(s) failed"), "{text}");
    let n3 = api_node(&base, &uuids[2]).await;
    assert_eq!(n3["provision_state"], "active");
    assert_eq!(n3["power_state"], "power off", "the stopped machine is read as off");
    assert!(!bmcs[2].as_ref().unwrap().1.lock().unwrap().iter().any(|l| l == "power on"), "and never powered on");

    // node 2's BMC stops answering: Ironic's power sync fails, the check names the node
    drop(bmcs[1].take());
    let deadline = Instant::now() + Duration::from_secs(120);
    while api_node(&base, &uuids[1]).await["fault"].is_null() {
        assert!(Instant::now() < deadline, "Ironic never noticed the dead BMC");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let out = verify(&["--json"]);
    assert_eq!(out.status.code(), Some(4));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let failed: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "takeover" && v["node"]["state"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{text}");
    assert_eq!(failed[0]["node"]["uuid"], uuids[1].as_str());
    assert!(failed[0]["node"]["problems"][0].as_str().unwrap().contains("power failure"), "{text}");
    assert!(
        failed[0]["node"]["log_errors"].as_array().is_some_and(|a| !a.is_empty()),
        "the related log records are attached: {text}"
    );
}
