//! The rehearsal sandbox of `demo` (and the wizard's tests): on embedded SQLite, a nova_bm with a
//! realistic inventory and most conflict codes, an empty Ironic (the real 39.0.0 schema), a Nova DB
//! with instances and services, a Nova API DB with the flavors (modern Nova), deploy image files,
//! nova baremetal's TFTP tree of the instances (`tftpboot/`), and
//! log files the simulated takeover writes into. Built only in a directory that is empty or an earlier sandbox.

use std::path::{Path, PathBuf};

use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db};
use crate::core::demo::fixture::{self, Fixture};
use crate::core::migrate::plan::PlanOptions;
use crate::core::source::tftp::TftpRoot;

const MARKER: &str = ".bm2ironic-demo";
const FILES: &[&str] = &[
    "nova_bm.sqlite",
    "ironic.sqlite",
    "nova.sqlite",
    "nova_api.sqlite",
    "bm2ironic-resolutions.toml",
    "deploy.kernel",
    "deploy.initramfs",
];

#[derive(Debug, Clone)]
pub struct Sandbox {
    pub dir: PathBuf,
    /// nova baremetal's TFTP tree of the fixture's instances (each one's PXE config, kernel, ramdisk)
    pub tftp_root: PathBuf,
    pub nova_bm_url: String,
    pub ironic_url: String,
    pub nova_url: String,
    pub nova_api_url: String,
    pub conductor_log: PathBuf,
    pub compute_log: PathBuf,
    pub deploy_kernel: String,
    pub deploy_ramdisk: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SandboxError(pub String);

fn io(what: &str, p: &Path, e: std::io::Error) -> SandboxError {
    SandboxError(format!("cannot {what} {}: {e}", p.display()))
}

/// Creates `dir`, or empties it when it is an earlier sandbox. Never touches other directories.
fn prepare_dir(dir: &Path) -> Result<(), SandboxError> {
    if dir.exists() {
        let is_sandbox = dir.join(MARKER).exists();
        let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false);
        if !is_sandbox && !empty {
            return Err(SandboxError(format!(
                "{} is not empty and is not a bm2ironic demo sandbox: choose another --dir",
                dir.display()
            )));
        }
        for f in FILES.iter().flat_map(|f| [f.to_string(), format!("{f}-journal")]) {
            let p = dir.join(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| io("remove", &p, e))?;
            }
        }
        for sub in ["logs", "tftpboot"] {
            let p = dir.join(sub);
            if p.exists() {
                std::fs::remove_dir_all(&p).map_err(|e| io("remove", &p, e))?;
            }
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    std::fs::write(dir.join(MARKER), "bm2ironic demo sandbox: safe to delete\n").map_err(|e| io("write in", dir, e))
}

async fn sqlite(path: &Path) -> Result<(String, Db), SandboxError> {
    let text = format!("sqlite:///{}", path.display());
    let url = DbUrl::parse(&text).map_err(|e| SandboxError(e.to_string()))?;
    let db = Db::connect(&url, Access::Create).await.map_err(|e| SandboxError(e.to_string()))?;
    Ok((text, db))
}

pub async fn build(dir: &Path) -> Result<Sandbox, SandboxError> {
    prepare_dir(dir)?;
    let dir = dir.canonicalize().map_err(|e| io("resolve", dir, e))?;
    let fixture = Fixture::demo();
    let (nova_bm_url, db) = sqlite(&dir.join("nova_bm.sqlite")).await?;
    fixture::build(&db, &fixture).await.map_err(|e| SandboxError(format!("cannot build the demo nova_bm: {e}")))?;
    db.close().await;
    let (ironic_url, db) = sqlite(&dir.join("ironic.sqlite")).await?;
    fixture::build_ironic_sqlite(&db)
        .await
        .map_err(|e| SandboxError(format!("cannot build the demo Ironic database: {e}")))?;
    db.close().await;
    let (nova_url, db) = sqlite(&dir.join("nova.sqlite")).await?;
    fixture::build_nova_sqlite(&db, &fixture)
        .await
        .map_err(|e| SandboxError(format!("cannot build the demo Nova database: {e}")))?;
    db.close().await;
    let (nova_api_url, db) = sqlite(&dir.join("nova_api.sqlite")).await?;
    fixture::build_nova_api_sqlite(&db)
        .await
        .map_err(|e| SandboxError(format!("cannot build the demo Nova API database: {e}")))?;
    db.close().await;

    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| io("create", &logs, e))?;
    let conductor_log = logs.join("ironic-conductor.log");
    let compute_log = logs.join("nova-compute.log");
    let ts = chrono::Utc::now().naive_utc().format("%Y-%m-%d %H:%M:%S%.3f");
    for (p, line) in [
        (&conductor_log, "INFO ironic.conductor.manager [-] (demo) waiting for the migration"),
        (&compute_log, "INFO nova.service [-] (demo) baremetal nova-compute stopped for the maintenance window"),
    ] {
        std::fs::write(p, format!("{ts} 1000 {line}\n")).map_err(|e| io("write", p, e))?;
    }
    // nova baremetal's TFTP tree, as copied from the compute hosts (`--tftp-root`)
    let tftp_root = dir.join("tftpboot");
    fixture.write_tftp_tree(&tftp_root).map_err(|e| io("write the TFTP tree in", &tftp_root, e))?;
    let kernel = dir.join("deploy.kernel");
    let ramdisk = dir.join("deploy.initramfs");
    for p in [&kernel, &ramdisk] {
        std::fs::write(p, b"demo deploy image\n").map_err(|e| io("write", p, e))?;
    }
    tracing::info!(dir = %dir.display(), "demo sandbox built");
    Ok(Sandbox {
        nova_bm_url,
        ironic_url,
        nova_url,
        nova_api_url,
        conductor_log,
        compute_log,
        deploy_kernel: format!("file://{}", kernel.display()),
        deploy_ramdisk: format!("file://{}", ramdisk.display()),
        tftp_root,
        dir,
    })
}

/// What a front end prefills for this sandbox: its connection URLs and plan options, as plain values
/// (the wizard builds its own form from them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPrefill {
    pub nova_bm_db: String,
    pub ironic_db: String,
    pub nova_db: String,
    pub nova_api_db: String,
    pub deploy_kernel: String,
    pub deploy_ramdisk: String,
    pub default_arch: String,
    pub resource_class: String,
}

/// How a front end runs on this sandbox: the log files to follow (name, path), that a takeover is
/// simulated into them after a load, and where decisions are saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRun {
    pub logs: Vec<(String, PathBuf)>,
    pub simulate_takeover: bool,
    pub resolutions_dir: PathBuf,
}

impl Sandbox {
    /// The values a front end prefills for this sandbox.
    pub fn prefill(&self) -> SandboxPrefill {
        SandboxPrefill {
            nova_bm_db: self.nova_bm_url.clone(),
            ironic_db: self.ironic_url.clone(),
            nova_db: self.nova_url.clone(),
            nova_api_db: self.nova_api_url.clone(),
            deploy_kernel: self.deploy_kernel.clone(),
            deploy_ramdisk: self.deploy_ramdisk.clone(),
            default_arch: "x86_64".into(),
            resource_class: "baremetal".into(),
        }
    }

    /// The plan options a front end starts from: the sandbox's TFTP tree (the fields fill the rest).
    pub fn plan_options(&self) -> PlanOptions {
        PlanOptions { tftp_roots: vec![TftpRoot { host: None, dir: self.tftp_root.clone() }], ..Default::default() }
    }

    /// Follow the sandbox's logs, simulate a takeover, save decisions here.
    pub fn context(&self) -> SandboxRun {
        SandboxRun {
            logs: vec![
                ("ironic".into(), self.conductor_log.clone()),
                ("nova-compute".into(), self.compute_log.clone()),
            ],
            simulate_takeover: true,
            resolutions_dir: self.dir.clone(),
        }
    }
}

crate::core::kind::always!(Runtime: SandboxError);
