//! `bm2ironic proxy` started for a test (`start_proxy`: on a port of the allocator's, its process
//! group stopped when dropped), the Ironic database it serves (`migrated`), calls to it as Nova's
//! clients make them (`call`, `get`, `get_at`, a raw request), what DOMAIN.md section 8 says its answers
//! hold, computed from Ironic's own (`expected`), and the real client, python-novaclient 7.1.2
//! (`novaclient`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bm2ironic::core::demo::fixture::Fixture;
use serde_json::{json, Value};

use super::cli::{bm, command, Outcome};
use super::db::{Backend, TestDb};
use super::keystone::{self, ADMIN_PASSWORD};
use super::ports::port;
use super::process::Guard;

/// The venv of python-novaclient 7.1.2 (scripts/novaclient.sh install).
pub const NOVACLIENT_VENV: &str = "BM2IRONIC_TEST_NOVACLIENT_VENV";

/// A running `bm2ironic proxy`.
pub struct Proxy {
    /// http://127.0.0.1:<port>
    pub base: String,
    /// 127.0.0.1:<port>
    pub addr: String,
    stderr: PathBuf,
    /// its audit log dir
    pub logs: PathBuf,
    process: Guard,
}

impl Proxy {
    /// What it wrote on stderr (its access log among it).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// SIGTERM, and how it ended: its exit code, and how long it took.
    pub fn terminate(&mut self) -> (Option<i32>, Duration) {
        let started = Instant::now();
        let status = self.process.terminate(Duration::from_secs(15));
        assert!(status.is_some(), "the proxy did not stop on SIGTERM");
        (status.unwrap().code(), started.elapsed())
    }
}

/// Starts the proxy on a free loopback port with `args` and `env`, and waits for /healthz to answer
/// (200, or 503 when the Ironic it is given does not answer).
pub async fn start_proxy(args: &[&str], env: &[(&str, &str)]) -> Proxy {
    let dir = tempfile::tempdir().unwrap().keep();
    let stderr = dir.join("proxy.stderr");
    let addr = format!("127.0.0.1:{}", port());
    let mut c = command(&dir.join("logs"));
    c.arg("proxy").args(["--listen", &addr]);
    c.args(args).envs(env.iter().copied()).env("HOME", &dir);
    let process = Guard::spawn(c.stdout(Stdio::null()).stderr(std::fs::File::create(&stderr).unwrap()));
    let p = Proxy { base: format!("http://{addr}"), addr, stderr, logs: dir.join("logs"), process };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = reqwest::get(format!("{}/healthz", p.base)).await {
            if [200, 503].contains(&r.status().as_u16()) {
                return p;
            }
        }
        assert!(Instant::now() < deadline, "the proxy did not come up: {}", p.output());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A migrated Ironic database: `count` generated nodes (every 3rd holds an instance, 2 NICs each).
pub async fn migrated(tag: &str, count: usize) -> Option<(TestDb, TestDb)> {
    let mut f = Fixture::generated(count, 1);
    for n in &mut f.nodes {
        n.pm_address = Some("127.0.0.1".into());
    }
    let src = TestDb::with_fixture(Backend::Sqlite, &format!("{tag}src"), &f).await?;
    let tgt = TestDb::ironic(Backend::Sqlite, &format!("{tag}tgt")).await?;
    let out = bm(["migrate", "--yes", "--default-arch", "x86_64"])
        .args(["--deploy-kernel", "file:///k", "--deploy-ramdisk", "file:///r"])
        // about the proxy, not boots (no TFTP tree): each instance's boot is the operator's word
        .args(["--resolve", "unknown-boot=local-boot"])
        .source(&src)
        .target(&tgt)
        .run();
    assert!(out.success(), "{}", out.stderr);
    Some((src, tgt))
}

/// (status, JSON body) of a request to the proxy.
pub async fn call(method: reqwest::Method, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let (s, b, _) = call_with(method, url, token, body, &[]).await;
    (s, b)
}

/// (status, JSON body, the answer's microversion header) of a request with `headers`.
pub async fn call_with(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value, String) {
    let mut rq = reqwest::Client::new().request(method, url).timeout(Duration::from_secs(30));
    if let Some(t) = token {
        rq = rq.header("X-Auth-Token", t);
    }
    for (k, v) in headers {
        rq = rq.header(*k, *v);
    }
    if let Some(b) = body {
        rq = rq.json(&b);
    }
    let r = rq.send().await.unwrap();
    let s = r.status().as_u16();
    let version =
        r.headers().get("X-OpenStack-Nova-API-Version").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
    let text = r.text().await.unwrap();
    (s, serde_json::from_str(&text).unwrap_or(Value::String(text)), version)
}

/// A GET with a microversion header (`name: value`).
pub async fn get_at(url: &str, token: Option<&str>, header: (&str, &str)) -> (u16, Value, String) {
    call_with(reqwest::Method::GET, url, token, None, &[header]).await
}

/// A token of the demo user (a member of project demo).
pub async fn demo_tok_for(ks: &str) -> String {
    keystone::token(ks, "demo", "demopass", json!({"project": {"name": "demo", "domain": {"id": "default"}}})).await
}

/// Nova's 404 for a method its microversion does not have.
pub fn gone() -> Value {
    json!({"itemNotFound": {"code": 404, "message": "The resource could not be found."}})
}

pub async fn get(url: &str, token: Option<&str>) -> (u16, Value) {
    call(reqwest::Method::GET, url, token, None).await
}

/// The raw answer to `request` sent as is (status line and all), or what went wrong reading it.
pub fn raw(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Ok(_) => String::from_utf8_lossy(&out).to_string(),
        Err(e) if !out.is_empty() => String::from_utf8_lossy(&out).to_string() + &format!(" [{e}]"),
        Err(e) => format!("[read error: {e}]"),
    }
}

/// What DOMAIN.md section 8 says a node looks like, from Ironic's own node (written out here,
/// independently of the proxy's code).
pub fn expected(node: &Value, macs: Option<&[String]>) -> Value {
    let prop = |k: &str| match &node["properties"][k] {
        Value::Null => json!(0),
        v => v.clone(),
    };
    let mut n = json!({"id": node["uuid"], "interfaces": [], "host": "IRONIC MANAGED",
        "task_state": node["provision_state"], "cpus": prop("cpus"), "memory_mb": prop("memory_mb"),
        "disk_gb": prop("local_gb")});
    if let Some(m) = macs {
        n["uuid"] = node["uuid"].clone();
        n["instance_uuid"] = node["instance_uuid"].clone();
        n["interfaces"] = m.iter().map(|a| json!({ "address": a })).collect();
    }
    n
}

/// Ironic's nodes (detail) and each node's port MACs, read directly.
pub async fn ironic_view(
    base: &str,
    token: Option<&str>,
) -> (Vec<Value>, std::collections::HashMap<String, Vec<String>>) {
    let c = reqwest::Client::new();
    let rq = |p: &str| {
        let r = c.get(format!("{base}{p}")).header("X-OpenStack-Ironic-API-Version", "latest");
        match token {
            Some(t) => r.header("X-Auth-Token", t),
            None => r,
        }
    };
    let nodes: Value = rq("/v1/nodes/detail").send().await.unwrap().json().await.unwrap();
    let ports: Value = rq("/v1/ports/detail").send().await.unwrap().json().await.unwrap();
    let mut macs: std::collections::HashMap<String, Vec<String>> = Default::default();
    for p in ports["ports"].as_array().unwrap() {
        macs.entry(p["node_uuid"].as_str().unwrap().into()).or_default().push(p["address"].as_str().unwrap().into());
    }
    (nodes["nodes"].as_array().unwrap().clone(), macs)
}

pub fn sorted_interfaces(mut v: Value) -> Value {
    if let Some(a) = v["node"]["interfaces"].as_array_mut() {
        a.sort_by_key(|i| i["address"].as_str().unwrap_or_default().to_string());
    }
    v
}

/// python-novaclient 7.1.2's `nova` with `args`, as an operator of the project-scoped admin runs it
/// (its token from the Keystone `ks`), against the proxy at `endpoint` (its /v2.1).
pub fn novaclient(venv: &Path, ks: &str, endpoint: &str, args: &[&str]) -> Outcome {
    let mut c = Command::new(venv.join("bin/nova"));
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") || k.starts_with("NOVA") {
            c.env_remove(k);
        }
    }
    c.envs([
        ("OS_AUTH_URL", ks),
        ("OS_USERNAME", "admin"),
        ("OS_PASSWORD", ADMIN_PASSWORD),
        ("OS_PROJECT_NAME", "admin"),
        ("OS_USER_DOMAIN_NAME", "Default"),
        ("OS_PROJECT_DOMAIN_NAME", "Default"),
        ("OS_IDENTITY_API_VERSION", "3"),
        ("PYTHONWARNINGS", "ignore"),
    ])
    .args(["--os-compute-api-version", "2.1", "--endpoint-override", &format!("{endpoint}/v2.1")])
    .args(args);
    Outcome::from(c.output().unwrap())
}
