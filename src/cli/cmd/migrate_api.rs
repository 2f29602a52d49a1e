//! `bm2ironic migrate --via api`: the same plan, loaded through Ironic's REST API with the adopt
//! flow, `--concurrency` nodes at a time; a failed node is named with Ironic's error while the others
//! go on, and a rerun resumes the run.

use std::io::IsTerminal;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::cli::args::{prepare_api_from, GlobalArgs, MigrateArgs};
use crate::cli::failure::{exit, Failure};
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{
    confirm, note, note_inline, print, print_blocking, print_counts, print_json, verify_for_report, write_report,
    ReportFallback,
};
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::load_api::prepare::PreparedApi;
use crate::core::migrate::load_api::ApiLoadOptions;
use crate::core::migrate::report::Outcome;
use crate::core::migrate::steps::ApiLoadTarget;
use crate::core::migrate::timing::{ms, Phases};

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    if args.rehearse {
        return Err(Failure::usage(
            "--rehearse needs --via db: the API has no transaction to roll back (rehearse on a copy, or use `plan --via api`)",
        ));
    }
    let opts =
        ApiLoadOptions { concurrency: args.concurrency.max(1), step_timeout: args.step_timeout, ..Default::default() };
    let (prepared, target, settings) = prepare_api_from(global, &args.plan).await?;
    let mut started = false;
    let cancel = CancellationToken::new();
    let interrupt = Interrupt::on_signals(&cancel);
    let result = load(global, &args, &prepared, &target, &opts, &mut started, &cancel).await;
    target.close().await;
    let p = &prepared.prepared;
    let Loaded { failure, summary: s, failed } = match result {
        Ok(done) => done,
        Err(e) => {
            let e = Failure { message: interrupt.explain(&e.message), ..e };
            if args.plan.json {
                print_json(
                    &serde_json::json!({"event": "failed", "exit_code": e.code, "started": started, "message": e.message}),
                );
            }
            let why = e.message.clone();
            // before the first node (conflicts, not confirmed, the run store) nothing happened; after
            // it, no transaction rolls anything back: what was done stays, a rerun resumes
            let outcome = match (e.code, started) {
                (exit::CONFLICTS, _) | (_, false) => Outcome::NotStarted(why),
                _ => Outcome::Stopped(why),
            };
            write_report(&args, &settings, p, outcome, p.timings, None, ReportFallback::None)?;
            return Err(e);
        }
    };
    let mut phases = Phases { load_ms: Some(s.load_ms), ..p.timings };
    let verify = match (&args.report, s.committed) {
        (Some(_), true) => {
            let started = Instant::now();
            let v = verify_for_report(global, &settings, p, &s).await;
            phases.verify_ms = Some(ms(started.elapsed()));
            Some(v)
        }
        _ => None,
    };
    // the nodes done through the API stay done: a report that cannot be written after them is a
    // warning, never a failed exit
    let state_dir = global.state_dir();
    let fallback = if s.created > 0 { ReportFallback::Into(&state_dir) } else { ReportFallback::None };
    write_report(&args, &settings, p, Outcome::ThroughApi { summary: &s, failed: &failed }, phases, verify, fallback)?;
    match failure {
        Some(f) => {
            let f = Failure { message: interrupt.explain(&f.message), ..f };
            if args.plan.json {
                print_json(
                    &serde_json::json!({"event": "failed", "exit_code": f.code, "started": true, "message": f.message}),
                );
            }
            Err(f)
        }
        None => Ok(()),
    }
}

/// What a load through the API ended with.
struct Loaded {
    /// the failure to report once the report is written (nodes failed, or the run interrupted)
    failure: Option<Failure>,
    summary: LoadSummary,
    /// the nodes that failed (uuid, Ironic's error), which the report names
    failed: Vec<(String, String)>,
}

async fn load(
    global: &GlobalArgs,
    args: &MigrateArgs,
    prepared: &PreparedApi,
    target: &ApiLoadTarget,
    opts: &ApiLoadOptions,
    started: &mut bool,
    cancel: &CancellationToken,
) -> Result<Loaded, Failure> {
    let p = &prepared.prepared.plan;
    let json_out = args.plan.json;
    if p.blocking() > 0 {
        print_blocking(p, json_out);
        return Err(Failure {
            code: exit::CONFLICTS,
            message: format!("{} blocking conflict(s) unresolved: nothing created", p.blocking()),
        });
    }
    if let Some(r) = &prepared.resume {
        note(&format!("Resuming run {}: finished nodes are left alone, the others continue from their state.", r.id));
    }
    if p.summary.create > 0 {
        confirm(
            args.yes,
            &format!(
                "This creates {} nodes and {} ports through the Ironic API at {} (enroll, manage, then adopt or provide), {} at a time",
                p.summary.create,
                p.summary.ports,
                crate::core::db::url::redact_url(target.api.base()),
                opts.concurrency
            ),
            "migrate",
        )?;
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let load = async {
        let r = target.load(prepared, opts, &tx, cancel).await;
        drop(tx);
        r
    };
    let tty = std::io::stderr().is_terminal();
    let mut failed: Vec<(String, String)> = Vec::new();
    let show = async {
        while let Some(ev) = rx.recv().await {
            if json_out {
                print_json(&ev);
            }
            if matches!(ev, LoadEvent::Started { .. }) {
                *started = true;
            }
            match ev {
                LoadEvent::Started { run_id, nodes, ports, .. } if !json_out => {
                    note(&format!("API run {run_id}: {nodes} nodes, {ports} ports"));
                }
                LoadEvent::Progress { done, total, .. } if tty && !json_out => {
                    note_inline(&format!("\r  {done}/{total} nodes settled"))
                }
                LoadEvent::NodeState { uuid, state, .. } if global.verbose > 0 && !json_out => {
                    note(&format!("  {uuid}: {state}"))
                }
                LoadEvent::Node { nova_bm_id, uuid, status: NodeStatus::Failed { error } } => {
                    if !json_out {
                        if tty {
                            note_inline("\r");
                        }
                        note(&format!("  FAILED {uuid} (nova_bm {nova_bm_id}): {error}"));
                    }
                    failed.push((uuid, error));
                }
                _ => {}
            }
        }
    };
    let (result, ()) = tokio::join!(load, show);
    if tty && !json_out {
        note("");
    }
    let s = result?;
    // nothing to write: no run is recorded and nothing committed, which is not a failure
    let nothing_to_write = p.to_write().next().is_none();
    if !json_out {
        print_counts(&s, "changed", "failed", format!("{:.2}s", s.elapsed_ms / 1000.0));
        if s.committed && p.summary.create > 0 {
            print(&format!("Run {} done through the API. Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, s.run_id, s.run_id));
        } else if nothing_to_write {
            print("Nothing to create.\n");
        }
    }
    let failure = (s.errors > 0 || (!s.committed && !nothing_to_write)).then(|| {
        let run = &s.run_id;
        Failure::runtime(match failed.len() {
            // nothing failed: the run was interrupted (Ctrl-C) between steps
            0 => format!(
                "run {run} interrupted: the nodes not finished were left where they stood; rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`"
            ),
            n => format!(
                "run {run}{}: {n} node(s) failed and were left where they are (Ironic's errors above); fix the input and rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`",
                if cancel.is_cancelled() { " (interrupted)" } else { "" }
            ),
        })
    });
    Ok(Loaded { failure, summary: s, failed })
}
