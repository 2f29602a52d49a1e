//! `bm2ironic proxy` against real parts: a real Ironic (PyPI, scripts/ironic.sh) holding nodes that
//! `migrate` wrote, the real test Keystone (scripts/keystone.sh), and the real client
//! python-novaclient 7.1.2 (scripts/novaclient.sh, venv in BM2IRONIC_TEST_NOVACLIENT_VENV).
//!
//! - `proxy_noauth_bodies_mutations_and_robustness`: Ironic with noauth (port 6421). The list and
//!   every show match DOMAIN.md section 8 field by field, computed here from Ironic's own answers;
//!   missing properties are 0; an unknown node is a Nova 404; mutations are 404 naming the Ironic
//!   command (400 with `--mutations-status 400`), and Ironic is unchanged; every node by its nova_bm
//!   integer id (the nested marker and Juno's flat one), an unknown integer a Nova 404, digits that
//!   are a node's name that node, a stale index entry not answered, a duplicated id 409;
//!   microversions 2.1 to 2.35 answer, 2.36 and later (and `latest`) get Nova's 404, a malformed
//!   version 400 and one out of range 406, `/v2/{tenant_id}` ignores them; `/healthz` says whether
//!   Ironic answers (503 for a closed port and, within its 2 s bound, a hung one); path tricks, a
//!   malformed request line and oversized headers are 4xx; a slow client gets 408 while others are served;
//!   Ironic refusing connections is 502 at once; a hung Ironic is 504 at the deadline and the bound
//!   on concurrent calls answers 503 beyond it (the hung Ironic is a loopback socket that accepts and
//!   never answers: the one stand-in here, since a real Ironic cannot be made to hang on purpose);
//!   SIGTERM stops the proxy cleanly.
//! - `proxy_keystone_policy_forwarding_and_novaclient`: Ironic behind Keystone (port 6422). An admin
//!   passes, a member gets 403, a bad, missing or revoked token 401; the caller's token reaches
//!   Ironic (a project-scoped admin sees only its project's node, a system-scoped admin all of
//!   them), and so does the nova_bm id index (a scope's own); a tenant id in the path other than the
//!   token's project is Nova's 400 (a system token's project is None), checked in Nova's order;
//!   `--ironic-token-mode service` shows all nodes to the project-scoped admin; a token revoked at
//!   Keystone is refused at once with `--token-cache-time 0`, accepted from the cache within
//!   `--token-cache-time 3` and refused after it; novaclient 7.1.2 lists, shows and lists interfaces
//!   (by uuid and by nova_bm id), and `baremetal-node-create` gets the 404; no token reaches the
//!   proxy's output or the audit log.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api_env::{self, start_ironic, Killed, ADMIN_PASSWORD, KEYSTONE_URL};
use crate::common::{server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::demo::fixture::Fixture;

/// The venv of python-novaclient 7.1.2 (scripts/novaclient.sh install).
pub const NOVACLIENT_VENV: &str = "BM2IRONIC_TEST_NOVACLIENT_VENV";

/// A running `bm2ironic proxy`.
pub(crate) struct Proxy {
    pub(crate) base: String,
    stderr: PathBuf,
    logs: PathBuf,
    proc: Option<Killed>,
}

impl Proxy {
    pub(crate) fn output(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
    /// SIGTERM, and how it ended.
    fn terminate(&mut self) -> (Option<i32>, Duration) {
        let mut k = self.proc.take().unwrap();
        let started = Instant::now();
        let _ = Command::new("kill").args(["-s", "TERM", &k.0.id().to_string()]).status();
        let deadline = started + Duration::from_secs(15);
        let code = loop {
            if let Ok(Some(s)) = k.0.try_wait() {
                break s.code();
            }
            assert!(Instant::now() < deadline, "the proxy did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        (code, started.elapsed())
    }
}

/// Starts the proxy on 127.0.0.1:`port` with `args` and `env`, and waits for /healthz to answer
/// (200, or 503 when the Ironic it is given does not answer).
pub(crate) async fn start_proxy(port: u16, args: &[&str], env: &[(&str, &str)]) -> Proxy {
    let dir = tempfile::tempdir().unwrap().keep();
    let stderr = dir.join("proxy.stderr");
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("bm2ironic"));
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") || k.starts_with("BM2IRONIC_") {
            c.env_remove(k);
        }
    }
    c.arg("--log-dir").arg(dir.join("logs")).arg("proxy").args(["--listen", &format!("127.0.0.1:{port}")]);
    c.args(args).envs(env.iter().copied()).env("HOME", &dir);
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let p =
        Proxy { base: format!("http://127.0.0.1:{port}"), stderr, logs: dir.join("logs"), proc: Some(Killed(child)) };
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

/// (status, JSON body) of a request to the proxy.
async fn call(method: reqwest::Method, url: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let (s, b, _) = call_with(method, url, token, body, &[]).await;
    (s, b)
}

/// (status, JSON body, the answer's microversion header) of a request with `headers`.
async fn call_with(
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
async fn get_at(url: &str, token: Option<&str>, header: (&str, &str)) -> (u16, Value, String) {
    call_with(reqwest::Method::GET, url, token, None, &[header]).await
}

/// A token of the demo user (a member of project demo).
async fn demo_tok_for(ks: &str) -> String {
    api_env::token(ks, "demo", "demopass", json!({"project": {"name": "demo", "domain": {"id": "default"}}})).await
}

/// Nova's 404 for a method its microversion does not have.
fn gone() -> Value {
    json!({"itemNotFound": {"code": 404, "message": "The resource could not be found."}})
}

async fn get(url: &str, token: Option<&str>) -> (u16, Value) {
    call(reqwest::Method::GET, url, token, None).await
}

/// The raw answer to `request` sent as is (status line and all), or what went wrong reading it.
fn raw(addr: &str, request: &[u8]) -> String {
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
fn expected(node: &Value, macs: Option<&[String]>) -> Value {
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

/// A migrated Ironic database: `count` generated nodes (every 3rd holds an instance, 2 NICs each).
pub(crate) async fn migrated(tag: &str, count: usize) -> Option<(TestDb, TestDb)> {
    let mut f = Fixture::generated(count, 1);
    for n in &mut f.nodes {
        n.pm_address = Some("127.0.0.1".into());
    }
    let src = TestDb::with_fixture(Backend::Sqlite, &format!("{tag}src"), &f).await?;
    let tgt = TestDb::ironic(Backend::Sqlite, &format!("{tag}tgt")).await?;
    let logs = tempfile::tempdir().unwrap();
    let out = crate::common::bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["migrate", "--yes", "--default-arch", "x86_64"])
        .args(["--deploy-kernel", "file:///k", "--deploy-ramdisk", "file:///r"])
        // about the proxy, not boots (no TFTP tree): each instance's boot is the operator's word
        .args(["--resolve", "unknown-boot=local-boot"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some((src, tgt))
}

/// Ironic's nodes (detail) and each node's port MACs, read directly.
async fn ironic_view(base: &str, token: Option<&str>) -> (Vec<Value>, std::collections::HashMap<String, Vec<String>>) {
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

fn sorted_interfaces(mut v: Value) -> Value {
    if let Some(a) = v["node"]["interfaces"].as_array_mut() {
        a.sort_by_key(|i| i["address"].as_str().unwrap_or_default().to_string());
    }
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn proxy_noauth_bodies_mutations_and_robustness() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some((_src, tgt)) = migrated("pxn", 6).await else { return };
    let uuids: Vec<String> =
        tgt.rows("SELECT uuid FROM nodes ORDER BY id").await.into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(uuids.len(), 6);
    // hostile-but-legal data: one node without any properties, one with only some (upstream: 500)
    tgt.exec(&format!("UPDATE nodes SET properties = '{{}}' WHERE uuid = '{}'", uuids[0])).await;
    tgt.exec(&format!("UPDATE nodes SET properties = '{{\"cpus\": 4}}' WHERE uuid = '{}'", uuids[1])).await;
    // the 5th node carries the flat marker of a Juno target (and nova_bm id 77); the 2nd an Ironic
    // name made of digits
    tgt.exec(&format!(
        "UPDATE nodes SET extra = '{{\"bm2ironic_nova_bm_id\": 77, \"bm2ironic_run\": \"r\"}}' WHERE uuid = '{}'",
        uuids[4]
    ))
    .await;
    tgt.exec(&format!("UPDATE nodes SET name = '4242' WHERE uuid = '{}'", uuids[1])).await;
    let ironic = start_ironic(Path::new(&venv), &tgt.admin_url, 6421, None, 3600).await;
    let proxy =
        start_proxy(18774, &["--auth", "noauth", "--ironic-url", &ironic.base, "--header-timeout", "2s"], &[]).await;
    let (inodes, macs) = ironic_view(&ironic.base, None).await;
    assert_eq!(inodes.len(), 6);

    // the list, under both prefixes, field by field
    for prefix in ["/v2/some-tenant", "/v2.1"] {
        let (s, body) = get(&format!("{}{prefix}/os-baremetal-nodes", proxy.base), None).await;
        assert_eq!(s, 200, "{body}");
        let want: Vec<Value> = inodes.iter().map(|n| expected(n, None)).collect();
        assert_eq!(body, json!({ "nodes": want }), "{prefix}");
    }
    // every show, with the ports' MACs and the instance
    let mut with_instance = 0;
    for n in &inodes {
        let u = n["uuid"].as_str().unwrap();
        let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{u}", proxy.base), None).await;
        assert_eq!(s, 200, "{body}");
        let mut m = macs.get(u).cloned().unwrap_or_default();
        m.sort();
        assert_eq!(m.len(), 2, "two ports each");
        assert_eq!(sorted_interfaces(body.clone()), json!({ "node": expected(n, Some(&m)) }), "{u}");
        with_instance += body["node"]["instance_uuid"].is_string() as usize;
    }
    assert_eq!(with_instance, 2, "nodes 3 and 6 hold an instance");

    // nova baremetal's integer ids: every node by the nova_bm id its marker carries (either form),
    // with its interfaces, that id as `id` and the Ironic uuid beside it
    let mut nova_bm_ids = Vec::new();
    for n in &inodes {
        let u = n["uuid"].as_str().unwrap();
        let nb =
            n["extra"]["bm2ironic"]["nova_bm_id"].as_i64().or(n["extra"]["bm2ironic_nova_bm_id"].as_i64()).unwrap();
        nova_bm_ids.push(nb);
        let (s, body) = get(&format!("{}/v2/t/os-baremetal-nodes/{nb}", proxy.base), None).await;
        assert_eq!(s, 200, "{nb}: {body}");
        let mut m = macs[u].clone();
        m.sort();
        let mut want = expected(n, Some(&m));
        want["id"] = json!(nb);
        assert_eq!(sorted_interfaces(body), json!({ "node": want }), "nova_bm id {nb}");
    }
    assert_eq!(nova_bm_ids, vec![1, 2, 3, 4, 77, 6], "the 5th node by its flat marker");
    // an integer no node carries: Nova's 404 (5 is now 77)
    for nb in ["5", "999", "0"] {
        let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{nb}", proxy.base), None).await;
        assert_eq!(
            (s, body),
            (404, json!({"itemNotFound": {"code": 404, "message": format!("Node {nb} could not be found.")}}))
        );
    }
    // digits that are an Ironic node's name and no nova_bm id: that node, by its name
    let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/4242", proxy.base), None).await;
    assert_eq!((s, &body["node"]["id"], &body["node"]["uuid"]), (200, &json!(uuids[1]), &json!(uuids[1])), "{body}");

    // microversions: 2.1 to 2.35 answer, and say which; 2.36 and later (latest too) are Nova's 404
    let l = format!("{}/v2.1/os-baremetal-nodes", proxy.base);
    let sh = format!("{l}/{}", uuids[2]);
    let (s, _, v) = get_at(&l, None, ("X-OpenStack-Nova-API-Version", "2.35")).await;
    assert_eq!((s, v.as_str()), (200, "2.35"));
    let (s, b, v) = get_at(&format!("{l}/3"), None, ("OpenStack-API-Version", "compute 2.20")).await;
    assert_eq!((s, v.as_str(), &b["node"]["id"]), (200, "2.20", &json!(3)), "{b}");
    let (s, _, v) = call_with(reqwest::Method::GET, &l, None, None, &[]).await;
    assert_eq!((s, v.as_str()), (200, "2.1"), "no header: 2.1");
    for (h, val, served) in [
        ("X-OpenStack-Nova-API-Version", "2.36", "2.36"),
        ("OpenStack-API-Version", "compute 2.36", "2.36"),
        ("X-OpenStack-Nova-API-Version", "latest", "2.104"),
        ("OpenStack-API-Version", "volume 3.0, compute 2.104", "2.104"),
    ] {
        for url in [&l, &sh, &format!("{l}/3"), &format!("{}/v2.1/t/os-baremetal-nodes", proxy.base)] {
            let (s, b, v) = get_at(url, None, (h, val)).await;
            assert_eq!((s, b, v.as_str()), (404, gone(), served), "{h}: {val} {url}");
        }
    }
    let (s, b, _) = call_with(
        reqwest::Method::POST,
        &l,
        None,
        Some(json!({"node": {}})),
        &[("X-OpenStack-Nova-API-Version", "2.36")],
    )
    .await;
    assert_eq!((s, b), (404, gone()), "a mutation at 2.36: the API is gone, not refused");
    // the standard header wins over the legacy one; /v2/{tenant_id} ignores both (legacy v2)
    let (s, _, v) = call_with(
        reqwest::Method::GET,
        &l,
        None,
        None,
        &[("OpenStack-API-Version", "compute 2.1"), ("X-OpenStack-Nova-API-Version", "2.36")],
    )
    .await;
    assert_eq!((s, v.as_str()), (200, "2.1"));
    let (s, _, _) =
        get_at(&format!("{}/v2/t/os-baremetal-nodes", proxy.base), None, ("OpenStack-API-Version", "compute 2.50"))
            .await;
    assert_eq!(s, 200, "legacy v2 ignores the version headers");
    // malformed: 400; out of Nova's range: 406 (Nova's words)
    for (h, val) in [("X-OpenStack-Nova-API-Version", "2.x"), ("OpenStack-API-Version", "compute 2.01")] {
        let (s, b, _) = get_at(&l, None, (h, val)).await;
        let bad = val.trim_start_matches("compute ");
        assert_eq!(
            (s, b),
            (
                400,
                json!({"badRequest": {"code": 400, "message": format!("API Version String {bad} is of invalid format. Must be of format MajorNum.MinorNum.")}})
            )
        );
    }
    for val in ["3.0", "2.0", "2.105"] {
        let (s, b, _) = get_at(&sh, None, ("X-OpenStack-Nova-API-Version", val)).await;
        assert_eq!(
            (s, b),
            (
                406,
                json!({"computeFault": {"code": 406, "message": format!("Version {val} is not supported by the API. Minimum is 2.1 and maximum is 2.104.")}})
            )
        );
    }
    // the version document offers the microversions that have the API
    let (s, b) = get(&format!("{}/v2.1", proxy.base), None).await;
    assert_eq!((s, &b["version"]["version"], &b["version"]["min_version"]), (200, &json!("2.35"), &json!("2.1")));

    // /healthz: Ironic reachable
    let (s, b) = get(&format!("{}/healthz", proxy.base), None).await;
    assert_eq!((s, b), (200, json!({"status": "ok", "ironic": "reachable"})));
    let (_, b0) = get(&format!("{}/v2/t/os-baremetal-nodes/{}", proxy.base, uuids[0]), None).await;
    assert_eq!(
        (&b0["node"]["cpus"], &b0["node"]["memory_mb"], &b0["node"]["disk_gb"]),
        (&json!(0), &json!(0), &json!(0))
    );
    let (_, b1) = get(&format!("{}/v2.1/os-baremetal-nodes/{}", proxy.base, uuids[1]), None).await;
    assert_eq!((&b1["node"]["cpus"], &b1["node"]["memory_mb"]), (&json!(4), &json!(0)));

    // an unknown node
    let unknown = "00000000-0000-4000-8000-00000000beef";
    let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{unknown}", proxy.base), None).await;
    assert_eq!(
        (s, body),
        (404, json!({"itemNotFound": {"code": 404, "message": format!("Node {unknown} could not be found.")}}))
    );

    // mutations: 404 naming the Ironic command, nothing changed in Ironic
    let u = &uuids[2];
    let cases = [
        (
            reqwest::Method::POST,
            "/v2.1/os-baremetal-nodes".to_string(),
            Some(json!({"node": {"cpus": 1}})),
            "openstack baremetal node create",
        ),
        (reqwest::Method::DELETE, format!("/v2.1/os-baremetal-nodes/{u}"), None, "openstack baremetal node delete"),
        (
            reqwest::Method::POST,
            format!("/v2/t/os-baremetal-nodes/{u}/action"),
            Some(json!({"add_interface": {"address": "52:54:00:00:00:99"}})),
            "openstack baremetal port create",
        ),
        (
            reqwest::Method::POST,
            format!("/v2.1/os-baremetal-nodes/{u}/action"),
            Some(json!({"remove_interface": {"address": "52:54:00:00:00:99"}})),
            "openstack baremetal port delete",
        ),
    ];
    for (m, path, body, command) in &cases {
        let (s, b) = call(m.clone(), &format!("{}{path}", proxy.base), None, body.clone()).await;
        assert_eq!(s, 404, "{m} {path}: {b}");
        assert!(b["itemNotFound"]["message"].as_str().unwrap().contains(command), "{b}");
    }
    let (after, after_macs) = ironic_view(&ironic.base, None).await;
    assert_eq!(after.len(), 6, "no node created or deleted");
    assert_eq!(after_macs.values().map(Vec::len).sum::<usize>(), 12, "no port created or deleted");

    // path tricks, wrong methods, garbage, oversized heads: 4xx, never 5xx
    let addr = "127.0.0.1:18774";
    for path in [
        "/v2.1/os-baremetal-nodes/..%2F..%2Fv1%2Fnodes".to_string(),
        format!("/v2.1/os-baremetal-nodes/{u}%2Fstates"),
        "/v2.1/os-baremetal-nodes/../../healthz".to_string(),
        "/v2.1/os-baremetal-nodes/%2e%2e".to_string(),
        "/v2.1//os-baremetal-nodes".to_string(),
    ] {
        let r = raw(addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert!(r.starts_with("HTTP/1.1 400"), "{path}: {r}");
        assert!(r.contains("badRequest"), "{r}");
    }
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes/a%20b", proxy.base), None).await;
    assert_eq!(s, 404, "an id Ironic could not hold");
    let (s, b) = call(reqwest::Method::PUT, &format!("{}/v2.1/os-baremetal-nodes/{u}", proxy.base), None, None).await;
    assert_eq!(s, 405, "{b}");
    let (s, _) = get(&format!("{}/v2.1/servers", proxy.base), None).await;
    assert_eq!(s, 404);
    let r = raw(addr, b"GARBAGE\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    let big = format!("GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(70 * 1024));
    let r = raw(addr, big.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431"), "{}", &r[..r.len().min(200)]);
    let started = Instant::now();
    let huge =
        format!("GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(1024 * 1024));
    let r = raw(addr, huge.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431") || r.starts_with("[read error"), "{}", &r[..r.len().min(200)]);
    assert!(!r.contains(" 500 ") && started.elapsed() < Duration::from_secs(10));

    // a slow client (slowloris): 408 after the header deadline (2 s), others served meanwhile
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let started = Instant::now();
        s.write_all(b"GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\n").unwrap();
        let mut out = Vec::new();
        for _ in 0..10 {
            if s.write_all(b"X-A: b\r\n").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
            let mut buf = [0u8; 512];
            s.set_nonblocking(true).unwrap();
            if let Ok(n) = s.read(&mut buf) {
                out.extend_from_slice(&buf[..n]);
                if n == 0 || !out.is_empty() {
                    break;
                }
            }
            s.set_nonblocking(false).unwrap();
        }
        s.set_nonblocking(false).unwrap();
        let _ = s.read_to_end(&mut out);
        (String::from_utf8_lossy(&out).to_string(), started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes", proxy.base), None).await;
    assert_eq!(s, 200, "served while a slow client dribbles");
    let (r, took) = slow.join().unwrap();
    assert!(r.starts_with("HTTP/1.1 408") && r.contains("requestTimeout"), "{r}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // the 6th node now also says nova_bm id 77: a proxy whose index is new finds both and does
    // not choose (409); the first proxy, whose index still says 6 is the 6th node, checks the node
    // and does not answer it for 6 any more
    tgt.exec(&format!(
        "UPDATE nodes SET extra = '{{\"bm2ironic\": {{\"nova_bm_id\": 77}}}}' WHERE uuid = '{}'",
        uuids[5]
    ))
    .await;
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes/6", proxy.base), None).await;
    assert_eq!(s, 404, "a stale index entry is not answered: {b}");

    // --mutations-status 400 (later Nova's answer)
    let p400 =
        start_proxy(18775, &["--auth", "noauth", "--ironic-url", &ironic.base, "--mutations-status", "400"], &[]).await;
    let (s, b) =
        call(reqwest::Method::POST, &format!("{}/v2.1/os-baremetal-nodes", p400.base), None, Some(json!({}))).await;
    assert_eq!(s, 400, "{b}");
    assert!(b["badRequest"]["message"].as_str().unwrap().contains("openstack baremetal node create"), "{b}");
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes", p400.base), None).await;
    assert_eq!(s, 200);
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes/77", p400.base), None).await;
    assert_eq!(s, 409, "{b}");
    let m = b["conflictingRequest"]["message"].as_str().unwrap();
    assert!(m.contains(&uuids[4]) && m.contains(&uuids[5]), "{m}");

    // Ironic refusing connections: 502 at once
    // (port 1, tcpmux: nothing listens there, and no server of another test binding port 0 can
    // be given it, as an ephemeral port freed here could be)
    let closed_url = "http://127.0.0.1:1".to_string();
    let down = start_proxy(18776, &["--auth", "noauth", "--ironic-url", &closed_url], &[]).await;
    let started = Instant::now();
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes", down.base), None).await;
    assert_eq!(s, 502, "{b}");
    assert!(b["computeFault"]["message"].as_str().unwrap().contains("not reachable"), "{b}");
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes/{u}", down.base), None).await;
    assert_eq!(s, 502);
    // /healthz says so (a load balancer takes the proxy out of rotation)
    let (s, b) = get(&format!("{}/healthz", down.base), None).await;
    assert_eq!((s, &b["status"]), (503, &json!("degraded")), "{b}");
    assert!(b["ironic"].as_str().unwrap().starts_with("unreachable: "), "{b}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // a hung Ironic (stand-in: a loopback socket that accepts and never answers): 504 at the
    // deadline; with 2 calls allowed at once, the 3rd and 4th wait and get 503 at the same deadline
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hung_url = format!("http://{}", hung.local_addr().unwrap());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = accepted.clone();
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = hung.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            conns.push(c);
        }
    });
    let slow_p = start_proxy(
        18777,
        &["--auth", "noauth", "--ironic-url", &hung_url, "--ironic-timeout", "2s", "--max-concurrent", "2"],
        &[],
    )
    .await;
    let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    let url = format!("{}/v2.1/os-baremetal-nodes", slow_p.base);
    let calls: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn({
                let u = url.clone();
                async move { get(&u, None).await }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let probe = Instant::now();
    let (s, b) = get(&format!("{}/healthz", slow_p.base), None).await;
    assert_eq!((s, &b["status"]), (503, &json!("degraded")), "the proxy itself answers while Ironic hangs: {b}");
    assert!(b["ironic"].as_str().unwrap().contains("did not answer within 2 s"), "{b}");
    assert!(probe.elapsed() < Duration::from_secs(4), "/healthz is bounded: {:?}", probe.elapsed());
    let mut statuses = Vec::new();
    for c in calls {
        let (s, b) = c.await.unwrap();
        if s == 504 {
            assert!(b["computeFault"]["message"].as_str().unwrap().contains("did not answer"), "{b}");
        }
        statuses.push(s);
    }
    statuses.sort();
    assert_eq!(statuses, vec![503, 503, 504, 504], "two slots: two calls hang until the deadline, two are turned away");
    // the two calls in their slots (and at most one /healthz probe): never more at once
    let opened = accepted.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(opened <= 3, "{opened} connections to Ironic");
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "{took:?}");
    held.abort();

    // SIGTERM: a clean stop; the access log has the requests, never a 5xx from a path trick
    let mut proxy = proxy;
    let (code, took) = proxy.terminate();
    assert_eq!(code, Some(0), "{}", proxy.output());
    assert!(took < Duration::from_secs(5), "{took:?}");
    let out = proxy.output();
    assert!(out.contains("stopped"), "{out}");
    assert!(out.contains("status=404") && out.contains("status=408") && out.contains("status=200"), "{out}");
    let _ = &proxy.logs;
}

#[tokio::test(flavor = "multi_thread")]
async fn proxy_keystone_policy_forwarding_and_novaclient() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(ks) = server_env(KEYSTONE_URL) else { return };
    let Some(nova_venv) = server_env(NOVACLIENT_VENV) else { return };
    let Some((_src, tgt)) = migrated("pxk", 3).await else { return };
    let uuids: Vec<String> =
        tgt.rows("SELECT uuid FROM nodes ORDER BY id").await.into_iter().map(|r| r[0].clone()).collect();
    // project admin owns the first node: a project-scoped admin token sees that one only
    let proj_tok = api_env::token(
        &ks,
        "admin",
        ADMIN_PASSWORD,
        json!({"project": {"name": "admin", "domain": {"id": "default"}}}),
    )
    .await;
    let project_of = |tok: String| {
        let ks = ks.clone();
        async move {
            let r: Value = reqwest::Client::new()
                .get(format!("{ks}/auth/tokens"))
                .header("X-Auth-Token", &tok)
                .header("X-Subject-Token", &tok)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["token"]["project"]["id"].as_str().unwrap().to_string()
        }
    };
    let proj_id = project_of(proj_tok.clone()).await;
    tgt.exec(&format!("UPDATE nodes SET owner = '{proj_id}' WHERE uuid = '{}'", uuids[0])).await;
    let ironic = start_ironic(Path::new(&venv), &tgt.admin_url, 6422, Some(&ks), 3600).await;

    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(
        &clouds,
        format!("clouds:\n  proxy:\n    auth:\n      auth_url: {ks}\n      username: admin\n      password: {ADMIN_PASSWORD}\n      user_domain_name: Default\n      system_scope: all\n"),
    )
    .unwrap();
    let cl = clouds.to_str().unwrap();
    // forward mode, tokens not cached: a revoked token is refused at once
    let fwd = start_proxy(
        18778,
        &["--auth", "keystone", "--os-cloud", "proxy", "--ironic-url", &ironic.base, "--token-cache-time", "0"],
        &[("OS_CLIENT_CONFIG_FILE", cl)],
    )
    .await;
    let list = |p: &str| format!("{p}/v2.1/os-baremetal-nodes");
    let ids = |b: &Value| -> Vec<String> {
        b["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap().to_string()).collect()
    };

    let sys_tok = api_env::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let demo_tok =
        api_env::token(&ks, "demo", "demopass", json!({"project": {"name": "demo", "domain": {"id": "default"}}}))
            .await;
    // system-scoped admin: every node
    let (s, b) = get(&list(&fwd.base), Some(&sys_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), uuids);
    // project-scoped admin: passes the policy, and Ironic, seeing ITS token, shows its node only
    let (s, b) = get(&list(&fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), vec![uuids[0].clone()], "the caller's token reached Ironic");
    let (s, b) = get(&format!("{}/{}", list(&fwd.base), uuids[1]), Some(&proj_tok)).await;
    assert_eq!(s, 404, "Ironic hides the other project's nodes from it: {b}");
    let (s, b) = get(&format!("{}/{}", list(&fwd.base), uuids[1]), Some(&sys_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["node"]["interfaces"].as_array().unwrap().len(), 2);
    // by nova_bm id: each scope has its own index, built with its own token (nova_bm ids 1 to 3)
    let (s, b) = get(&format!("{}/2", list(&fwd.base)), Some(&sys_tok)).await;
    assert_eq!((s, &b["node"]["id"], &b["node"]["uuid"]), (200, &json!(2), &json!(uuids[1])), "{b}");
    let (s, b) = get(&format!("{}/1", list(&fwd.base)), Some(&proj_tok)).await;
    assert_eq!((s, &b["node"]["uuid"]), (200, &json!(uuids[0])), "{b}");
    let (s, b) = get(&format!("{}/2", list(&fwd.base)), Some(&proj_tok)).await;
    assert_eq!(s, 404, "not the project's node: {b}");

    // a tenant id in the path must be the token's project (Nova's 400 and words); a system-scoped
    // token has no project (Nova compares with None); /v2.1 without a tenant id is not checked
    let demo_id = project_of(demo_tok_for(&ks).await).await;
    let (s, b) = get(&format!("{}/v2/{proj_id}/os-baremetal-nodes", fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = get(&format!("{}/v2.1/{proj_id}/os-baremetal-nodes/1", fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    for (path, tok, ctx) in [
        (format!("/v2/{demo_id}/os-baremetal-nodes"), &proj_tok, proj_id.as_str()),
        (format!("/v2.1/{demo_id}/os-baremetal-nodes/{}", uuids[0]), &proj_tok, proj_id.as_str()),
        (format!("/v2/{proj_id}/os-baremetal-nodes"), &sys_tok, "None"),
    ] {
        let pid = path.split('/').nth(2).unwrap().to_string();
        let (s, b) = get(&format!("{}{path}", fwd.base), Some(tok)).await;
        assert_eq!(
            (s, b),
            (
                400,
                json!({"badRequest": {"code": 400, "message": format!("Malformed request URL: URL's project_id '{pid}' doesn't match Context's project_id '{ctx}'")}})
            ),
            "{path}"
        );
    }
    // a member: 403 (Nova's body), and no call reaches Ironic for it
    let (s, b) = get(&list(&fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 403, "{b}");
    assert_eq!(b["forbidden"]["code"], 403, "{b}");
    // Nova's order: the token (401), the version header (400/406), the tenant id (400), the
    // microversion's 404, then the role (403)
    let (s, _) = get(&format!("{}/v2/{demo_id}/os-baremetal-nodes", fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 403, "its own project: the role decides");
    let (s, _) = get(&format!("{}/v2/{proj_id}/os-baremetal-nodes", fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 400, "the tenant id before the role");
    let (s, b, _) = get_at(&list(&fwd.base), Some(&demo_tok), ("X-OpenStack-Nova-API-Version", "2.36")).await;
    assert_eq!((s, b), (404, gone()), "the microversion's 404 before the role");
    let (s, _, _) = get_at(&list(&fwd.base), Some("gAAAAABnot-a-token"), ("X-OpenStack-Nova-API-Version", "2.x")).await;
    assert_eq!(s, 401, "the token before the version header");
    let (s, _, _) = get_at(&list(&fwd.base), Some(&sys_tok), ("X-OpenStack-Nova-API-Version", "2.x")).await;
    assert_eq!(s, 400);
    let (s, _) = call(reqwest::Method::POST, &list(&fwd.base), Some(&demo_tok), Some(json!({}))).await;
    assert_eq!(s, 403, "the policy comes before the mutation's answer");
    // no token, a bad token, a revoked token: 401
    let (s, b) = get(&list(&fwd.base), None).await;
    assert_eq!(s, 401, "{b}");
    let (s, _) = get(&list(&fwd.base), Some("gAAAAABnot-a-token")).await;
    assert_eq!(s, 401);
    let revoked = api_env::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let (s, _) = get(&list(&fwd.base), Some(&revoked)).await;
    assert_eq!(s, 200, "valid before the revocation");
    api_env::revoke(&ks, &revoked).await;
    let (s, b) = get(&list(&fwd.base), Some(&revoked)).await;
    assert_eq!(s, 401, "revoked: {b}");

    // service mode: the proxy's own system token, so the project-scoped admin sees every node;
    // tokens cached 6 s (room for a slow, loaded machine)
    let svc = start_proxy(
        18779,
        &[
            "--auth",
            "keystone",
            "--ironic-token-mode",
            "service",
            "--os-cloud",
            "proxy",
            "--ironic-url",
            &ironic.base,
            "--token-cache-time",
            "6",
        ],
        &[("OS_CLIENT_CONFIG_FILE", cl)],
    )
    .await;
    let (s, b) = get(&list(&svc.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), uuids);
    let (s, _) = get(&list(&svc.base), Some(&demo_tok)).await;
    assert_eq!(s, 403);

    // the token cache: a token revoked at Keystone is still accepted from the cache within the
    // cache time (6 s after its validation), and refused after it. (Service mode: the caller's
    // token goes nowhere else, so the proxy's cache alone decides.)
    let cached = api_env::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let (s, _) = get(&list(&svc.base), Some(&cached)).await;
    let validated = Instant::now();
    assert_eq!(s, 200, "valid: validated by Keystone, and cached");
    api_env::revoke(&ks, &cached).await;
    let (s, b) = get(&list(&fwd.base), Some(&cached)).await;
    assert_eq!(s, 401, "revoked: refused where tokens are not cached: {b}");
    let (s, b) = get(&list(&svc.base), Some(&cached)).await;
    assert!(validated.elapsed() < Duration::from_millis(5500), "too slow to see the cache: {:?}", validated.elapsed());
    assert_eq!(s, 200, "revoked, but accepted from the cache within its time: {b}");
    tokio::time::sleep(Duration::from_millis(6200).saturating_sub(validated.elapsed())).await;
    let (s, b) = get(&list(&svc.base), Some(&cached)).await;
    assert_eq!(s, 401, "revoked, and refused once the cache time is over: {b}");

    // the real client: python-novaclient 7.1.2, project-scoped admin (as operators had it)
    let nova = |endpoint: &str, args: &[&str]| {
        let mut c = Command::new(Path::new(&nova_venv).join("bin/nova"));
        for (k, _) in std::env::vars() {
            if k.starts_with("OS_") || k.starts_with("NOVA") {
                c.env_remove(k);
            }
        }
        let out = c
            .envs([
                ("OS_AUTH_URL", ks.as_str()),
                ("OS_USERNAME", "admin"),
                ("OS_PASSWORD", ADMIN_PASSWORD),
                ("OS_PROJECT_NAME", "admin"),
                ("OS_USER_DOMAIN_NAME", "Default"),
                ("OS_PROJECT_DOMAIN_NAME", "Default"),
                ("OS_IDENTITY_API_VERSION", "3"),
                ("PYTHONWARNINGS", "ignore"),
            ])
            .args(["--os-compute-api-version", "2.1", "--endpoint-override", &format!("{endpoint}/v2.1")])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, o) = nova(&svc.base, &["baremetal-node-list"]);
    println!("$ nova baremetal-node-list\n{o}");
    assert_eq!(code, Some(0), "{o}");
    for u in &uuids {
        assert!(o.contains(u.as_str()), "{u} listed: {o}");
    }
    assert!(o.contains("IRONIC MANAGED"), "{o}");
    let (code, o) = nova(&svc.base, &["baremetal-node-show", &uuids[2]]);
    println!("$ nova baremetal-node-show {}\n{o}", uuids[2]);
    assert_eq!(code, Some(0), "{o}");
    let (_, macs) = ironic_view(&ironic.base, Some(&sys_tok)).await;
    assert!(o.contains(&uuids[2]) && o.contains("instance_uuid"), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    let (code, o) = nova(&svc.base, &["baremetal-interface-list", &uuids[2]]);
    println!("$ nova baremetal-interface-list {}\n{o}", uuids[2]);
    assert_eq!(code, Some(0), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    // the nova_bm integer id, as the scripts of nova baremetal used it: interface-list sends it as
    // is (GET .../os-baremetal-nodes/3); 7.1.2's node-show resolves a non-uuid in the client, so
    // its manager's get() stands for the show older clients sent
    let (code, o) = nova(&svc.base, &["baremetal-interface-list", "3"]);
    println!("$ nova baremetal-interface-list 3\n{o}");
    assert_eq!(code, Some(0), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    let show3 = r#"
import os, sys
from keystoneauth1 import loading, session
from novaclient import client
from novaclient.v2.contrib import baremetal
auth = loading.get_plugin_loader('password').load_from_options(auth_url=os.environ['OS_AUTH_URL'],
    username='admin', password=os.environ['OS_PASSWORD'], project_name='admin',
    user_domain_name='Default', project_domain_name='Default')
nc = client.Client('2.1', session=session.Session(auth=auth), endpoint_override=sys.argv[1])
n = baremetal.BareMetalNodeManager(nc).get(3)
print(n.id, n.uuid, sorted(i['address'] for i in n.interfaces))
"#;
    let out = Command::new(Path::new(&nova_venv).join("bin/python"))
        .args(["-c", show3, &format!("{}/v2.1", svc.base)])
        .env("OS_AUTH_URL", &ks)
        .env("OS_PASSWORD", ADMIN_PASSWORD)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    let o = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let mut m3 = macs[&uuids[2]].clone();
    m3.sort();
    assert_eq!(o.trim(), format!("3 {} ['{}', '{}']", uuids[2], m3[0], m3[1]), "{o}");
    // novaclient 7.1.2 no longer has `baremetal-node-create` (only list, show and interface-list
    // are left; the command is an "invalid choice"): its own HTTP client sends the
    // POST the old command sent, and gets the 404 as a NotFound naming the Ironic command
    let script = r#"
import os, sys
from keystoneauth1 import loading, session
from novaclient import client, exceptions
auth = loading.get_plugin_loader('password').load_from_options(auth_url=os.environ['OS_AUTH_URL'],
    username='admin', password=os.environ['OS_PASSWORD'], project_name='admin',
    user_domain_name='Default', project_domain_name='Default')
nc = client.Client('2.1', session=session.Session(auth=auth), endpoint_override=sys.argv[1])
try:
    nc.client.post('/os-baremetal-nodes', body={'node': {'service_host': 'h1', 'cpus': 1,
        'memory_mb': 512, 'local_gb': 10, 'prov_mac_address': '52:54:00:00:00:aa'}})
    print('created')
except exceptions.NotFound as e:
    print('NotFound:', e)
    sys.exit(3)
"#;
    let out = Command::new(Path::new(&nova_venv).join("bin/python"))
        .args(["-c", script, &format!("{}/v2.1", svc.base)])
        .env("OS_AUTH_URL", &ks)
        .env("OS_PASSWORD", ADMIN_PASSWORD)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .unwrap();
    let o = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{o}");
    assert!(o.contains("NotFound:") && o.contains("openstack baremetal node create") && o.contains("HTTP 404"), "{o}");
    let (code, o) = nova(&svc.base, &["baremetal-node-create", "h1", "1", "512", "10", "52:54:00:00:00:aa"]);
    assert!(
        code != Some(0) && (o.contains("invalid choice") || o.contains("not a valid subcommand")),
        "7.1.2 has no create command: {o}"
    );
    // and through the forwarding proxy the same client sees its project's node only
    let (code, o) = nova(&fwd.base, &["baremetal-node-list"]);
    assert_eq!(code, Some(0), "{o}");
    assert!(o.contains(&uuids[0]) && !o.contains(&uuids[1]), "{o}");

    // no token in the proxies' output or audit logs
    let mut seen = fwd.output() + &svc.output();
    for p in [&fwd, &svc] {
        seen += &crate::common::read_logs(&p.logs);
    }
    assert!(seen.contains("status=403") && seen.contains("user=demo"), "{seen}");
    for t in [&sys_tok, &proj_tok, &demo_tok, &revoked, &cached] {
        assert!(!seen.contains(t.as_str()), "a token leaked into the proxy's log");
    }
    assert!(!seen.contains(ADMIN_PASSWORD), "the password leaked");
}
