//! The rehearsal sandbox of `demo` (and the wizard's tests): on embedded SQLite, a nova_bm with a
//! realistic inventory and most conflict codes, an empty Ironic (the real 39.0.0 schema), a Nova DB
//! with instances and services, a Nova API DB with the flavors (modern Nova), deploy image files,
//! nova baremetal's TFTP tree of the instances (`tftpboot/`), and
//! log files the simulated takeover writes into. Built only in a private directory of the user's (a new
//! one by default) that is empty or an earlier sandbox, every file created new.

use std::path::{Path, PathBuf};

use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db};
use crate::core::demo::fixture::{self, Fixture};
use crate::core::demo::sandbox_dir;
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
    crate::core::settings::project::FILE_NAME,
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

/// Side files SQLite may leave beside a database (a build cut short).
const SQLITE_SIDE: &[&str] = &["-journal", "-wal", "-shm"];

/// Makes `dir` ready and returns its resolved path: a directory of the user's own that no one else
/// can write (see `sandbox_dir::claim`), empty or an earlier sandbox, whose files are then removed
/// so that every one is created new. Never touches other directories.
fn prepare_dir(dir: &Path) -> Result<PathBuf, SandboxError> {
    let dir = sandbox_dir::claim(dir).map_err(SandboxError)?;
    let is_sandbox = std::fs::symlink_metadata(dir.join(MARKER)).is_ok();
    let empty = std::fs::read_dir(&dir).map(|mut d| d.next().is_none()).unwrap_or(false);
    if !is_sandbox && !empty {
        return Err(SandboxError(format!(
            "{} is not empty and is not a bm2ironic demo sandbox: choose another --dir",
            dir.display()
        )));
    }
    let side = FILES.iter().flat_map(|f| SQLITE_SIDE.iter().map(move |s| format!("{f}{s}")));
    let names = FILES.iter().map(|f| f.to_string()).chain(side).chain(["logs", "tftpboot", MARKER].map(String::from));
    for name in names {
        let p = dir.join(name);
        sandbox_dir::remove(&p).map_err(|e| io("remove", &p, e))?;
    }
    let marker = dir.join(MARKER);
    sandbox_dir::write_new(&marker, b"bm2ironic demo sandbox: safe to delete\n")
        .map_err(|e| io("write", &marker, e))?;
    Ok(dir)
}

/// A database file created new (never through a planted link), then opened by SQLite.
async fn sqlite(path: &Path) -> Result<(String, Db), SandboxError> {
    sandbox_dir::create_new(path).map_err(|e| io("create", path, e))?;
    let text = format!("sqlite:///{}", path.display());
    let url = DbUrl::parse(&text).map_err(|e| SandboxError(e.to_string()))?;
    let db = Db::connect(&url, Access::Create).await.map_err(|e| SandboxError(e.to_string()))?;
    Ok((text, db))
}

/// Builds the sandbox in a new private directory under the system temp dir (`mkdtemp`).
pub async fn build_fresh() -> Result<Sandbox, SandboxError> {
    let tmp = std::env::temp_dir();
    let dir = sandbox_dir::make_fresh(&tmp, "bm2ironic-demo-").map_err(|e| io("create a new directory in", &tmp, e))?;
    build(&dir).await
}

/// Builds the sandbox in `dir`: created when missing; an existing one must be the user's own, not
/// writable by others, and empty or an earlier sandbox.
pub async fn build(dir: &Path) -> Result<Sandbox, SandboxError> {
    let dir = prepare_dir(dir)?;
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
    // the old ones were removed: a new directory holds no planted name
    std::fs::create_dir(&logs).map_err(|e| io("create", &logs, e))?;
    let conductor_log = logs.join("ironic-conductor.log");
    let compute_log = logs.join("nova-compute.log");
    let ts = chrono::Utc::now().naive_utc().format("%Y-%m-%d %H:%M:%S%.3f");
    for (p, line) in [
        (&conductor_log, "INFO ironic.conductor.manager [-] (demo) waiting for the migration"),
        (&compute_log, "INFO nova.service [-] (demo) baremetal nova-compute stopped for the maintenance window"),
    ] {
        sandbox_dir::write_new(p, format!("{ts} 1000 {line}\n").as_bytes()).map_err(|e| io("write", p, e))?;
    }
    // nova baremetal's TFTP tree, as copied from the compute hosts (`--tftp-root`)
    let tftp_root = dir.join("tftpboot");
    std::fs::create_dir(&tftp_root).map_err(|e| io("create", &tftp_root, e))?;
    fixture.write_tftp_tree(&tftp_root).map_err(|e| io("write the TFTP tree in", &tftp_root, e))?;
    let kernel = dir.join("deploy.kernel");
    let ramdisk = dir.join("deploy.initramfs");
    for p in [&kernel, &ramdisk] {
        sandbox_dir::write_new(p, b"demo deploy image\n").map_err(|e| io("write", p, e))?;
    }
    let (deploy_kernel, deploy_ramdisk) =
        (format!("file://{}", kernel.display()), format!("file://{}", ramdisk.display()));
    let project = dir.join(crate::core::settings::project::FILE_NAME);
    sandbox_dir::write_new(&project, project_file(&deploy_kernel, &deploy_ramdisk).as_bytes())
        .map_err(|e| io("write", &project, e))?;
    tracing::info!(dir = %dir.display(), "demo sandbox built");
    Ok(Sandbox {
        nova_bm_url,
        ironic_url,
        nova_url,
        nova_api_url,
        conductor_log,
        compute_log,
        deploy_kernel,
        deploy_ramdisk,
        tftp_root,
        dir,
    })
}

/// The sandbox's project file: the plan options every command in the sandbox then reads (the
/// runbook's commands work there as written, with no flag retyped).
fn project_file(kernel: &str, ramdisk: &str) -> String {
    let q = |v: &str| toml::Value::String(v.to_string()).to_string();
    format!(
        "# bm2ironic project file: the plan options of this (demo) migration; a flag wins over it\n\
         deploy-kernel = {}\ndeploy-ramdisk = {}\ndefault-arch = \"x86_64\"\nresource-class = \"baremetal\"\n",
        q(kernel),
        q(ramdisk)
    )
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
