//! `bm2ironic demo`: a rehearsal sandbox on embedded SQLite (no servers needed). For now it builds the
//! nova_bm part of the sandbox and shows its inventory; the wizard opens on it once it exists.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{inventory, Failure, GlobalArgs};
use crate::core::db::{Access, Db};
use crate::core::dburl::DbUrl;
use crate::core::fixture::{self, Fixture};
use crate::core::source::NovaBmSource;

const MARKER: &str = ".bm2ironic-demo";
const NOVA_BM_FILE: &str = "nova_bm.sqlite";
const IRONIC_FILE: &str = "ironic.sqlite";
const NOVA_FILE: &str = "nova.sqlite";

#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// Where to build the sandbox (default: a new directory under the system temp dir)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Only build the sandbox and print its connection settings (no terminal needed)
    #[arg(long)]
    pub no_tui: bool,
}

pub async fn run(_global: &GlobalArgs, args: DemoArgs) -> Result<(), Failure> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("bm2ironic-demo-{}", std::process::id())),
    };
    prepare_dir(&dir)?;
    let dir = dir.canonicalize().map_err(|e| Failure::runtime(format!("cannot resolve {}: {e}", dir.display())))?;
    let db_path = dir.join(NOVA_BM_FILE);
    let url_text = format!("sqlite:///{}", db_path.display());
    let url = DbUrl::parse(&url_text).map_err(|e| Failure::runtime(e.to_string()))?;
    let db = Db::connect(&url, Access::ReadWrite).await.map_err(|e| Failure::runtime(e.to_string()))?;
    fixture::build(&db, &Fixture::demo()).await.map_err(|e| Failure::runtime(format!("cannot build the demo nova_bm: {e}")))?;
    db.close().await;
    let ironic_text = format!("sqlite:///{}", dir.join(IRONIC_FILE).display());
    let ironic_url = DbUrl::parse(&ironic_text).map_err(|e| Failure::runtime(e.to_string()))?;
    let idb = Db::connect(&ironic_url, Access::ReadWrite).await.map_err(|e| Failure::runtime(e.to_string()))?;
    fixture::build_ironic_sqlite(&idb).await.map_err(|e| Failure::runtime(format!("cannot build the demo Ironic database: {e}")))?;
    idb.close().await;
    tracing::info!(dir = %dir.display(), "demo sandbox built");

    let nova_text = format!("sqlite:///{}", dir.join(NOVA_FILE).display());
    let nova_url = DbUrl::parse(&nova_text).map_err(|e| Failure::runtime(e.to_string()))?;
    let ndb = Db::connect(&nova_url, Access::ReadWrite).await.map_err(|e| Failure::runtime(e.to_string()))?;
    fixture::build_nova_sqlite(&ndb, &Fixture::demo()).await.map_err(|e| Failure::runtime(format!("cannot build the demo Nova database: {e}")))?;
    ndb.close().await;
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", logs.display())))?;
    let conductor = logs.join("ironic-conductor.log");
    let compute = logs.join("nova-compute.log");
    for (p, line) in [(&conductor, "INFO ironic.conductor.manager [-] (demo) waiting for the migration"), (&compute, "INFO nova.service [-] (demo) baremetal nova-compute stopped for the maintenance window")] {
        let ts = chrono::Utc::now().naive_utc().format("%Y-%m-%d %H:%M:%S%.3f");
        std::fs::write(p, format!("{ts} 1000 {line}\n")).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", p.display())))?;
    }
    let kernel = dir.join("deploy.kernel");
    let ramdisk = dir.join("deploy.initramfs");
    for p in [&kernel, &ramdisk] {
        std::fs::write(p, b"demo deploy image\n").map_err(|e| Failure::runtime(format!("cannot write {}: {e}", p.display())))?;
    }

    println!("Demo sandbox in {}", dir.display());
    println!("  export BM2IRONIC_NOVA_BM_DB='{url_text}'");
    println!("  export BM2IRONIC_IRONIC_DB='{ironic_text}'");
    println!("  export BM2IRONIC_NOVA_DB='{nova_text}'");
    println!("  logs: {} {}", conductor.display(), compute.display());
    if args.no_tui {
        return Ok(());
    }
    if crate::tui::have_terminal() {
        let prefill = crate::tui::Prefill {
            nova_bm_db: Some(url_text.clone()),
            ironic_db: Some(ironic_text.clone()),
            nova_db: Some(nova_text.clone()),
            ironic_url: None,
            deploy_kernel: Some(format!("file://{}", kernel.display())),
            deploy_ramdisk: Some(format!("file://{}", ramdisk.display())),
            default_arch: Some("x86_64".into()),
            resource_class: Some("baremetal".into()),
        };
        let mut app = crate::tui::App::new(crate::tui::Mode::Rehearsal, prefill, Default::default(), Default::default());
        app.audit_log = super::audit_dir(_global);
        let ctx = crate::tui::Context {
            logs: vec![("ironic".into(), conductor), ("nova-compute".into(), compute)],
            simulate_takeover: true,
            resolutions_dir: Some(dir.clone()),
            auto_prepare: false,
        };
        return crate::tui::run_wizard(app, ctx).await.map_err(Failure::runtime);
    }
    let source = NovaBmSource::open(&url).await?;
    let inv = source.read_inventory(|_| {}).await?;
    source.close().await;
    println!();
    print!("{}", inventory::render_table(&inv, &inv.summary()));
    println!();
    println!("(The interactive wizard is not built yet.) With the two exports above, try:");
    println!("  bm2ironic plan --default-arch x86_64 --deploy-kernel file:///k --deploy-ramdisk file:///r");
    println!("  bm2ironic migrate --rehearse --default-arch x86_64 --deploy-kernel file:///k --deploy-ramdisk file:///r \\");
    println!("      --resolve invalid-mac=skip-port --resolve duplicate-mac=skip-port --resolve missing-uuid=generate \\");
    println!("      --resolve mid-deploy=maintenance --resolve failed-deploy=maintenance --resolve missing-bmc=maintenance");
    Ok(())
}

/// Creates `dir`, or empties it when it is an earlier demo sandbox. Never touches other directories.
fn prepare_dir(dir: &Path) -> Result<(), Failure> {
    if dir.exists() {
        let is_sandbox = dir.join(MARKER).exists();
        let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(false);
        if !is_sandbox && !empty {
            return Err(Failure::runtime(format!(
                "{} is not empty and is not a bm2ironic demo sandbox: choose another --dir",
                dir.display()
            )));
        }
        for f in [NOVA_BM_FILE, "nova_bm.sqlite-journal", IRONIC_FILE, "ironic.sqlite-journal", NOVA_FILE, "nova.sqlite-journal", "bm2ironic-resolutions.toml"] {
            let p = dir.join(f);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| Failure::runtime(format!("cannot remove {}: {e}", p.display())))?;
            }
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| Failure::runtime(format!("cannot create {}: {e}", dir.display())))?;
    std::fs::write(dir.join(MARKER), "bm2ironic demo sandbox: safe to delete\n")
        .map_err(|e| Failure::runtime(format!("cannot write in {}: {e}", dir.display())))?;
    Ok(())
}
