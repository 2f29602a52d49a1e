//! The API load's driver, in named steps (`load_api`): the run announced and every node listed in
//! its record, the nodes driven `--concurrency` at a time, the run's end recorded. See `mod.rs`.

use std::collections::HashMap;
use std::time::Instant;

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::node::{Cx, Outcome};
use super::{pace, watch, ApiLoadError, ApiLoadOptions};
use crate::core::ironic::api::nodes::StateIds;
use crate::core::ironic::api::{nodes, IronicApi};
use crate::core::ironic::marker;
use crate::core::migrate::events::{now, send_skipped, LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{NodePlan, Plan, Rows};
use crate::core::migrate::run::record::{written, ApiProgress, RunRecord};
use crate::core::migrate::run::status::RunStatus;
use crate::core::migrate::run::RunStore;

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
    RunRecord::begin(RunStatus::ApiRunning, &req.plan.checksum, &req.source, "modern")
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

/// Loads the plan through the API, in named steps: the run announced, every node listed in its
/// record before the first is created, the nodes driven `--concurrency` at a time (each node's
/// record replaced as it settles), the run's end recorded. Events go to `events`; `cancel` stops new
/// nodes from starting and the ones in flight between steps (the run stays resumable).
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
    let seq = record_plan(&mut run, plan, &to_write, store).await?;
    tracing::info!(run = %run.id, resumed = req.resume.is_some(), nodes = to_write.len(), concurrency = opts.concurrency, endpoint = %api.base(), "API load started");
    let drive = Drive { api, store, ids: &req.ids, opts, events, cancel, started };
    let mut t = Tally::default();
    drive.all(&to_write, &mut run, &seq, &mut summary, &mut t).await?;
    finish(api, store, &mut run, &mut summary, &t, started, events).await?;
    if let Some(error) = t.gone {
        let (url, total) = (api.base().to_string(), to_write.len());
        return Err(ApiLoadError::IronicGone { url, error, run: run.id.to_string(), settled: t.settled, total });
    }
    Ok(summary)
}

/// Step 1: the record lists every node before the first is created (a killed run is found again).
/// A resumed run keeps each node's progress and takes its rows as planned now (the input may have
/// been fixed). Returns each node's place in the record.
async fn record_plan(
    run: &mut RunRecord,
    plan: &Plan,
    to_write: &[(&NodePlan, Rows)],
    store: &RunStore,
) -> Result<HashMap<String, usize>, ApiLoadError> {
    let mut seq: HashMap<String, usize> = run.written.iter().enumerate().map(|(i, w)| (w.uuid.clone(), i)).collect();
    for (np, r) in to_write {
        let node = &r.node;
        let mut w = written(node, &r.ports, np.nova_bm_id, np.replaces);
        match seq.get(&node.uuid) {
            Some(&i) => {
                w.api = run.written[i].api.take();
                run.written[i] = w;
            }
            None => {
                w.api = Some(ApiProgress { state: "pending".into(), error: None });
                seq.insert(node.uuid.clone(), run.written.len());
                run.written.push(w);
            }
        }
    }
    run.status = RunStatus::ApiRunning;
    run.plan_checksum = plan.checksum.clone();
    store.begin(run).await?;
    Ok(seq)
}

/// How the nodes settled so far.
#[derive(Default)]
struct Tally {
    done: usize,
    interrupted: usize,
    settled: usize,
    /// nodes in a row that found Ironic not answering
    unanswered: usize,
    /// why the run stopped early: Ironic stopped answering
    gone: Option<String>,
}

/// What step 2 drives the nodes with.
struct Drive<'a> {
    api: &'a IronicApi,
    store: &'a RunStore,
    ids: &'a StateIds,
    opts: &'a ApiLoadOptions,
    events: &'a UnboundedSender<LoadEvent>,
    cancel: &'a CancellationToken,
    started: Instant,
}

impl Drive<'_> {
    /// Step 2: every node driven through Ironic, `--concurrency` at a time, while one watch follows
    /// the nodes waiting on the conductor; each node's record replaced as it settles (a row, or a
    /// line appended: never the whole run again).
    async fn all(
        &self,
        to_write: &[(&NodePlan, Rows)],
        run: &mut RunRecord,
        seq: &HashMap<String, usize>,
        summary: &mut LoadSummary,
        t: &mut Tally,
    ) -> Result<(), ApiLoadError> {
        // Ironic not answering for several nodes in a row stops the run: the rest would fail the
        // same way at once, each with a long error, and leave the operator a list instead of a cause
        let stop = self.cancel.child_token();
        let pace = pace::Pace::default();
        // one list request a second per state that nodes wait in, instead of a poll per node
        let watch = watch::Watch::new(self.opts.poll.min(WATCH_INTERVAL));
        let watch_stop = CancellationToken::new();
        let run_id = run.id.clone();
        let cx = Cx {
            api: self.api,
            run_id: &run_id,
            opts: self.opts,
            events: self.events,
            cancel: &stop,
            pace: &pace,
            watch: &watch,
        };
        let drive = async {
            // the watch stops with the last node, or with an error of the record's store
            let _stop_watch = watch_stop.clone().drop_guard();
            let futs: Vec<_> = to_write.iter().map(|(np, r)| one(&cx, np, r, self.ids)).collect();
            let mut results = futures::stream::iter(futs).buffer_unordered(self.opts.concurrency.max(1));
            while let Some((np, outcome)) = results.next().await {
                t.done += 1;
                let uuid = np.uuid.clone().unwrap_or_default();
                let (progress, status) = settle(&outcome, &uuid, &run_id, summary, t, &stop);
                if let Some(status) = status {
                    let _ = self.events.send(LoadEvent::Node { nova_bm_id: np.nova_bm_id, uuid: uuid.clone(), status });
                }
                let elapsed_ms = crate::core::migrate::timing::ms(self.started.elapsed());
                let _ = self.events.send(LoadEvent::Progress { done: t.done, total: to_write.len(), elapsed_ms });
                if let Some(&i) = seq.get(&uuid) {
                    run.written[i].api = Some(progress);
                    self.store.put_node(&run_id, i, &run.written[i]).await?;
                }
            }
            Ok::<(), ApiLoadError>(())
        };
        let (driven, ()) = tokio::join!(drive, watch.run(self.api, &watch_stop));
        driven
    }
}

/// One node's outcome counted: its progress for the record, and its event (none for a node left
/// between steps). Three nodes in a row finding Ironic not answering stop the run (`stop`).
fn settle(
    outcome: &Outcome,
    uuid: &str,
    run_id: &str,
    summary: &mut LoadSummary,
    t: &mut Tally,
    stop: &CancellationToken,
) -> (ApiProgress, Option<NodeStatus>) {
    match outcome {
        Outcome::Done { state, ports, changed, .. } => {
            (t.unanswered, t.settled) = (0, t.settled + 1);
            summary.created += usize::from(*changed);
            summary.ports += ports;
            (ApiProgress { state: state.clone(), error: None }, Some(NodeStatus::Written))
        }
        Outcome::Failed { state, error } => {
            (t.unanswered, t.settled) = (0, t.settled + 1);
            summary.errors += 1;
            tracing::error!(run = %run_id, %uuid, state = %state, error = %error, "node failed");
            let state = format!("failed ({})", if state.is_empty() { "-" } else { state });
            (ApiProgress { state, error: Some(error.clone()) }, Some(NodeStatus::Failed { error: error.clone() }))
        }
        Outcome::Interrupted { state } => {
            t.interrupted += 1;
            (ApiProgress { state: state.clone(), error: None }, None)
        }
        Outcome::Unreachable { state, error } => {
            t.interrupted += 1;
            t.unanswered += 1;
            if t.unanswered >= UNANSWERED_STOP && t.gone.is_none() {
                tracing::error!(run = %run_id, %error, "the Ironic API stopped answering: the run stops here");
                t.gone = Some(error.clone());
                stop.cancel();
            }
            (ApiProgress { state: state.clone(), error: None }, None)
        }
    }
}

/// Step 3: the run's end recorded (every node settled: committed; else partial, resumable), the
/// summary and where the time went sent.
async fn finish(
    api: &IronicApi,
    store: &RunStore,
    run: &mut RunRecord,
    summary: &mut LoadSummary,
    t: &Tally,
    started: Instant,
    events: &UnboundedSender<LoadEvent>,
) -> Result<(), ApiLoadError> {
    run.finished_at = Some(now());
    let all = summary.errors == 0 && t.interrupted == 0;
    run.status = if all { RunStatus::ApiCommitted } else { RunStatus::ApiPartial };
    store.set_status(run).await?;
    summary.committed = run.status == RunStatus::ApiCommitted;
    summary.elapsed_ms = crate::core::migrate::timing::ms(started.elapsed());
    summary.load_ms = summary.elapsed_ms;
    summary.finished_at = now();
    tracing::info!(run = %run.id, status = %run.status, created = summary.created, errors = summary.errors, interrupted = t.interrupted, elapsed_ms = summary.elapsed_ms, "API load finished");
    let calls = api.timings().list();
    for c in &calls {
        tracing::info!(run = %run.id, kind = %c.kind, count = c.count, total_ms = c.total_ms.round(), max_ms = c.max_ms.round(), "API load time");
    }
    let _ = events.send(LoadEvent::Timings { calls });
    let _ = events.send(LoadEvent::Summary(summary.clone()));
    Ok(())
}
