//! What the REST-API tests share: a real Ironic (PyPI, scripts/ironic.sh) started on a test
//! database, with noauth or behind the test Keystone (scripts/keystone.sh), fake BMCs on 127.0.0.1
//! (scripts/fakebmc.py) whose power changes are collected, and small Keystone admin calls.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The test Keystone's URL (scripts/keystone.sh start).
pub const KEYSTONE_URL: &str = "BM2IRONIC_TEST_KEYSTONE_URL";
pub const ADMIN_PASSWORD: &str = "adminpass";

/// A child process group, killed when dropped (even when the test fails).
pub struct Killed(pub Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let pg = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-s", "TERM", "--", &pg]).status();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // the workers of the group too, even when the leader went first (they hold the port)
        let _ = Command::new("kill").args(["-s", "KILL", "--", &pg]).stderr(Stdio::null()).status();
        let _ = self.0.wait();
    }
}

/// A running Ironic.
pub struct Ironic {
    pub base: String,
    pub dir: PathBuf,
    pub process: Option<Killed>,
}

impl Ironic {
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ironic.log")).unwrap_or_default()
    }
}

/// Instance nodes whose next boot was learned are written with `deploy_interface = ramdisk`
/// (docs/mapping.md, "The next boot"): the conductor must enable it (scripts/ironic.sh's conf may
/// already).
pub fn enable_ramdisk_deploy(conf: &Path) {
    let text = std::fs::read_to_string(conf).unwrap();
    let fixed: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix("enabled_deploy_interfaces = ") {
            Some(v) if !v.split(',').any(|i| i.trim() == "ramdisk") => format!("{l},ramdisk"),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(conf, fixed.join("\n") + "\n").unwrap();
}

/// Starts Ironic on `db_url` (SQLAlchemy form) at 127.0.0.1:`port`; `keystone`: behind it;
/// `sync`: seconds between its power-state syncs.
pub async fn start_ironic(venv: &Path, db_url: &str, port: u16, keystone: Option<&str>, sync: u32) -> Ironic {
    // a port still held (an Ironic of an earlier run shutting down) would answer for the new one
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "127.0.0.1:{port} stays in use: another Ironic runs there");
        std::thread::sleep(Duration::from_millis(200));
    }
    let dir = tempfile::tempdir().unwrap().keep();
    let mut c = Command::new("bash");
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/ironic.sh")).arg("conf").arg(&dir).arg(db_url);
    c.arg(port.to_string()).env("BM2_IRONIC_SYNC_INTERVAL", sync.to_string());
    if let Some(k) = keystone {
        c.env("BM2_IRONIC_KEYSTONE", k);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let conf = String::from_utf8(out.stdout).unwrap().trim().to_string();
    enable_ramdisk_deploy(Path::new(&conf));
    let child = Command::new(venv.join("bin/ironic"))
        .args(["--config-file", &conf])
        .env("PYTHONWARNINGS", "ignore")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("ironic.stderr")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let ironic = Ironic { base: format!("http://127.0.0.1:{port}"), dir, process: Some(Killed(child)) };
    // the conductor is up when the ipmi driver is listed; behind Keystone ask with a system token
    let token = match keystone {
        Some(k) => Some(token(k, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await),
        None => None,
    };
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        let mut rq =
            client.get(format!("{}/v1/drivers", ironic.base)).header("X-OpenStack-Ironic-API-Version", "latest");
        if let Some(t) = &token {
            rq = rq.header("X-Auth-Token", t);
        }
        if let Ok(r) = rq.send().await {
            if r.status().is_success() && r.text().await.unwrap_or_default().contains("\"ipmi\"") {
                return ironic;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!(
        "Ironic did not come up on port {port}:\n{}",
        ironic.log().lines().rev().take(30).collect::<Vec<_>>().join("\n")
    );
}

/// A fake BMC on 127.0.0.1:`port` and the power changes it printed ("power on", "power off").
pub struct Bmc {
    pub lines: Arc<Mutex<Vec<String>>>,
    _proc: Killed,
}

impl Bmc {
    /// `addr`: a loopback address of the test's own (port 623 is the ipmitool default).
    pub fn start(venv: &Path, addr: &str, port: u16, user: &str, password: &str) -> Bmc {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fakebmc.py");
        let mut child = Command::new(venv.join("bin/python"))
            .arg(script)
            .args([&port.to_string(), user, password, addr])
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
        Bmc { lines, _proc: Killed(child) }
    }
    pub fn power_actions(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

/// A Keystone token (the X-Subject-Token) for `user` with `scope`.
pub async fn token(keystone: &str, user: &str, password: &str, scope: Value) -> String {
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}}, "scope": scope}});
    let r = reqwest::Client::new().post(format!("{keystone}/auth/tokens")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "token for {user}");
    r.headers()["x-subject-token"].to_str().unwrap().to_string()
}

/// Registers `url` as the public `baremetal` endpoint of `region` (created if missing).
pub async fn register_baremetal(keystone: &str, region: &str, url: &str) {
    let t = token(keystone, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let c = reqwest::Client::new();
    let call = |m: reqwest::Method, p: &str| c.request(m, format!("{keystone}{p}")).header("X-Auth-Token", &t);
    let _ = call(reqwest::Method::POST, "/regions").json(&json!({"region": {"id": region}})).send().await.unwrap();
    let svcs: Value =
        call(reqwest::Method::GET, "/services?type=baremetal").send().await.unwrap().json().await.unwrap();
    let sid = match svcs["services"].as_array().and_then(|a| a.first()) {
        Some(s) => s["id"].as_str().unwrap().to_string(),
        None => {
            let v: Value = call(reqwest::Method::POST, "/services")
                .json(&json!({"service": {"name": "ironic", "type": "baremetal"}}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["service"]["id"].as_str().unwrap().to_string()
        }
    };
    let r = call(reqwest::Method::POST, "/endpoints")
        .json(&json!({"endpoint": {"service_id": sid, "interface": "public", "url": url, "region_id": region}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
}

/// Revokes `token` in Keystone.
pub async fn revoke(keystone: &str, token: &str) {
    let admin = self::token(keystone, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let r = reqwest::Client::new()
        .delete(format!("{keystone}/auth/tokens"))
        .header("X-Auth-Token", admin)
        .header("X-Subject-Token", token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204, "revoke");
}

/// Every OS_* variable of the caller removed (the tests give their own).
pub fn clear_os(c: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") {
            c.env_remove(k);
        }
    }
    c
}
