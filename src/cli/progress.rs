//! What `migrate` prints while and after it loads, on either path: each `LoadEvent` as a line (or
//! as JSON with `--json`), the counts at the end, and what to do next. The use case
//! (`core::migrate::steps::migrate`) sends the events; this only shows them.

use std::io::IsTerminal;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::cli::failure::Failure;
use crate::cli::output::{note, note_inline, print, print_blocking, print_counts, print_json};
use crate::core::migrate::events::{LoadEvent, NodeStatus};
use crate::core::migrate::plan::Plan;
use crate::core::migrate::run::RunKind;
use crate::core::migrate::steps::{Ended, Outcome, StepError};
use crate::core::migrate::timing::{human_ms, human_rate, Throughput};
use crate::core::text::visible_line;

/// How the events are shown.
#[derive(Clone, Copy)]
pub struct Show {
    pub json: bool,
    pub verbose: bool,
    /// how the run writes (the API path's progress reads as nodes settled, not written)
    pub kind: RunKind,
}

/// Shows the events until the load drops its sender.
pub async fn show_events(mut rx: UnboundedReceiver<LoadEvent>, show: Show) {
    let tty = std::io::stderr().is_terminal();
    let mut throughput = Throughput::default();
    while let Some(ev) = rx.recv().await {
        if show.json {
            print_json(&ev);
            continue;
        }
        match ev {
            LoadEvent::Started { run_id, nodes, ports, .. } if show.kind == RunKind::Api => {
                note(&format!("API run {run_id}: {nodes} nodes, {ports} ports"))
            }
            LoadEvent::Started { run_id, nodes, ports, rehearse } => note(&format!(
                "{} run {run_id}: {nodes} nodes, {ports} ports",
                if rehearse { "REHEARSAL" } else { "LIVE" }
            )),
            LoadEvent::Progress { done, total, .. } if tty && show.kind == RunKind::Api => {
                note_inline(&format!("\r  {done}/{total} nodes settled"))
            }
            LoadEvent::Progress { done, total, elapsed_ms } if tty => {
                throughput.push(elapsed_ms, done);
                let rate = throughput.rate().map(human_rate).unwrap_or_else(|| "-".into());
                let eta = throughput.eta_s(total).map(|s| human_ms(s * 1000.0)).unwrap_or_else(|| "-".into());
                note_inline(&format!("\r  written {done}/{total} nodes, {rate} nodes/s, ETA {eta}   "))
            }
            LoadEvent::Node { uuid, status: NodeStatus::Skipped { reason }, nova_bm_id } if show.verbose => {
                note(&format!("  skip nova_bm {nova_bm_id} {}: {}", visible_line(&uuid), visible_line(&reason)))
            }
            LoadEvent::NodeState { uuid, state, .. } if show.verbose => note(&format!("  {uuid}: {state}")),
            LoadEvent::Node { nova_bm_id, uuid, status: NodeStatus::Failed { error } } => {
                if tty {
                    note_inline("\r");
                }
                note(&format!("  FAILED {uuid} (nova_bm {nova_bm_id}): {error}"));
            }
            _ => {}
        }
    }
    if tty && !show.json {
        note("");
    }
}

/// What the operator reads once `migrate` ended: the undecided conflicts when they stopped it, else
/// the counts and the next step of a load that ran (a load that stopped or was rolled back says so
/// in its failure line).
pub fn print_ended(o: &Outcome, show: Show, plan: &Plan) {
    match &o.ended {
        Ended::NotStarted(StepError::Blocking { .. }) => print_blocking(plan, show.json),
        Ended::NotStarted(_) | Ended::RolledBack(_) | Ended::Stopped { .. } => {}
        _ => print_outcome(o, show, plan),
    }
}

/// The counts and the next step, once a load ended (the outcome the core decided).
fn print_outcome(o: &Outcome, show: Show, plan: &Plan) {
    let Some(s) = o.summary.as_ref().filter(|_| !show.json) else { return };
    if o.kind == RunKind::Api {
        print_counts(s, "changed", "failed", format!("{:.2}s", s.elapsed_ms / 1000.0));
        match &o.ended {
            Ended::Adopted if plan.summary.create > 0 => print(&format!("Run {} done through the API. Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, s.run_id, s.run_id)),
            Ended::NothingToWrite => print("Nothing to create.\n"),
            Ended::PartlyAdopted { left, .. } => print(&format!("{} node(s) of run {} are in Ironic now; the others were not finished.\n", left.len(), s.run_id)),
            _ => {}
        }
        return;
    }
    print_counts(s, "created", "errors", human_ms(s.elapsed_ms));
    print(&format!("time: {}\n", o.phases.line(!o.complete())));
    match &o.ended {
        Ended::Rehearsed => print(&format!("REHEARSAL run {}: everything was written, then rolled back; nothing stays.\n", s.run_id)),
        Ended::Committed => print(&format!("Committed run {} (plan checksum {}). Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, &s.plan_checksum[..12.min(s.plan_checksum.len())], s.run_id, s.run_id)),
        _ => print("Nothing to write.\n"),
    }
}

/// `--json`: the stream ends with what failed, as a reader of the events needs it (`started`:
/// through the API, whether any node was begun; the SQL path says nothing was committed). A SQL
/// plan that did not start ended with its summary already: nothing more.
pub fn print_failed(o: &Outcome, show: Show, f: &Failure) {
    let started = !matches!(o.ended, Ended::NotStarted(_));
    if !show.json || !(started || o.kind == RunKind::Api) {
        return;
    }
    if show.kind == RunKind::Api {
        print_json(
            &serde_json::json!({"event": "failed", "exit_code": f.code(), "started": started, "message": f.message()}),
        );
    } else {
        print_json(
            &serde_json::json!({"event": "failed", "exit_code": f.code(), "committed": false, "message": f.message()}),
        );
    }
}
