//! What `migrate` prints while and after it loads, on either path: each `LoadEvent` as a line (or
//! as JSON with `--json`), the counts at the end, and what to do next. The use case
//! (`core::migrate::steps::migrate`) sends the events; this only shows them.

use std::io::IsTerminal;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::cli::failure::Failure;
use crate::cli::output::{note, note_inline, print, print_counts, print_json};
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::Plan;
use crate::core::migrate::timing::{human_ms, human_rate, Phases, Throughput};
use crate::core::text::visible_line;

/// How the events are shown.
#[derive(Clone, Copy)]
pub struct Show {
    pub json: bool,
    pub verbose: bool,
    pub via_api: bool,
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
            LoadEvent::Started { run_id, nodes, ports, .. } if show.via_api => {
                note(&format!("API run {run_id}: {nodes} nodes, {ports} ports"))
            }
            LoadEvent::Started { run_id, nodes, ports, rehearse } => note(&format!(
                "{} run {run_id}: {nodes} nodes, {ports} ports",
                if rehearse { "REHEARSAL" } else { "LIVE" }
            )),
            LoadEvent::Progress { done, total, .. } if tty && show.via_api => {
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

/// The counts and the next step, once a load ended.
pub fn print_summary(s: &LoadSummary, phases: &Phases, show: Show, plan: &Plan) {
    if show.json {
        return;
    }
    let nothing_to_write = plan.to_write().next().is_none();
    if show.via_api {
        print_counts(s, "changed", "failed", format!("{:.2}s", s.elapsed_ms / 1000.0));
        if s.committed && plan.summary.create > 0 {
            print(&format!("Run {} done through the API. Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, s.run_id, s.run_id));
        } else if nothing_to_write {
            print("Nothing to create.\n");
        }
        return;
    }
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

/// Through the API, a load that ended with nodes failed or not finished (interrupted): what to do.
/// Nothing to write is not a failure: no run is recorded and nothing committed.
pub fn unfinished(s: &LoadSummary, failed: usize, plan: &Plan, interrupted: bool) -> Option<String> {
    let nothing_to_write = plan.to_write().next().is_none();
    if s.errors == 0 && (s.committed || nothing_to_write) {
        return None;
    }
    let run = &s.run_id;
    Some(match failed {
        // nothing failed: the run was interrupted (Ctrl-C) between steps
        0 => format!(
            "run {run} interrupted: the nodes not finished were left where they stood; rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`"
        ),
        n => format!(
            "run {run}{}: {n} node(s) failed and were left where they are (Ironic's errors above); fix the input and rerun `bm2ironic migrate --via api` to resume, or `bm2ironic rollback --run {run}`",
            if interrupted { " (interrupted)" } else { "" }
        ),
    })
}

/// `--json`: the stream ends with what failed, as a reader of the events needs it (`started`:
/// through the API, whether any node was begun; the SQL path says nothing was committed).
pub fn print_failed(show: Show, f: &Failure, started: bool) {
    if show.via_api {
        print_json(
            &serde_json::json!({"event": "failed", "exit_code": f.code, "started": started, "message": f.message}),
        );
    } else {
        print_json(
            &serde_json::json!({"event": "failed", "exit_code": f.code, "committed": false, "message": f.message}),
        );
    }
}
