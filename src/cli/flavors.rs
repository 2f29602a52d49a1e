//! `bm2ironic flavors`: shows, and with `--apply` makes, the flavor metadata changes of the upgrade;
//! `--restore` puts the recorded old values back.

use std::io::Write;

use clap::Args;
use serde_json::json;

use super::table::Table;
use super::{Failure, GlobalArgs};
use crate::core::db::{Access, Db};
use crate::core::migrate::flavors::{self, FlavorTarget};

#[derive(Args, Debug, Default)]
pub struct FlavorsArgs {
    /// Juno/Kilo target: the Ironic deploy kernel for baremetal:deploy_kernel_id
    #[arg(long, value_name = "REF", requires = "deploy_ramdisk", conflicts_with = "resource_class")]
    pub deploy_kernel: Option<String>,
    /// Juno/Kilo target: the Ironic deploy ramdisk for baremetal:deploy_ramdisk_id
    #[arg(long, value_name = "REF", requires = "deploy_kernel")]
    pub deploy_ramdisk: Option<String>,
    /// Modern target: schedule by resources:CUSTOM_<CLASS>=1 (VCPU, MEMORY_MB, DISK_GB set to 0)
    #[arg(long, value_name = "NAME")]
    pub resource_class: Option<String>,
    /// Only these flavors (default: every flavor with a baremetal: key)
    #[arg(long = "flavor", value_name = "NAME")]
    pub flavors: Vec<String>,
    /// Make the change (one transaction); without it only the diff is shown
    #[arg(long)]
    pub apply: bool,
    /// Put back the values of the newest (or --change-set) applied change
    #[arg(long, conflicts_with = "apply")]
    pub restore: bool,
    #[arg(long, value_name = "ID", requires = "restore")]
    pub change_set: Option<String>,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: FlavorsArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let nova = settings.nova_db.as_ref().ok_or_else(|| Failure::usage("no Nova database given: use --nova-db URL (the nova DB for Juno flavors, nova_api for modern ones) or BM2IRONIC_NOVA_DB"))?;
    let access = if args.apply || args.restore { Access::ReadWrite } else { Access::ReadOnly };
    let db = Db::connect(&nova.value, access).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let schema = flavors::detect(&db).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    if args.restore {
        super::engine::confirm(
            args.yes,
            &format!("This restores the recorded flavor values in {}", nova.value.redacted()),
            "restore",
        )?;
        let (set, n) = flavors::restore(&db, schema, args.change_set.as_deref())
            .await
            .map_err(|e| Failure::runtime(e.to_string()))?;
        db.close().await;
        let _ = writeln!(out, "restored {n} flavor spec(s) of change set {set}");
        return Ok(());
    }
    let target = match (&args.deploy_kernel, &args.deploy_ramdisk, &args.resource_class) {
        (Some(k), Some(r), None) => FlavorTarget::DeployImages { kernel: k.clone(), ramdisk: r.clone() },
        (None, None, Some(c)) => FlavorTarget::ResourceClass(c.clone()),
        _ => return Err(Failure::usage("say what the flavors need: --deploy-kernel and --deploy-ramdisk (Juno/Kilo Ironic) or --resource-class (modern Nova)")),
    };
    let changes = flavors::plan_changes(&db, schema, &target, &args.flavors)
        .await
        .map_err(|e| Failure::runtime(e.to_string()))?;
    if args.json {
        let _ = writeln!(out, "{}", json!({"schema": schema, "changes": changes}));
    } else {
        let mut t = Table::new(&[("FLAVOR", false), ("KEY", false), ("OLD", false), ("NEW", false)]);
        for c in &changes {
            t.row(vec![
                c.flavor.clone(),
                c.key.clone(),
                c.old.clone().unwrap_or_else(|| "(added)".into()),
                c.new.clone(),
            ]);
        }
        let _ = write!(out, "{}", t.render());
        let _ = writeln!(
            out,
            "{} change(s) in {:?} flavor tables{}",
            changes.len(),
            schema,
            if args.apply { "" } else { " (diff only: add --apply to make them)" }
        );
    }
    if args.apply && !changes.is_empty() {
        super::engine::confirm(
            args.yes,
            &format!("This changes {} flavor spec(s) in {}", changes.len(), nova.value.redacted()),
            "apply",
        )?;
        let set = uuid::Uuid::new_v4().to_string();
        flavors::apply(&db, schema, &changes, &set).await.map_err(|e| Failure::runtime(e.to_string()))?;
        let _ = writeln!(out, "applied as change set {set} (undo: bm2ironic flavors --restore --change-set {set})");
    }
    db.close().await;
    Ok(())
}
