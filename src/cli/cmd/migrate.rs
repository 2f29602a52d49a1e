//! `bm2ironic migrate`: performs the migration, one transaction on the Ironic database
//! (`--rehearse` rolls it back), or through Ironic's API with `--via api` (`migrate_api.rs`); asks
//! for confirmation unless `--yes`; `--report FILE` writes the run report for the change ticket (a
//! committed load is verified for it first).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::output::{confirm, print, print_json, print_plan, Table};
use crate::cli::{exit, prepare_with_settings, via_api, Failure, GlobalArgs, PlanArgs, ENV_IRONIC_TOKEN};
use crate::core::db::conf::ConnectionSettings;
use crate::core::db::secret::Secret;
use crate::core::ironic::api::IronicApi;
use crate::core::migrate::load_sql::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::prepare::Prepared;
use crate::core::migrate::report::{self, Outcome, Report, ReportInput, Who};
use crate::core::migrate::steps;
use crate::core::migrate::timing::{human_ms, human_rate, ms, Phases, Throughput};
use crate::core::text::visible_line;

#[derive(Args, Debug, Default)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Do everything, then roll the transaction back: nothing stays
    #[arg(long)]
    pub rehearse: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// Write the run report to FILE (Markdown; JSON when FILE ends in .json); a committed load is
    /// verified for it
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// --via api: nodes in flight at once
    #[arg(long, value_name = "N", default_value_t = crate::core::migrate::load_api::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// --via api: how long one step of a node (manage, adopt, provide) may take
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub step_timeout: String,
}

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    if via_api(&args.plan)? {
        if args.report.is_some() {
            return Err(Failure::usage("--report is written for --via db loads only (for now)"));
        }
        return super::migrate_api::run(global, args).await;
    }
    let (prepared, settings) = prepare_with_settings(global, &args.plan).await?;
    let p = &prepared.plan;
    let json_out = args.plan.json;
    if p.blocking() > 0 {
        print_blocking(p, json_out);
        let why = format!("{} blocking conflict(s) unresolved: nothing written", p.blocking());
        write_report(&args, &settings, &prepared, Outcome::NotStarted(why.clone()), prepared.timings, None)?;
        if let Some(db) = &prepared.target_db {
            db.close().await;
        }
        return Err(Failure { code: exit::CONFLICTS, message: why });
    }
    let target_db = prepared.target_db.clone().ok_or_else(|| Failure::runtime("no Ironic database open"))?;
    let target_desc = target_db.url.redacted().to_string();
    if !args.rehearse {
        confirm(
            args.yes,
            &format!(
                "This writes {} nodes and {} ports into {target_desc} in one transaction",
                p.summary.create, p.summary.ports
            ),
            "migrate",
        )?;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let cancel_on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel_on_ctrl_c.cancel();
        }
    });
    let db = target_db.clone();
    let rehearse = args.rehearse;
    let task = tokio::spawn(async move {
        let r = steps::load(&db, &prepared, &prepared.plan, rehearse, &tx, &cancel).await;
        (r, prepared)
    });
    let tty = std::io::stderr().is_terminal();
    let mut throughput = Throughput::default();
    while let Some(ev) = rx.recv().await {
        if json_out {
            print(&format!("{}\n", serde_json::to_string(&ev).unwrap_or_default()));
            continue;
        }
        match ev {
            LoadEvent::Started { run_id, nodes, ports, rehearse } => {
                eprintln!("{} run {run_id}: {nodes} nodes, {ports} ports", if rehearse { "REHEARSAL" } else { "LIVE" });
            }
            LoadEvent::Progress { done, total, elapsed_ms } if tty => {
                throughput.push(elapsed_ms, done);
                let rate = throughput.rate().map(human_rate).unwrap_or_else(|| "-".into());
                let eta = throughput.eta_s(total).map(|s| human_ms(s * 1000.0)).unwrap_or_else(|| "-".into());
                eprint!("\r  written {done}/{total} nodes, {rate} nodes/s, ETA {eta}   ")
            }
            LoadEvent::Node { uuid, status: NodeStatus::Skipped { reason }, nova_bm_id } if global.verbose > 0 => {
                eprintln!("  skip nova_bm {nova_bm_id} {}: {}", visible_line(&uuid), visible_line(&reason))
            }
            _ => {}
        }
    }
    if tty && !json_out {
        eprintln!();
    }
    let (result, prepared) = task.await.map_err(|e| Failure::runtime(format!("the load task failed: {e}")))?;
    let s = match result {
        Ok(s) => s,
        Err(e) => {
            target_db.close().await;
            let e = Failure::from(e);
            write_report(&args, &settings, &prepared, Outcome::Failed(e.message.clone()), prepared.timings, None)?;
            return Err(e);
        }
    };
    let mut phases = Phases { load_ms: Some(s.load_ms), commit_ms: Some(s.commit_ms), ..prepared.timings };
    let verify = match (&args.report, s.committed) {
        (Some(_), true) => {
            let started = Instant::now();
            let v = verify_for_report(&settings, &prepared, &s).await;
            phases.verify_ms = Some(ms(started.elapsed()));
            Some(v)
        }
        _ => None,
    };
    target_db.close().await;
    if !json_out {
        print_summary(&s, &phases);
    }
    write_report(&args, &settings, &prepared, Outcome::Loaded(&s), phases, verify)?;
    Ok(())
}

/// The counts of a load, one table for both loaders (`created`/`errors` named as each loader means them).
pub(super) fn print_counts(s: &LoadSummary, created: &str, errors: &str, time: String) {
    let mut t = Table::new(&[
        ("read", true),
        (created, true),
        ("skipped", true),
        ("already", true),
        ("maintenance", true),
        ("ports", true),
        (errors, true),
        ("time", true),
    ]);
    t.row(vec![
        s.read.to_string(),
        s.created.to_string(),
        s.skipped.to_string(),
        s.already_migrated.to_string(),
        s.maintenance.to_string(),
        s.ports.to_string(),
        s.errors.to_string(),
        time,
    ]);
    print(&t.render());
}

/// A plan with unresolved blocking conflicts: the conflicts as events (`--json`) or the plan's text.
pub(super) fn print_blocking(p: &crate::core::migrate::plan::Plan, json_out: bool) {
    if json_out {
        for c in p.conflicts.iter().filter(|c| c.is_unresolved_blocking()) {
            print_json(&json!({"event": "conflict", "code": c.code, "node_uuid": c.node_uuid, "detail": c.detail}));
        }
        print_json(&json!({"event": "summary", "committed": false, "blocking": p.blocking(), "created": 0}));
    } else {
        print_plan(p);
    }
}

fn print_summary(s: &LoadSummary, phases: &Phases) {
    print_counts(s, "created", "errors", human_ms(s.elapsed_ms));
    print(&format!("time: {}\n", phases.line(!s.committed)));
    if s.rehearse {
        print(&format!("REHEARSAL run {}: everything was written, then rolled back; nothing stays.\n", s.run_id));
    } else if s.committed {
        print(&format!("Committed run {} (plan checksum {}). Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, &s.plan_checksum[..12], s.run_id, s.run_id));
    } else {
        print("Nothing to write.\n");
    }
}

/// The verification of a committed run, for the report: what it found, or why it did not pass.
async fn verify_for_report(
    settings: &ConnectionSettings,
    prepared: &Prepared,
    s: &LoadSummary,
) -> Result<String, String> {
    let db = prepared.target_db.as_ref().ok_or("no Ironic database open")?;
    let token = std::env::var(ENV_IRONIC_TOKEN).ok().filter(|t| !t.is_empty()).map(Secret::new);
    let api = match &settings.ironic_url {
        Some(u) => Some(IronicApi::new(&u.value, token, prepared.target.schema.kind).map_err(|e| e.to_string())?),
        None => None,
    };
    let v =
        steps::verify_run(db, Some(&s.run_id), &prepared.inventory, api.as_ref()).await.map_err(|e| e.to_string())?;
    report::verify_text(&v.report)
}

/// Writes the run report when `--report` asks for one.
fn write_report(
    args: &MigrateArgs,
    settings: &ConnectionSettings,
    prepared: &Prepared,
    outcome: Outcome,
    phases: Phases,
    verify: Option<Result<String, String>>,
) -> Result<(), Failure> {
    let Some(path) = &args.report else { return Ok(()) };
    let url = |s: &Option<crate::core::db::conf::Setting<crate::core::db::url::DbUrl>>| {
        s.as_ref().map(|s| s.value.redacted().to_string())
    };
    let input = ReportInput {
        who: Who::current(),
        plan: &prepared.plan,
        source: prepared.source.clone(),
        target: url(&settings.ironic_db).unwrap_or_default(),
        nova: url(&settings.nova_db),
        nova_api: url(&settings.nova_api_db),
        ironic_api: settings.ironic_url.as_ref().map(|u| u.value.clone()),
        outcome,
        phases,
        verify,
        takeover: None,
        flavors_change_set: None,
        resolutions_file: args.plan.resolutions.as_ref().map(|p| p.display().to_string()),
    };
    report::write(&Report::new(&input), path)
        .map_err(|e| Failure::runtime(format!("cannot write the report {}: {e}", path.display())))?;
    eprintln!("run report written to {}", path.display());
    Ok(())
}
