//! What the `migrate --via api` tests (api_load, api_load_interrupted) share: a real Ironic 39
//! (noauth, SQLite) whose `ipmi` nodes point at one fake BMC on a loopback address of the test's own,
//! nova_bm and Nova databases for them, nova baremetal's TFTP tree, the binary with those given, and
//! what an uninterrupted run ends with.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::Value;

use super::bmc::{Bmc, BmcOptions};
use super::cli::{command, Outcome};
use super::db::{Backend, TestDb};
use super::ironic::{self, start_ironic, Ironic, IronicOptions};

pub const BMC_PASSWORD: &str = "bmc-pass-42";

pub fn uuid(prefix: &str, id: i64) -> String {
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

/// One test's world: nova_bm, Nova, the files (deploy images, the TFTP tree), the audit log and state
/// dirs, the real Ironic and the fake BMC every node points at.
pub struct Env {
    pub src: TestDb,
    pub nova: TestDb,
    pub files: PathBuf,
    pub logs: tempfile::TempDir,
    pub state: tempfile::TempDir,
    pub ironic: Ironic,
    /// Ironic's database (a test database's URL), for the wizard's connections
    pub ironic_db: String,
    pub bmc: Bmc,
    _tmp: tempfile::TempDir,
}

impl Env {
    /// `count` nodes behind a fake BMC at `bmc_addr`:623; `bad_image_for`: the node whose Nova image_ref
    /// does not validate (and node 3's deploy then never finished).
    pub async fn start(venv: &Path, count: usize, bmc_addr: &str, bad_image_for: Option<i64>) -> Env {
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
        let bmc = Bmc::start(BmcOptions::new(venv, BMC_PASSWORD).at(bmc_addr, 623));
        let ironic =
            start_ironic(IronicOptions { sync_interval: Some(600), ..IronicOptions::new(venv, &tgt.admin_url) }).await;
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
            bmc,
            _tmp: tmp,
        }
    }

    /// The binary with this test's connections (and none of the caller's BM2IRONIC_* or OS_*), for
    /// a test to spawn or to `run`.
    pub fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut c = command(self.logs.path());
        c.env("BM2IRONIC_NOVA_BM_DB", &self.src.reader_url)
            .env("BM2IRONIC_NOVA_DB", &self.nova.reader_url)
            .env("BM2IRONIC_STATE_DIR", self.state.path())
            .env("BM2IRONIC_TFTP_ROOT", self.files.join("tftpboot"))
            .env("BM2IRONIC_IRONIC_URL", &self.ironic.base)
            .args(args);
        c
    }

    /// `cmd(args)` run to its end.
    pub fn run(&self, args: &[&str]) -> Outcome {
        Outcome::of(&mut self.cmd(args))
    }

    /// Stops Ironic (API and conductor: one process here) and starts it again on the same database
    /// once `stopped` has run.
    pub async fn restart_ironic_after(&mut self, stopped: impl FnOnce()) {
        self.ironic.restart_after(stopped).await;
    }

    /// `migrate --via api` with this test's images and decisions.
    pub fn migrate_cmd(&self) -> std::process::Command {
        let k = format!("file://{}", self.files.join("deploy.kernel").display());
        let r = format!("file://{}", self.files.join("deploy.initramfs").display());
        let mut c = self.cmd(&["migrate", "--via", "api", "--yes", "--default-arch", "x86_64", "--resource-class"]);
        c.args(["baremetal-gold", "--deploy-kernel", &k, "--deploy-ramdisk", &r, "--step-timeout", "90s"]);
        c.args(["--resolve", "mid-deploy=maintenance"]);
        c
    }

    /// `migrate_cmd` run to its end.
    pub fn migrate(&self) -> Outcome {
        let t = Instant::now();
        let out = Outcome::of(&mut self.migrate_cmd());
        eprintln!("migrate --via api: {:.1}s, exit {}", t.elapsed().as_secs_f64(), out.code);
        out
    }

    /// Ironic's nodes (detail).
    pub async fn nodes(&self) -> Vec<Value> {
        ironic::get(&self.ironic.base, "/v1/nodes/detail").await["nodes"].as_array().cloned().unwrap_or_default()
    }
}

/// What an uninterrupted run ends with: (uuid, provision state, instance, maintenance, MACs with VIFs).
pub async fn final_state(env: &Env) -> Vec<(String, String, Option<String>, bool, Vec<(String, Option<String>)>)> {
    let mut out = Vec::new();
    for n in env.nodes().await {
        let u = n["uuid"].as_str().unwrap().to_string();
        let ports = ironic::get(&env.ironic.base, &format!("/v1/ports/detail?node_uuid={u}")).await;
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

pub fn expected_state(count: usize) -> Vec<(String, String, Option<String>)> {
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

/// Polls until `pred` holds on the node list (or 60 s pass).
pub async fn wait_nodes(env: &Env, pred: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pred(&env.nodes().await) {
        assert!(Instant::now() < deadline, "timed out waiting for Ironic's nodes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The wizard's form as an operator fills it for this environment: its connections (with the
/// Ironic database, or without it and the runs kept in the state directory), the plan options
/// (deploy images, the instances' TFTP tree) and the decisions the fixture needs.
pub struct WizardForm {
    pub connections: bm2ironic::tui::jobs::Connections,
    pub opts: bm2ironic::core::migrate::plan::PlanOptions,
    pub decisions: bm2ironic::core::migrate::conflict::Resolutions,
}

impl Env {
    pub fn wizard_form(&self, with_ironic_db: bool) -> WizardForm {
        let connections = bm2ironic::tui::jobs::Connections {
            nova_bm_db: self.src.reader_url.clone(),
            ironic_db: if with_ironic_db { self.ironic_db.clone() } else { String::new() },
            nova_db: self.nova.reader_url.clone(),
            nova_api_db: String::new(),
            ironic_api: self.ironic.base.clone(),
            state_dir: (!with_ironic_db).then(|| self.state.path().to_path_buf()),
        };
        let file = |f: &str| format!("file://{}", self.files.join(f).display());
        let opts = bm2ironic::core::migrate::plan::PlanOptions {
            default_arch: Some("x86_64".into()),
            resource_class: Some("baremetal-gold".into()),
            deploy_kernel: Some(file("deploy.kernel")),
            deploy_ramdisk: Some(file("deploy.initramfs")),
            // the instances' PXE configs, as the CLI's --tftp-root gives them
            tftp_roots: vec![bm2ironic::core::source::tftp::TftpRoot { host: None, dir: self.files.join("tftpboot") }],
            ..Default::default()
        };
        let mut decisions = bm2ironic::core::migrate::conflict::Resolutions::default();
        decisions.add_flag("mid-deploy=maintenance").unwrap();
        WizardForm { connections, opts, decisions }
    }
}
