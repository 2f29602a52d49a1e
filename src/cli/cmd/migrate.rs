//! `bm2ironic migrate`: performs the migration, one transaction on the Ironic database
//! (`--rehearse` rolls it back), or through Ironic's API with `--via api` (`migrate_api.rs`); asks
//! for confirmation unless `--yes`.

use std::io::IsTerminal;

use clap::Args;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::output::{confirm, print, print_json, render_plan, Table};
use crate::cli::{exit, prepare_from, via_api, Failure, GlobalArgs, PlanArgs};
use crate::core::migrate::load_sql::{LoadEvent, NodeStatus};
use crate::core::migrate::steps;

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
    /// --via api: nodes in flight at once
    #[arg(long, value_name = "N", default_value_t = crate::core::migrate::load_api::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// --via api: how long one step of a node (manage, adopt, provide) may take
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub step_timeout: String,
}

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    if via_api(&args.plan)? {
        return super::migrate_api::run(global, args).await;
    }
    let prepared = prepare_from(global, &args.plan).await?;
    let p = &prepared.plan;
    let json_out = args.plan.json;
    if p.blocking() > 0 {
        if json_out {
            for c in p.conflicts.iter().filter(|c| c.is_unresolved_blocking()) {
                print_json(&json!({"event": "conflict", "code": c.code, "node_uuid": c.node_uuid, "detail": c.detail}));
            }
            print_json(&json!({"event": "summary", "committed": false, "blocking": p.blocking(), "created": 0}));
        } else {
            print(&render_plan(p));
        }
        if let Some(db) = &prepared.target_db {
            db.close().await;
        }
        return Err(Failure {
            code: exit::CONFLICTS,
            message: format!("{} blocking conflict(s) unresolved: nothing written", p.blocking()),
        });
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
    let task = tokio::spawn(async move { steps::load(&db, &prepared, &prepared.plan, rehearse, &tx, &cancel).await });
    let tty = std::io::stderr().is_terminal();
    while let Some(ev) = rx.recv().await {
        if json_out {
            print(&format!("{}\n", serde_json::to_string(&ev).unwrap_or_default()));
            continue;
        }
        match ev {
            LoadEvent::Started { run_id, nodes, ports, rehearse } => {
                eprintln!("{} run {run_id}: {nodes} nodes, {ports} ports", if rehearse { "REHEARSAL" } else { "LIVE" });
            }
            LoadEvent::Progress { done, total } if tty => eprint!("\r  written {done}/{total} nodes"),
            LoadEvent::Node { uuid, status: NodeStatus::Skipped { reason }, nova_bm_id } if global.verbose > 0 => {
                eprintln!("  skip nova_bm {nova_bm_id} {uuid}: {reason}")
            }
            _ => {}
        }
    }
    if tty && !json_out {
        eprintln!();
    }
    let result = task.await.map_err(|e| Failure::runtime(format!("the load task failed: {e}")))?;
    target_db.close().await;
    let s = result?;
    if !json_out {
        let mut t = Table::new(&[
            ("read", true),
            ("created", true),
            ("skipped", true),
            ("already", true),
            ("maintenance", true),
            ("ports", true),
            ("errors", true),
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
            format!("{:.2}s", s.elapsed_ms as f64 / 1000.0),
        ]);
        print(&t.render());
        if s.rehearse {
            print(&format!("REHEARSAL run {}: everything was written, then rolled back; nothing stays.\n", s.run_id));
        } else if s.committed {
            print(&format!("Committed run {} (plan checksum {}). Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, &s.plan_checksum[..12], s.run_id, s.run_id));
        } else {
            print("Nothing to write.\n");
        }
    }
    Ok(())
}
