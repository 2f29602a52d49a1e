//! `migrate --via api`: the same plan as the SQL path, loaded through Ironic's REST API with the
//! adopt flow (`node.rs`), `--concurrency` nodes in flight. A node whose step fails is reported
//! with Ironic's error and the others go on; the run is recorded (`core/migrate/run/store.rs`) and a
//! rerun resumes it. `rollback` puts adopted nodes in maintenance and deletes them, never a power action. Here:
//! the driver (`load_api`); the load's options in `options.rs`, what it fails with in `error.rs`,
//! the shared watch of the nodes waiting on the conductor in `watch.rs`, how long a node polled by
//! itself waits between polls in `pace.rs`.

mod error;
pub mod node;
mod options;
mod pace;
pub mod prepare;
pub mod rollback;
pub mod verify;
mod watch;

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::core::ironic::api::nodes::StateIds;
use crate::core::ironic::api::{nodes, IronicApi};
use crate::core::ironic::marker;
use crate::core::migrate::events::{now, send_skipped, LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{NodePlan, Plan, Rows};
use crate::core::migrate::run::record::{written, ApiProgress, RunRecord};
use crate::core::migrate::run::status::RunStatus;
use crate::core::migrate::run::RunStore;
use node::{Cx, Outcome};

pub use error::ApiLoadError;
pub use options::{ApiLoadOptions, DEFAULT_CONCURRENCY};

/// The time between two rounds of the watch's list requests.
const WATCH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Nodes in a row that find Ironic not answering before the run stops.
pub const UNANSWERED_STOP: usize = 3;

pub struct ApiLoadRequest<'a> {
    pub plan: &'a Plan,
    /// redacted nova_bm URL
    pub source: String,
    /// the unfinished run this one continues (same id, same markers)
    pub resume: Option<RunRecord>,
    /// the stand-in ids of the target state read through the API (`replace` names one)
    pub ids: StateIds,
}

fn new_run(req: &ApiLoadRequest<'_>) -> RunRecord {
    RunRecord {
        id: uuid::Uuid::new_v4().to_string(),
        started_at: now(),
        finished_at: None,
        status: RunStatus::ApiRunning,
        plan_checksum: req.plan.checksum.clone(),
        source: req.source.clone(),
        target_kind: "modern".into(),
        written: Vec::new(),
    }
}

/// `replace`: the Ironic node holding the uuid goes first, in maintenance (never torn down).
async fn replace(api: &IronicApi, np: &NodePlan, ids: &StateIds) -> Result<(), String> {
    let Some(old) = np.replaces.and_then(|id| ids.uuid(id)) else { return Ok(()) };
    let Some(v) = nodes::find(api, old).await.map_err(|e| e.message())? else { return Ok(()) };
    if marker::nova_bm_id(&v["extra"]) == Some(np.nova_bm_id) {
        return Ok(()); // ours already (an earlier attempt of this run)
    }
    let reason = format!("bm2ironic: replaced by nova_bm node {}", np.nova_bm_id);
    if v["maintenance"].as_bool() != Some(true) {
        nodes::maintenance_on(api, old, &reason).await.map_err(|e| format!("replace {old}: {}", e.message()))?;
    }
    nodes::delete(api, old).await.map_err(|e| format!("replace {old}: {}", e.message()))?;
    tracing::warn!(replaced = %old, nova_bm_id = np.nova_bm_id, "replaced an Ironic node through the API (operator's decision)");
    Ok(())
}

/// One node: `replace` first when decided, then its way through Ironic.
async fn one<'a>(cx: &Cx<'_>, np: &'a NodePlan, rows: &Rows, ids: &StateIds) -> (&'a NodePlan, Outcome) {
    if cx.cancel.is_cancelled() {
        return (np, Outcome::Interrupted { state: "pending".into() });
    }
    if let Err(e) = replace(cx.api, np, ids).await {
        return (np, Outcome::Failed { state: String::new(), error: e });
    }
    (np, cx.drive(np, rows).await)
}

/// Loads the plan through the API. Events go to `events`; `cancel` stops new nodes from starting
/// and the ones in flight between steps (the run stays resumable).
pub async fn load_api(
    api: &IronicApi,
    store: &RunStore,
    req: ApiLoadRequest<'_>,
    opts: &ApiLoadOptions,
    events: &UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Result<LoadSummary, ApiLoadError> {
    let started = Instant::now();
    let plan = req.plan;
    if plan.blocking() > 0 {
        return Err(ApiLoadError::Blocked(plan.blocking()));
    }
    // an API load goes a node a second or so: its rows are built once, up front
    let to_write: Vec<(&NodePlan, Rows)> = plan.rows_to_write().collect();
    let mut run = req.resume.clone().unwrap_or_else(|| new_run(&req));
    let resumed = req.resume.is_some();
    let total_ports = to_write.iter().map(|(_, r)| r.ports.len()).sum();
    let _ = events.send(LoadEvent::Started {
        run_id: run.id.clone(),
        nodes: to_write.len(),
        ports: total_ports,
        rehearse: false,
    });
    send_skipped(plan, events);
    let mut summary = LoadSummary::begin(plan, &run.id, false);
    if to_write.is_empty() {
        return Ok(summary.nothing_to_write(started, events));
    }
    // the record lists every node before the first is created: a killed run is found again
    for (np, r) in &to_write {
        let node = &r.node;
        let mut w = written(node, &r.ports, np.nova_bm_id, np.replaces);
        match run.written.iter_mut().find(|x| x.uuid == node.uuid) {
            // resumed: the rows as planned now (the input may have been fixed), the progress kept
            Some(old) => {
                w.api = old.api.take();
                *old = w;
            }
            None => {
                w.api = Some(ApiProgress { state: "pending".into(), error: None });
                run.written.push(w);
            }
        }
    }
    run.status = RunStatus::ApiRunning;
    run.plan_checksum = plan.checksum.clone();
    store.save(&run).await?;
    tracing::info!(run = %run.id, resumed, nodes = to_write.len(), concurrency = opts.concurrency, endpoint = %api.base(), "API load started");

    let run_id = run.id.clone();
    let shared = Arc::new(Mutex::new(run));
    // Ironic not answering for several nodes in a row stops the run: the rest would fail the same
    // way at once, each with a long error, and leave the operator a list to read instead of a cause
    let stop = cancel.child_token();
    let pace = pace::Pace::default();
    // one list request a second per state that nodes wait in, instead of a poll per node (watch.rs)
    let watch = watch::Watch::new(opts.poll.min(WATCH_INTERVAL));
    let watch_stop = CancellationToken::new();
    let cx = Cx { api, run_id: &run_id, opts, events, cancel: &stop, pace: &pace, watch: &watch };
    let ids = &req.ids;
    let (mut done, mut interrupted, mut settled) = (0usize, 0usize, 0usize);
    let (mut unanswered, mut gone): (usize, Option<String>) = (0, None);
    let drive = async {
        // the watch stops with the last node, or with an error of the record's store
        let _stop_watch = watch_stop.clone().drop_guard();
        let futs: Vec<_> = to_write.iter().map(|(np, r)| one(&cx, np, r, ids)).collect();
        let mut results = futures::stream::iter(futs).buffer_unordered(opts.concurrency.max(1));
        while let Some((np, outcome)) = results.next().await {
            done += 1;
            let uuid = np.uuid.clone().unwrap_or_default();
            let (progress, status) = match &outcome {
                Outcome::Done { state, ports, changed, .. } => {
                    (unanswered, settled) = (0, settled + 1);
                    summary.created += usize::from(*changed);
                    summary.ports += ports;
                    (ApiProgress { state: state.clone(), error: None }, Some(NodeStatus::Written))
                }
                Outcome::Failed { state, error } => {
                    (unanswered, settled) = (0, settled + 1);
                    summary.errors += 1;
                    tracing::error!(run = %run_id, %uuid, state = %state, error = %error, "node failed");
                    (
                        ApiProgress {
                            state: format!("failed ({})", if state.is_empty() { "-" } else { state }),
                            error: Some(error.clone()),
                        },
                        Some(NodeStatus::Failed { error: error.clone() }),
                    )
                }
                Outcome::Interrupted { state } => {
                    interrupted += 1;
                    (ApiProgress { state: state.clone(), error: None }, None)
                }
                Outcome::Unreachable { state, error } => {
                    interrupted += 1;
                    unanswered += 1;
                    if unanswered >= UNANSWERED_STOP && gone.is_none() {
                        tracing::error!(run = %run_id, %error, "the Ironic API stopped answering: the run stops here");
                        gone = Some(error.clone());
                        stop.cancel();
                    }
                    (ApiProgress { state: state.clone(), error: None }, None)
                }
            };
            if let Some(status) = status {
                let _ = events.send(LoadEvent::Node { nova_bm_id: np.nova_bm_id, uuid: uuid.clone(), status });
            }
            let _ = events.send(LoadEvent::Progress {
                done,
                total: to_write.len(),
                elapsed_ms: crate::core::migrate::timing::ms(started.elapsed()),
            });
            let mut run = shared.lock().await;
            if let Some(w) = run.written.iter_mut().find(|w| w.uuid == uuid) {
                w.api = Some(progress);
            }
            store.save(&run).await?;
        }
        Ok::<(), ApiLoadError>(())
    };
    let (driven, ()) = tokio::join!(drive, watch.run(api, &watch_stop));
    driven?;
    let mut run = shared.lock().await;
    run.finished_at = Some(now());
    run.status = if summary.errors == 0 && interrupted == 0 { RunStatus::ApiCommitted } else { RunStatus::ApiPartial };
    store.save(&run).await?;
    summary.committed = run.status == RunStatus::ApiCommitted;
    summary.elapsed_ms = crate::core::migrate::timing::ms(started.elapsed());
    summary.load_ms = summary.elapsed_ms;
    summary.finished_at = now();
    tracing::info!(run = %run_id, status = %run.status, created = summary.created, errors = summary.errors, interrupted, elapsed_ms = summary.elapsed_ms, "API load finished");
    let calls = api.timings().list();
    for t in &calls {
        tracing::info!(run = %run_id, kind = %t.kind, count = t.count, total_ms = t.total_ms.round(), max_ms = t.max_ms.round(), "API load time");
    }
    let _ = events.send(LoadEvent::Timings { calls });
    let _ = events.send(LoadEvent::Summary(summary.clone()));
    if let Some(error) = gone {
        let (url, total) = (api.base().to_string(), to_write.len());
        return Err(ApiLoadError::IronicGone { url, error, run: run_id, settled, total });
    }
    Ok(summary)
}
