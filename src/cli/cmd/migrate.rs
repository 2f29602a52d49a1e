//! `bm2ironic migrate`: performs the migration, one transaction on the Ironic database
//! (`--rehearse` rolls it back), or through Ironic's API with `--via api` (`migrate_api.rs`); asks
//! for confirmation unless `--yes`; `--report FILE` writes the run report for the change ticket (a
//! committed load is verified for it first).

use std::io::IsTerminal;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::cli::args::{prepare_with_settings, GlobalArgs, MigrateArgs, Via};
use crate::cli::failure::{exit, Failure};
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{
    check_report_path, confirm, note, note_inline, print, print_blocking, print_counts, print_json, verify_for_report,
    write_report, ReportFallback,
};
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::report::Outcome;
use crate::core::migrate::steps;
use crate::core::migrate::timing::{human_ms, human_rate, ms, Phases, Throughput};
use crate::core::text::visible_line;

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    check_report_path(args.report.as_deref())?;
    if args.plan.via == Via::Api {
        return super::migrate_api::run(global, args).await;
    }
    let (prepared, settings) = prepare_with_settings(global, &args.plan).await?;
    let p = &prepared.plan;
    let json_out = args.plan.json;
    if p.blocking() > 0 {
        print_blocking(p, json_out);
        let why = format!("{} blocking conflict(s) unresolved: nothing written", p.blocking());
        write_report(
            &args,
            &settings,
            &prepared,
            Outcome::NotStarted(why.clone()),
            prepared.timings,
            None,
            ReportFallback::None,
        )?;
        if let Some(db) = &prepared.target_db {
            db.close().await;
        }
        return Err(Failure { code: exit::CONFLICTS, message: why });
    }
    let target_db = prepared.target_db.clone().ok_or_else(|| Failure::runtime("no Ironic database open"))?;
    let target_desc = target_db.url.redacted().to_string();
    let state_dir = global.state_dir();
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
    let interrupt = Interrupt::on_signals(&cancel);
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
            print_json(&ev);
            continue;
        }
        match ev {
            LoadEvent::Started { run_id, nodes, ports, rehearse } => {
                note(&format!(
                    "{} run {run_id}: {nodes} nodes, {ports} ports",
                    if rehearse { "REHEARSAL" } else { "LIVE" }
                ));
            }
            LoadEvent::Progress { done, total, elapsed_ms } if tty => {
                throughput.push(elapsed_ms, done);
                let rate = throughput.rate().map(human_rate).unwrap_or_else(|| "-".into());
                let eta = throughput.eta_s(total).map(|s| human_ms(s * 1000.0)).unwrap_or_else(|| "-".into());
                note_inline(&format!("\r  written {done}/{total} nodes, {rate} nodes/s, ETA {eta}   "))
            }
            LoadEvent::Node { uuid, status: NodeStatus::Skipped { reason }, nova_bm_id } if global.verbose > 0 => {
                note(&format!("  skip nova_bm {nova_bm_id} {}: {}", visible_line(&uuid), visible_line(&reason)))
            }
            _ => {}
        }
    }
    if tty && !json_out {
        note("");
    }
    let (result, prepared) = task.await.map_err(|e| Failure::runtime(format!("the load task failed: {e}")))?;
    let s = match result {
        Ok(s) => s,
        Err(e) => {
            target_db.close().await;
            let e = Failure::from(e);
            let e = Failure { message: interrupt.explain(&e.message), ..e };
            if json_out {
                // the stream ends with what happened, as a reader of the events needs it
                print_json(
                    &serde_json::json!({"event": "failed", "exit_code": e.code, "committed": false, "message": e.message}),
                );
            }
            write_report(
                &args,
                &settings,
                &prepared,
                Outcome::Failed(e.message.clone()),
                prepared.timings,
                None,
                ReportFallback::None,
            )?;
            return Err(e);
        }
    };
    let mut phases = Phases { load_ms: Some(s.load_ms), commit_ms: Some(s.commit_ms), ..prepared.timings };
    let verify = match (&args.report, s.committed) {
        (Some(_), true) => {
            let started = Instant::now();
            let v = verify_for_report(global, &settings, &prepared, &s).await;
            phases.verify_ms = Some(ms(started.elapsed()));
            Some(v)
        }
        _ => None,
    };
    target_db.close().await;
    if !json_out {
        print_summary(&s, &phases);
    }
    // after a commit, a report that cannot be written is a warning, never a failed exit
    let fallback = if s.committed { ReportFallback::Into(&state_dir) } else { ReportFallback::None };
    write_report(&args, &settings, &prepared, Outcome::Loaded(&s), phases, verify, fallback)?;
    Ok(())
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
