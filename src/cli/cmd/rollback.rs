//! `bm2ironic rollback`: the rollback use case (`core::migrate::steps::rollback`: Ironic first, a
//! SQL run in one transaction or an API run through the API with maintenance first and no power
//! action; then the flavors and the instances' hosts when the Nova databases are given), asked
//! through this face; `--list` shows the recorded runs.

use clap::Args;
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{print, print_json, Prompt, Table};
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::hosts::HostsError;
use crate::core::migrate::load_api::rollback::ApiRollbackReport;
use crate::core::migrate::rollback::RollbackReport;
use crate::core::migrate::steps::rollback::{self, when, RollbackRequest, Undone};
use crate::core::settings::ConnectionSettings;
use crate::core::text::visible_line;

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
    /// Machine-readable output (with --list: every run; else what was removed)
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: RollbackArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    if args.list {
        let runs = rollback::list_runs(&settings, global.state_dir()).await?;
        // the database's table says which plan each run loaded; run files are API runs only
        list_runs(&runs, args.json, settings.ironic_db.is_some());
        return Ok(());
    }
    let api = global.api_target(&settings)?;
    let req = RollbackRequest {
        settings: &settings,
        api: &api,
        state_dir: global.state_dir(),
        run: args.run.as_deref(),
        force: args.force,
    };
    let mut face = Prompt { yes: args.yes, word: "rollback", refused: None };
    match rollback::rollback_ironic(&req, &mut face).await {
        Ok(Undone::Sql(r)) => print_report(&r, args.json),
        Ok(Undone::Api(r)) => print_api_report(&r, args.json),
        Err(e) => return Err(face.failure(e)),
    }
    restore_nova(&settings).await
}

/// What a rollback removed, as text or (`--json`) one summary event.
fn print_report(r: &RollbackReport, json_out: bool) {
    if json_out {
        print_json(
            &json!({"event": "summary", "run_id": r.run_id, "removed_nodes": r.removed_nodes, "removed_ports": r.removed_ports, "already_gone": r.already_gone, "forced": r.changed_but_forced, "not_restored": r.not_restored, "not_ours": r.not_ours, "unrecorded_removed": r.unrecorded_removed, "unreadable_skipped": r.unreadable_skipped}),
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
        print_marker_lines(&r.not_ours, &r.unrecorded_removed, &r.unreadable_skipped);
    }
}

/// What Ironic's markers decided beyond the record: nodes left alone, nodes removed only because
/// `--force` was given, record rows skipped.
fn print_marker_lines(not_ours: &[String], unrecorded: &[String], unreadable: &[String]) {
    for u in not_ours {
        print(&format!("  left alone (its marker names another run, or none): {u}\n"));
    }
    for u in unrecorded {
        print(&format!("  removed with --force (marked as this run's, missing from its record): {u}\n"));
    }
    for u in unreadable {
        print(&format!("  record row skipped with --force (unreadable): {}\n", visible_line(u)));
    }
}

/// `--list`: the recorded runs, a table or (`--json`) one JSON document.
fn list_runs(runs: &[(crate::core::migrate::run::record::RunRecord, usize)], json_out: bool, checksum: bool) {
    if json_out {
        let list: Vec<_> = runs
            .iter()
            .map(|(r, n)| {
                json!({"run_id": r.id, "started_at": r.started_at.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                       "status": r.status, "nodes": n, "plan_checksum": r.plan_checksum})
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
    for (r, n) in runs {
        let mut row = vec![r.id.to_string(), when(&r.started_at), r.status.to_string(), n.to_string()];
        if checksum {
            row.push(r.plan_checksum.chars().take(12).collect());
        }
        t.row(row);
    }
    print(&t.render());
}

/// After Ironic, Nova: the flavors changed for the upgrade, then the instances' hosts (an old
/// baremetal nova-compute restarted while they name another host would destroy them).
async fn restore_nova(settings: &ConnectionSettings) -> Result<(), Failure> {
    let restored = rollback::restore_nova(settings).await;
    match restored.flavors {
        Some(Ok((set, n))) => print(&format!("Restored {n} flavor spec(s) of change set {set}.\n")),
        Some(Err(FlavorError::NothingToRestore)) => print("No flavor change to restore.\n"),
        Some(Err(e)) => {
            return Err(Failure::runtime(format!(
            "Ironic was rolled back, but the flavors were not restored: {e} (retry with `bm2ironic flavors --restore`)"
        )))
        }
        None => {}
    }
    match restored.hosts {
        Some(Ok((set, n))) => print(&format!("Restored the host and node of {n} instance(s) of change set {set}.\n")),
        Some(Err(HostsError::NothingToRestore)) | None => {}
        Some(Err(e)) => return Err(Failure::runtime(format!("Ironic was rolled back, but the instances' hosts were not restored: {e} (retry with `bm2ironic hosts --restore`, before any baremetal nova-compute starts)"))),
    }
    Ok(())
}

/// What an API rollback removed, as text or (`--json`) one summary event.
fn print_api_report(r: &ApiRollbackReport, json_out: bool) {
    if json_out {
        print_json(
            &json!({"event": "summary", "run_id": r.run_id, "removed_nodes": r.removed_nodes, "already_gone": r.already_gone, "not_ours": r.not_ours, "forced": r.changed_but_forced, "unrecorded_removed": r.unrecorded_removed, "unreadable_skipped": r.unreadable_skipped}),
        );
    } else {
        print(&format!(
            "Rolled back API run {}: removed {} nodes ({} already gone), each put in maintenance first.\n",
            r.run_id, r.removed_nodes, r.already_gone
        ));
        print_marker_lines(&r.not_ours, &r.unrecorded_removed, &r.unreadable_skipped);
    }
}
