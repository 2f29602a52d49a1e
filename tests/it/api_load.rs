//! `migrate --via api` against a real Ironic (PyPI, noauth, SQLite) whose `ipmi` nodes point at a
//! fake BMC on a loopback address: deployed nodes end `active` with their instance, free ones
//! `available`, ports carry their VIFs; a node whose adopt fails (an image_source that does not
//! validate: Nova's image_ref neither a UUID nor a URL) is named with Ironic's error while the rest
//! finish, and fixing the input (Nova's image_ref) and rerunning finishes it; a rerun changes nothing; `verify` exits 0; `rollback` empties Ironic without a single
//! power action reaching the BMC. And: SIGKILL at several points, then a rerun, ends in the same
//! final state as an uninterrupted run.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api_env::{start_ironic, Bmc, Ironic};
use crate::common::{read_logs, server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::ironic::target::TargetKind;

const BMC_PASSWORD: &str = "bmc-pass-42";

fn uuid(prefix: &str, id: i64) -> String {
    format!("{prefix}-0000-4000-8000-{id:012}")
}

/// `count` nodes (every 3rd with an instance, whose NICs carry VIFs), all behind one fake BMC at `bmc`;
/// `deploying`: a node whose deploy never finished (`mid-deploy`).
fn fixture(count: usize, bmc: &str, deploying: Option<i64>) -> Fixture {
    let mut f = Fixture::generated(count, 1);
    for n in f.nodes.iter_mut().filter(|n| Some(n.id) == deploying) {
        n.task_state = Some("deploying".into());
    }
    for n in &mut f.nodes {
        n.pm_address = Some(bmc.into());
        n.pm_user = Some("admin".into());
        n.pm_password = Some(Secret::new(BMC_PASSWORD));
    }
    let with_instance: Vec<i64> = f.nodes.iter().filter(|n| n.instance_uuid.is_some()).map(|n| n.id).collect();
    for i in &mut f.interfaces {
        if i.bm_node_id.is_some_and(|n| with_instance.contains(&n)) {
            i.vif_uuid = Some(uuid("cccccccc", i.id));
        }
    }
    f
}

/// A Nova database with the instances of `images` (node id, image_ref) and no running nova-compute.
async fn nova(images: &[(i64, String)]) -> TestDb {
    let t = TestDb::create(Backend::Sqlite, "apinova").await.unwrap();
    t.exec("CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)").await;
    t.exec("CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)").await;
    for (k, (id, image)) in images.iter().enumerate() {
        t.exec(&format!(
            "INSERT INTO instances VALUES ({}, '{}', '{image}', 20, 0, '{}', 'bm-compute-1', 'active', 1, 0)",
            k + 1,
            uuid("aaaaaaaa", *id),
            uuid("bbbbbbbb", *id)
        ))
        .await;
    }
    t
}

struct Env {
    src: TestDb,
    nova: TestDb,
    files: PathBuf,
    logs: tempfile::TempDir,
    state: tempfile::TempDir,
    ironic: Ironic,
    /// Ironic's database (SQLAlchemy form) and port: to start it again after a test stopped it
    ironic_db: String,
    port: u16,
    venv: PathBuf,
    bmc: Bmc,
    _tmp: tempfile::TempDir,
}

impl Env {
    async fn start(venv: &Path, count: usize, bmc_addr: &str, port: u16, bad_image_for: Option<i64>) -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let files = tmp.path().to_path_buf();
        for f in ["deploy.kernel", "deploy.initramfs", "image.qcow2"] {
            std::fs::write(files.join(f), b"x").unwrap();
        }
        let f = fixture(count, bmc_addr, bad_image_for.map(|_| 3));
        let images: Vec<(i64, String)> = f
            .nodes
            .iter()
            .filter(|n| n.instance_uuid.is_some())
            .map(|n| {
                let good = format!("file://{}", files.join("image.qcow2").display());
                (n.id, if Some(n.id) == bad_image_for { "no-such-image".to_string() } else { good })
            })
            .collect();
        // nova baremetal's TFTP tree of the instances (their next boot: the ramdisk deploy)
        f.write_tftp_tree(&files.join("tftpboot")).unwrap();
        let src = TestDb::with_fixture(Backend::Sqlite, "apisrc", &f).await.unwrap();
        let tgt = TestDb::ironic(Backend::Sqlite, "apitgt").await.unwrap();
        let bmc = Bmc::start(venv, bmc_addr, 623, "admin", BMC_PASSWORD);
        let ironic = start_ironic(venv, &tgt.admin_url, port, None, 600).await;
        let ironic_db = tgt.admin_url.clone();
        std::mem::forget(tgt); // Ironic owns its database now (removed with the temp dir at exit)
        Env {
            src,
            nova: nova(&images).await,
            files,
            logs: tempfile::tempdir().unwrap(),
            state: tempfile::tempdir().unwrap(),
            ironic,
            ironic_db,
            port,
            venv: venv.to_path_buf(),
            bmc,
            _tmp: tmp,
        }
    }

    /// The binary with this test's connections (and none of the caller's BM2IRONIC_* or OS_*).
    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin!("bm2ironic"));
        for (k, _) in std::env::vars() {
            if k.starts_with("BM2IRONIC_") || k.starts_with("OS_") {
                c.env_remove(k);
            }
        }
        c.arg("--log-dir")
            .arg(self.logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &self.src.reader_url)
            .env("BM2IRONIC_NOVA_DB", &self.nova.reader_url)
            .env("BM2IRONIC_STATE_DIR", self.state.path())
            .env("BM2IRONIC_TFTP_ROOT", self.files.join("tftpboot"))
            .env("BM2IRONIC_IRONIC_URL", &self.ironic.base)
            .args(args);
        c
    }

    /// Stops Ironic (API and conductor: one process here) and starts it again on the same database
    /// once `stopped` has run.
    async fn restart_ironic_after(&mut self, stopped: impl FnOnce()) {
        let placeholder = Ironic { base: self.ironic.base.clone(), dir: self.ironic.dir.clone(), process: None };
        drop(std::mem::replace(&mut self.ironic, placeholder));
        stopped();
        self.ironic = start_ironic(&self.venv, &self.ironic_db, self.port, None, 600).await;
    }

    fn migrate_cmd(&self) -> std::process::Command {
        let k = format!("file://{}", self.files.join("deploy.kernel").display());
        let r = format!("file://{}", self.files.join("deploy.initramfs").display());
        let mut c = self.cmd(&["migrate", "--via", "api", "--yes", "--default-arch", "x86_64", "--resource-class"]);
        c.args(["baremetal-gold", "--deploy-kernel", &k, "--deploy-ramdisk", &r, "--step-timeout", "90s"]);
        c.args(["--resolve", "mid-deploy=maintenance"]);
        c
    }

    fn migrate(&self) -> Output {
        let t = Instant::now();
        let out = self.migrate_cmd().output().unwrap();
        eprintln!("migrate --via api: {:.1}s, exit {:?}", t.elapsed().as_secs_f64(), out.status.code());
        out
    }

    async fn nodes(&self) -> Vec<Value> {
        get(&self.ironic.base, "/v1/nodes/detail").await["nodes"].as_array().cloned().unwrap_or_default()
    }
}

async fn get(base: &str, path: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}{path}"))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// What an uninterrupted run ends with: (uuid, provision state, instance, maintenance, MACs with VIFs).
async fn final_state(env: &Env) -> Vec<(String, String, Option<String>, bool, Vec<(String, Option<String>)>)> {
    let mut out = Vec::new();
    for n in env.nodes().await {
        let u = n["uuid"].as_str().unwrap().to_string();
        let ports = get(&env.ironic.base, &format!("/v1/ports/detail?node_uuid={u}")).await;
        let mut ports: Vec<(String, Option<String>)> = ports["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["address"].as_str().unwrap().to_string(), p["extra"]["vif_port_id"].as_str().map(String::from)))
            .collect();
        ports.sort();
        out.push((
            u,
            n["provision_state"].as_str().unwrap_or("").to_string(),
            n["instance_uuid"].as_str().map(String::from),
            n["maintenance"].as_bool().unwrap_or(false),
            ports,
        ));
    }
    out.sort();
    out
}

fn expected_state(count: usize) -> Vec<(String, String, Option<String>)> {
    let mut v: Vec<_> = (1..=count as i64)
        .map(|i| {
            let inst = (i % 3 == 0).then(|| uuid("aaaaaaaa", i));
            let state = if inst.is_some() { "active" } else { "available" };
            (uuid("bbbbbbbb", i), state.to_string(), inst)
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread")]
async fn api_adopt_flow_failure_fix_rerun_verify_rollback_without_power_actions() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = PathBuf::from(venv);
    let env = Env::start(&venv, 6, "127.0.0.12", 6412, Some(6)).await;
    let bad = uuid("bbbbbbbb", 6);

    // node 6's image_ref does not validate: its adopt fails with Ironic's error, the five others finish
    let report = env.files.join("report.md");
    let out = env.migrate_cmd().arg("--report").arg(&report).output().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains(&format!("FAILED {bad} (nova_bm 6)")) && t.contains("adopt failed"), "{t}");
    assert!(t.contains("Validation of image href no-such-image failed"), "Ironic's own words: {t}");
    // the run report says what happened through the API: which node failed and how to go on
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("partly done through the Ironic API: 5 nodes changed, 1 failed"), "{md}");
    assert!(md.contains("failed through the API, left where it is") && md.contains("no-such-image"), "{md}");
    assert!(!md.contains(BMC_PASSWORD), "{md}");
    let nodes = env.nodes().await;
    assert_eq!(nodes.len(), 6);
    let by = |u: &str| nodes.iter().find(|n| n["uuid"] == u).cloned().unwrap();
    assert_eq!(by(&bad)["provision_state"], "adopt failed");
    let n3 = by(&uuid("bbbbbbbb", 3));
    assert_eq!(
        (n3["provision_state"].as_str(), n3["instance_uuid"].as_str()),
        (Some("active"), Some(uuid("aaaaaaaa", 3).as_str()))
    );
    assert_eq!(n3["resource_class"], "baremetal-gold");
    assert_eq!(n3["driver_info"]["ipmi_password"], "******");
    assert_eq!(n3["extra"]["bm2ironic"]["nova_bm_id"], 3);
    // its next boot, learned from nova baremetal's PXE config and accepted by Ironic 39's adopt: the
    // ramdisk deploy netboots the instance's own kernel and ramdisk with its root (docs/mapping.md)
    let inst = uuid("aaaaaaaa", 3);
    let tree = env.files.join("tftpboot");
    assert_eq!(
        (n3["deploy_interface"].as_str(), n3["boot_interface"].as_str()),
        (Some("ramdisk"), Some("pxe")),
        "{n3}"
    );
    assert_eq!(n3["instance_info"]["kernel"], format!("file://{}/{inst}/kernel", tree.display()));
    assert_eq!(n3["instance_info"]["ramdisk"], format!("file://{}/{inst}/ramdisk", tree.display()));
    let root = bm2ironic::core::demo::fixture::root_uuid_of(&inst);
    assert_eq!(
        n3["instance_info"]["ramdisk_kernel_arguments"],
        format!("root=UUID={root} ro nofb nomodeset vga=normal")
    );
    assert_eq!(n3["properties"]["capabilities"], "boot_mode:bios");
    // a free node keeps Ironic's defaults
    let n1 = by(&uuid("bbbbbbbb", 1));
    assert!(n1["deploy_interface"] != "ramdisk" && n1["instance_info"].get("kernel").is_none(), "{n1}");
    // node 3's deploy never finished in nova_bm: adopted, then held in maintenance with the reason
    assert_eq!(n3["maintenance"], true);
    assert!(n3["maintenance_reason"].as_str().is_some_and(|r| r.starts_with("bm2ironic: ")), "{n3}");
    assert_eq!(by(&uuid("bbbbbbbb", 1))["provision_state"], "available");

    // pagination against the real Ironic: three pages of two
    let api = bm2ironic::core::ironic::api::IronicApi::new(&env.ironic.base, None, TargetKind::Modern).unwrap();
    assert_eq!(api.negotiate(None).await.unwrap(), "1.115");
    let all = api.list_all("/v1/nodes", "nodes", 2).await.unwrap();
    let mut listed: Vec<&str> = all.iter().map(|n| n["uuid"].as_str().unwrap()).collect();
    listed.dedup();
    assert_eq!(listed.len(), 6, "{listed:?}");

    // the wizard's API connection test against the same Ironic
    use bm2ironic::tui::app::{Field, FieldKind, Msg};
    match bm2ironic::tui::jobs::test_connection(Field::IronicApi, 0, FieldKind::Http, env.ironic.base.clone()).await {
        Msg::Tested { result: Ok(text), .. } => assert!(text.starts_with("Ironic API 1.115 in "), "{text}"),
        other => panic!("{other:?}"),
    }

    // fix the input (Nova's image_ref) and rerun: the failed node is continued, nothing else touched
    let good = format!("file://{}", env.files.join("image.qcow2").display());
    env.nova.exec(&format!("UPDATE instances SET image_ref = '{good}' WHERE image_ref = 'no-such-image'")).await;
    let before: Vec<(String, String)> =
        nodes.iter().map(|n| (n["uuid"].as_str().unwrap().into(), n["updated_at"].to_string())).collect();
    let out = env.migrate_cmd().arg("--report").arg(&report).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Resuming run"), "{}", text(&out));
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("done through the Ironic API: 1 nodes changed"), "{md}");
    assert!(md.contains("OK: ") && md.contains("puts the nodes this run created in maintenance"), "{md}");
    let after = env.nodes().await;
    for (u, upd) in &before {
        if *u != bad {
            let n = after.iter().find(|n| n["uuid"] == u.as_str()).unwrap();
            assert_eq!(&n["updated_at"].to_string(), upd, "{u} untouched by the resume");
        }
    }
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(6));
    let n3 = states.iter().find(|s| s.0 == uuid("bbbbbbbb", 3)).unwrap();
    assert!(n3.4.iter().all(|(_, vif)| vif.as_deref().is_some_and(|v| v.starts_with("cccccccc-"))), "VIFs: {:?}", n3.4);
    assert_eq!(n3.4.len(), 2);

    // a rerun changes nothing
    let out = env.migrate();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Nothing to create"), "{}", text(&out));
    assert_eq!(final_state(&env).await, states);

    // verify compares the API's view with the plan
    let out = env.cmd(&["verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("6 nodes, 12 ports checked against nova_bm and the Ironic API"),
        "an API run is not checked against the database: {}",
        text(&out)
    );
    // the run file is private and holds no BMC password
    let files: Vec<_> = std::fs::read_dir(env.state.path()).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(files[0].metadata().unwrap().permissions().mode() & 0o777, 0o600);
    let record = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(record.contains("api-committed") && !record.contains(BMC_PASSWORD), "{record}");
    assert!(!read_logs(env.logs.path()).contains(BMC_PASSWORD));

    // a change behind our back shows in verify
    reqwest::Client::new()
        .patch(format!("{}/v1/nodes/{}", env.ironic.base, uuid("bbbbbbbb", 1)))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&serde_json::json!([{"op": "add", "path": "/properties/cpus", "value": 64}]))
        .send()
        .await
        .unwrap();
    let out = env.cmd(&["verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("properties"), "{}", text(&out));

    // rollback: maintenance first, then delete; Ironic is empty and the BMC saw no power action
    let out = env.cmd(&["rollback", "--yes"]).env_remove("BM2IRONIC_NOVA_DB").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed 6 nodes"), "{}", text(&out));
    assert!(env.nodes().await.is_empty());
    assert!(get(&env.ironic.base, "/v1/ports").await["ports"].as_array().unwrap().is_empty());
    assert!(env.bmc.power_actions().is_empty(), "power actions reached the BMC: {:?}", env.bmc.power_actions());
    let log = env.ironic.log();
    assert!(
        !log.contains("Successfully set node") || !log.contains("power state to power"),
        "no power change in Ironic's log"
    );
}

/// When to SIGKILL a run, judged on Ironic's node list.
type KillPoint = Box<dyn Fn(&[Value]) -> bool>;

/// Polls until `pred` holds on the node list (or 60 s pass).
async fn wait_nodes(env: &Env, pred: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pred(&env.nodes().await) {
        assert!(Instant::now() < deadline, "timed out waiting for Ironic's nodes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_at_several_points_then_rerun_ends_like_an_uninterrupted_run() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = PathBuf::from(venv);
    let mut env = Env::start(&venv, 9, "127.0.0.13", 6413, None).await;

    // Ironic itself (API and conductor) stops mid-run: the tool ends, without hanging, saying it
    // cannot reach Ironic; started again, the runs below resume from where it stopped
    let mut c = env.migrate_cmd();
    c.args(["--concurrency", "2"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    wait_nodes(&env, |n| n.len() >= 2).await;
    let mut status = None;
    env.restart_ironic_after(|| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while status.is_none() {
            status = child.try_wait().unwrap();
            assert!(Instant::now() < deadline, "the tool still runs 120 s after Ironic stopped");
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await;
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let _ = child.wait(); // reaped by try_wait already
    assert_ne!(status.unwrap().code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(&env.ironic.base.replace("http://", "")), "names Ironic: {stderr}");
    eprintln!("Ironic stopped mid-run:\n{stderr}");

    let points: Vec<KillPoint> = vec![
        // right after the first enroll
        Box::new(|n: &[Value]| !n.is_empty()),
        // with nodes mid-way (some manageable or further, not all done)
        Box::new(|n: &[Value]| n.iter().filter(|x| x["provision_state"] != "enroll").count() >= 3),
        // with most of them done
        Box::new(|n: &[Value]| {
            n.iter().filter(|x| x["provision_state"] == "active" || x["provision_state"] == "available").count() >= 6
        }),
    ];
    for (k, pred) in points.into_iter().enumerate() {
        let mut c = env.migrate_cmd();
        c.args(["--concurrency", "2"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        let mut child = c.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if pred(&env.nodes().await) || Instant::now() > deadline {
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break; // finished before the point: fine, the next rerun has less to do
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let states: Vec<String> = env.nodes().await.iter().map(|n| n["provision_state"].to_string()).collect();
        eprintln!("killed at point {k}: {states:?}");
    }
    wait_nodes(&env, |n| n.iter().all(|x| x["target_provision_state"].is_null())).await;
    let out = env.migrate();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(9), "the same final state as an uninterrupted run");
    assert!(states.iter().all(|s| s.4.len() == 2 && !s.3), "two ports each, none in maintenance: {states:?}");
    let out = env.cmd(&["verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(env.bmc.power_actions().is_empty(), "{:?}", env.bmc.power_actions());
}

/// The wizard's API path, its jobs run as the wizard runs them (each ends in the message it
/// reports), against the real Ironic: the load through the API (one node's adopt fails: the job
/// says which run to resume), fixed input and the same job again resumes that run and finishes
/// only that node, then the wizard's verify of the API run and its takeover check of it.
#[tokio::test(flavor = "multi_thread")]
async fn the_wizards_api_load_resume_verify_and_takeover_jobs() {
    use bm2ironic::core::ironic::verdict::{TakeoverEvent, TakeoverState};
    use bm2ironic::core::migrate::conflict::Resolutions;
    use bm2ironic::core::migrate::events::{LoadEvent, NodeStatus};
    use bm2ironic::core::migrate::plan::PlanOptions;
    use bm2ironic::tui::app::Msg;
    use bm2ironic::tui::jobs;
    use tokio::sync::mpsc::unbounded_channel;
    use tokio_util::sync::CancellationToken;

    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let env = Env::start(&PathBuf::from(venv), 6, "127.0.0.15", 6415, Some(6)).await;
    let bad = uuid("bbbbbbbb", 6);
    // the form as the operator filled it: the run is kept in Ironic's own database
    let connections = jobs::Connections {
        nova_bm_db: env.src.reader_url.clone(),
        ironic_db: env.ironic_db.clone(),
        nova_db: env.nova.reader_url.clone(),
        nova_api_db: String::new(),
        ironic_api: env.ironic.base.clone(),
        state_dir: None,
    };
    let file = |f: &str| format!("file://{}", env.files.join(f).display());
    let opts = PlanOptions {
        default_arch: Some("x86_64".into()),
        resource_class: Some("baremetal-gold".into()),
        deploy_kernel: Some(file("deploy.kernel")),
        deploy_ramdisk: Some(file("deploy.initramfs")),
        // the instances' PXE configs, as the CLI's --tftp-root gives them
        tftp_roots: vec![bm2ironic::core::source::tftp::TftpRoot { host: None, dir: env.files.join("tftpboot") }],
        ..Default::default()
    };
    let mut decisions = Resolutions::default();
    decisions.add_flag("mid-deploy=maintenance").unwrap();

    // one load job: its messages, and the message it ends with
    let load = |connections: jobs::Connections| {
        let (opts, decisions) = (opts.clone(), decisions.clone());
        async move {
            let (tx, mut rx) = unbounded_channel();
            let order =
                jobs::LoadOrder { opts, resolutions: decisions, reviewed: None, rehearse: false, via_api: true };
            let done = jobs::load(connections, order, CancellationToken::new(), tx, None).await;
            let mut seen = Vec::new();
            while let Ok(m) = rx.try_recv() {
                seen.push(m);
            }
            (seen, done)
        }
    };
    let started = |seen: &[Msg]| {
        seen.iter()
            .find_map(|m| match m {
                Msg::Load(LoadEvent::Started { run_id, nodes, .. }) => Some((run_id.clone(), *nodes)),
                _ => None,
            })
            .expect("a Started event")
    };

    let (seen, done) = load(connections.clone()).await;
    let (run, nodes) = started(&seen);
    assert_eq!(nodes, 6);
    match &done {
        Msg::LoadDone(Err(e)) => {
            let e = e.to_string();
            assert!(e.contains("1 node(s) failed") && e.contains(&run), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        seen.iter().any(|m| matches!(m, Msg::Load(LoadEvent::Node { uuid, status: NodeStatus::Failed { error }, .. }) if *uuid == bad && error.contains("no-such-image"))),
        "node 6's failure named with Ironic's error"
    );
    // where the time went: every request by kind and the conductor's waits (core/ironic/api/timings.rs)
    let calls = seen
        .iter()
        .find_map(|m| match m {
            Msg::Load(LoadEvent::Timings { calls }) => Some(calls.clone()),
            _ => None,
        })
        .expect("a Timings event before the summary");
    let count = |k: &str| calls.iter().filter(|t| t.kind == k).map(|t| t.count).sum::<u64>();
    assert_eq!(count("POST /v1/nodes"), 6, "{calls:?}");
    assert!(count("PUT /v1/nodes/{id}/states/provision") >= 12, "manage, then adopt or provide: {calls:?}");
    assert_eq!(count("wait → manageable"), 6, "{calls:?}");
    assert_eq!(count("wait → adopt failed"), 1, "{calls:?}");
    assert!(calls.iter().all(|t| t.total_ms > 0.0 && t.max_ms <= t.total_ms), "{calls:?}");
    // the waits: one list request per state a round for all the nodes (load_api/watch.rs), and a
    // node read once when it left its state, not polled (a poll per node per round before)
    let actions = count("PUT /v1/nodes/{id}/states/provision");
    assert!(count("GET /v1/nodes/{id}?…") <= 2 * actions, "{calls:?}");

    // the input fixed, the same job again: the same run, resumed, only node 6 changes
    let good = file("image.qcow2");
    env.nova.exec(&format!("UPDATE instances SET image_ref = '{good}' WHERE image_ref = 'no-such-image'")).await;
    let (seen, done) = load(connections.clone()).await;
    assert_eq!(started(&seen).0, run, "the unfinished run is resumed, not a new one started");
    let summary = match done {
        Msg::LoadDone(Ok(s)) => s,
        other => panic!("{other:?}"),
    };
    assert!(summary.committed && summary.errors == 0, "{summary:?}");
    assert_eq!(summary.created, 1, "only the failed node changes: {summary:?}");
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(6));

    // the wizard's verify step on that run: an API run, checked through the API against nova_bm
    let src = bm2ironic::core::source::nova_bm::NovaBmSource::open(
        &bm2ironic::core::db::url::DbUrl::parse(&env.src.reader_url).unwrap(),
    )
    .await
    .unwrap();
    let inventory = std::sync::Arc::new(src.read_inventory(|_| {}).await.unwrap());
    match jobs::verify(connections.clone(), inventory, run.clone()).await {
        Msg::Verified(Ok(text), _) => assert_eq!(text, "6 nodes, 12 ports: no differences"),
        other => panic!("{other:?}"),
    }

    // its takeover check of the same run: the nodes' power read from the fake BMC through Ironic
    // (node 6, adopted again after its failure, waits for the conductor's next power sync: the check
    // is stopped once the five others are decided)
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let check = tokio::spawn(jobs::takeover(connections.clone(), run.clone(), vec![], tx, cancel.clone()));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while let Ok(Some(m)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        if let Msg::Takeover(TakeoverEvent::Progress(c)) = m {
            if c.taken_over + c.held >= 5 {
                cancel.cancel();
            }
            last = Some(c);
        }
    }
    cancel.cancel();
    let last = last.expect("the takeover's counts reach the wizard");
    assert!(last.taken_over >= 4 && last.held == 1 && last.failing == 0, "{last:?}");
    match check.await.unwrap() {
        Msg::TakeoverDone(Ok(o)) => {
            assert_eq!(o.nodes.len(), 6);
            assert!(o.nodes.iter().all(|n| n.state != TakeoverState::Failed), "{o:?}");
            let held = o.nodes.iter().find(|n| n.uuid == uuid("bbbbbbbb", 3)).unwrap();
            assert_eq!(held.state, TakeoverState::HeldInMaintenance, "node 3 is held, as decided");
        }
        other => panic!("{other:?}"),
    }
}

/// Ironic stopped in the middle of `migrate --via api`: the run ends within 10 s with one message
/// that names Ironic and says how to resume (not a failed line and an error chain per remaining
/// node), and with Ironic back the rerun finishes every node as an uninterrupted run would.
#[tokio::test(flavor = "multi_thread")]
async fn ironic_stopped_mid_run_ends_it_with_one_message_and_a_rerun_finishes() {
    use std::process::Stdio;
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let mut env = Env::start(&PathBuf::from(venv), 12, "127.0.0.14", 6414, None).await;
    let mut child =
        env.migrate_cmd().args(["--concurrency", "2"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let settled = |n: &Value| n["provision_state"] == "active" || n["provision_state"] == "available";
    wait_nodes(&env, |nodes| nodes.iter().filter(|n| settled(n)).count() >= 2).await;
    let mut ended = None;
    env.restart_ironic_after(|| {
        let stopped = Instant::now();
        while stopped.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = stopped.elapsed();
        let _ = child.kill();
        ended = Some((took, child.wait_with_output().unwrap()));
    })
    .await;
    let (took, out) = ended.unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(took < Duration::from_secs(10), "the run took {took:?} to end after Ironic stopped: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("stopped answering").count(), 1, "one message naming Ironic: {err}");
    assert!(err.contains(&env.ironic.base) && err.contains("run `bm2ironic migrate --via api` again"), "{err}");
    assert!(!err.contains("FAILED"), "no node is blamed for Ironic being down: {err}");

    // Ironic back: the rerun resumes the run and ends where an uninterrupted run ends
    let out = env.migrate();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("Resuming run"), "{}", text(&out));
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(12));
}
