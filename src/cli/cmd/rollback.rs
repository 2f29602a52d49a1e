//! `bm2ironic rollback`: removes from Ironic what a migration run wrote (and, when the Nova database
//! is given, puts the flavors and the instances' hosts back); `--list` shows the recorded runs. A run made through the API
//! is undone through the API (`api_rollback`): maintenance first, then delete; no power action.

use clap::Args;
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{confirm, print, print_json, Table};
use crate::core::db::{Access, Db};
use crate::core::ironic::api as ironic_api;
use crate::core::ironic::target;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::hosts::{self, HostsError};
use crate::core::migrate::load_api::rollback::rollback_api;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback;
use crate::core::migrate::steps;
use crate::core::settings::ConnectionSettings;

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
    if api_rollback(global, &settings, &args).await? {
        return if args.list { Ok(()) } else { restore_flavors(&settings).await };
    }
    let tgt = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
    let db = target::connect(&tgt.value).await?;
    if args.yes && !args.list {
        // nobody to ask: straight to the transaction, which takes the target before anything else
        // and picks the run inside it (a migrate started meanwhile waits, then sees the rollback)
        let r = rollback::rollback(&db, args.run.as_deref(), args.force).await;
        db.close().await;
        print_report(&r?, args.json);
        return restore_flavors(&settings).await;
    }
    let runs = crate::core::migrate::run_record::runs(&db).await?;
    if args.list {
        db.close().await;
        list_runs(&runs, args.json, true);
        return Ok(());
    }
    // the prompt names the run it undoes: which one, when, how many nodes
    let what = match rollback::pick_run(runs, args.run.as_deref()) {
        Ok(r) => format!("run {} of {} ({} nodes)", r.id, when(&r.started_at), r.written.len()),
        Err(e) => {
            db.close().await;
            return Err(e.into());
        }
    };
    confirm(
        args.yes,
        &format!("This removes from {} the nodes and ports that {what} wrote", tgt.value.redacted()),
        "rollback",
    )?;
    let r = rollback::rollback(&db, args.run.as_deref(), args.force).await;
    db.close().await;
    print_report(&r?, args.json);
    restore_flavors(&settings).await
}

/// What a rollback removed, as text or (`--json`) one summary event.
fn print_report(r: &rollback::RollbackReport, json_out: bool) {
    if json_out {
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
}

/// A run's start as an operator reads it: to the second, with its zone (the run records keep UTC).
fn when(t: &chrono::NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// `--list`: the recorded runs, a table or (`--json`) one JSON document.
fn list_runs(runs: &[crate::core::migrate::run_record::RunRecord], json_out: bool, checksum: bool) {
    if json_out {
        let list: Vec<_> = runs
            .iter()
            .map(|r| {
                json!({"run_id": r.id, "started_at": r.started_at.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                       "status": r.status, "nodes": r.written.len(), "plan_checksum": r.plan_checksum})
            })
            .collect();
        crate::cli::output::print_json_pretty(&json!({ "runs": list }));
        return;
    }
    let mut headers = vec![("RUN", false), ("STARTED", false), ("STATUS", false), ("NODES", true)];
    if checksum {
        headers.push(("CHECKSUM", false));
    }
    let mut t = Table::new(&headers);
    for r in runs {
        let mut row = vec![r.id.clone(), when(&r.started_at), r.status.to_string(), r.written.len().to_string()];
        if checksum {
            row.push(r.plan_checksum.chars().take(12).collect());
        }
        t.row(row);
    }
    print(&t.render());
}

/// The flavors changed for the upgrade go back too, when the Nova DB is given.
async fn restore_flavors(settings: &ConnectionSettings) -> Result<(), Failure> {
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
    restore_hosts(settings).await
}

/// The instances moved to the Ironic driver's host (`bm2ironic hosts --apply`) go back to their old
/// hosts too, when the Nova DB is given: an old baremetal nova-compute restarted while they name
/// another host would destroy them. Silent when none was moved.
async fn restore_hosts(settings: &ConnectionSettings) -> Result<(), Failure> {
    let Some(nova) = &settings.nova_db else { return Ok(()) };
    let ndb = Db::connect(&nova.value, Access::ReadWrite).await?;
    let restored = hosts::restore_hosts(&ndb, None).await;
    ndb.close().await;
    match restored {
        Ok((set, n)) => print(&format!("Restored the host and node of {n} instance(s) of change set {set}.\n")),
        Err(HostsError::NothingToRestore) => {}
        Err(e) => return Err(Failure::runtime(format!("Ironic was rolled back, but the instances' hosts were not restored: {e} (retry with `bm2ironic hosts --restore`, before any baremetal nova-compute starts)"))),
    }
    Ok(())
}

/// A run made through the API (in the Ironic database's runs, or without one in the state
/// directory): rolled back through the API. False when the run is a SQL one.
async fn api_rollback(
    global: &GlobalArgs,
    settings: &ConnectionSettings,
    args: &RollbackArgs,
) -> Result<bool, Failure> {
    let store = steps::run_store(settings, global.state_dir()).await?;
    let result = async {
        if args.list {
            if settings.ironic_db.is_some() {
                return Ok(false); // the SQL listing shows every run
            }
            list_runs(&store.list().await?, args.json, false);
            return Ok(true);
        }
        let Some(run) = store.pick(args.run.as_deref()).await? else {
            if settings.ironic_db.is_none() {
                return Err(Failure::from(PrepareError::NoTarget));
            }
            return Ok(false);
        };
        let target = global.api_target(settings)?;
        let api = ironic_api::open(&target, TargetKind::Modern).await?.ok_or_else(|| {
            Failure::usage(format!(
                "run {} went through the Ironic API: give --ironic-url or Keystone credentials (--os-cloud, OS_*)",
                run.id
            ))
        })?;
        confirm(
            args.yes,
            &format!(
                "This puts in maintenance and deletes, through the Ironic API at {}, the {} node(s) run {} of {} created (no power action, no teardown)",
                crate::core::db::url::redact_url(api.base()),
                run.written.len(),
                run.id,
                when(&run.started_at)
            ),
            "rollback",
        )?;
        let r = rollback_api(&api, &store, run, args.force).await?;
        if args.json {
            print_json(
                &json!({"event": "summary", "run_id": r.run_id, "removed_nodes": r.removed_nodes, "already_gone": r.already_gone, "not_ours": r.not_ours, "forced": r.changed_but_forced}),
            );
        } else {
            print(&format!(
                "Rolled back API run {}: removed {} nodes ({} already gone), each put in maintenance first.\n",
                r.run_id, r.removed_nodes, r.already_gone
            ));
            for u in &r.not_ours {
                print(&format!("  left alone (not created by this run): {u}\n"));
            }
        }
        Ok(true)
    }
    .await;
    store.close().await;
    result
}
