//! `bm2ironic rollback`: removes from Ironic what a migration run wrote (and, when the Nova database
//! is given, puts the flavors back); `--list` shows the recorded runs.

use clap::Args;
use serde_json::json;

use crate::cli::output::{confirm, print, print_json, Table};
use crate::cli::{Failure, GlobalArgs};
use crate::core::db::{Access, Db};
use crate::core::ironic::target;
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::load_sql;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback;
use crate::core::migrate::steps;

#[derive(Args, Debug, Default)]
pub struct RollbackArgs {
    /// The run to remove (default: the newest committed one)
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Remove even nodes Ironic has changed since the load
    #[arg(long)]
    pub force: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// List the runs recorded in the Ironic database and exit
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: RollbackArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let tgt = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
    let db = target::connect(&tgt.value).await?;
    if args.list {
        let runs = load_sql::runs(&db).await?;
        let mut t =
            Table::new(&[("RUN", false), ("STARTED", false), ("STATUS", false), ("NODES", true), ("CHECKSUM", false)]);
        for r in &runs {
            t.row(vec![
                r.id.clone(),
                r.started_at.to_string(),
                r.status.clone(),
                r.written.len().to_string(),
                r.plan_checksum.chars().take(12).collect(),
            ]);
        }
        print(&t.render());
        return Ok(());
    }
    confirm(
        args.yes,
        &format!(
            "This removes from {} the nodes and ports that run {} wrote",
            tgt.value.redacted(),
            args.run.as_deref().unwrap_or("(newest)")
        ),
        "rollback",
    )?;
    let r = rollback::rollback(&db, args.run.as_deref(), args.force).await;
    db.close().await;
    let r = r?;
    if args.json {
        print_json(
            &json!({"event": "summary", "run_id": r.run_id, "removed_nodes": r.removed_nodes, "removed_ports": r.removed_ports, "already_gone": r.already_gone, "forced": r.changed_but_forced, "not_restored": r.not_restored}),
        );
    } else {
        print(&format!(
            "Rolled back run {}: removed {} nodes and {} ports ({} already gone).\n",
            r.run_id, r.removed_nodes, r.removed_ports, r.already_gone
        ));
        for c in &r.changed_but_forced {
            print(&format!("  forced over a change: {c}\n"));
        }
        for n in &r.not_restored {
            print(&format!("  NOT restored (deleted by `replace`): {n}\n"));
        }
    }
    // the flavors changed for the upgrade go back too, when the database holding them is given
    if let Some(nova) = settings.flavors_db() {
        let ndb = Db::connect(&nova.value, Access::ReadWrite).await?;
        let restored = steps::restore_flavor_changes(&ndb, None).await;
        ndb.close().await;
        match restored {
            Ok((set, n)) => print(&format!("Restored {n} flavor spec(s) of change set {set}.\n")),
            Err(FlavorError::NothingToRestore) => print("No flavor change to restore.\n"),
            Err(e) => return Err(Failure::runtime(format!("Ironic was rolled back, but the flavors were not restored: {e} (retry with `bm2ironic flavors --restore`)"))),
        }
    }
    Ok(())
}
