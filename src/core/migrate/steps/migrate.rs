//! The migrate use case, written once for both faces and both ways into Ironic: open the
//! [`Target`] the mode names, make the plan against it (or take the plan the operator reviewed),
//! refuse decisions that match nothing, stop on blocking conflicts, ask the face, load (events to
//! a channel), verify the run for the report while the target is still open, close the target,
//! and return the [`Outcome`]: how it ended, decided here once. The `migrate` command prints it;
//! the wizard's load job draws it; the run report states it.

use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::error::StepError;
use super::outcome::{Ended, Outcome, Tally};
use super::target::{Mode, PlanRequest, Planned, Target};
use crate::core::ironic::api::ApiTarget;
use crate::core::migrate::events::{LoadEvent, LoadSummary};
use crate::core::migrate::run::RunKind;
use crate::core::migrate::timing::ms;

/// The plan alone (`bm2ironic plan`, the wizard's preview): the target opened, planned on,
/// closed. `warn` hears what a project-scoped token cannot see.
pub async fn plan(
    req: &PlanRequest<'_>,
    mode: &Mode,
    api: &ApiTarget,
    state_dir: PathBuf,
    warn: &mut (dyn FnMut(&str) + Send),
) -> Result<Planned, StepError> {
    let mut target = Target::open(req.settings, mode, api, state_dir).await?;
    if let Some(w) = target.scope_warning() {
        warn(w);
    }
    let planned = target.prepare(req).await;
    target.close().await;
    planned
}

/// What the face is asked, or told, on the way.
pub trait MigrateFace {
    /// The plan is made, has no blocking conflict, and holds something to write: `Err(why)` stops
    /// here, before anything is written. `question` says what the load will do.
    fn confirm(&mut self, planned: &Planned, question: &str) -> Result<(), StepError>;
    /// Something to say once (a project-scoped token's blind spot, a run resumed).
    fn note(&mut self, text: &str);
}

/// A migration, as the operator asked for it.
pub struct MigrateRequest<'a> {
    pub plan: PlanRequest<'a>,
    pub mode: Mode,
    /// how to reach the Ironic API (the API path; verifying a run)
    pub api: ApiTarget,
    /// where API runs are kept without an Ironic database
    pub state_dir: PathBuf,
    /// verify the finished run (for the report), before the target closes
    pub verify: bool,
    /// the plan the operator reviewed (the wizard): loaded as it is into the Ironic database (its
    /// transaction re-reads the target and refuses a plan the target no longer matches); through
    /// the API the plan is made again against the API's view (an unfinished run's nodes left out)
    pub reviewed: Option<Planned>,
}

/// The migrate use case. `Err`: no plan was made (nothing to report); else how it ended. Events go
/// to `events`, which is dropped at the end (a face draining it sees the channel close).
pub async fn migrate(
    mut req: MigrateRequest<'_>,
    face: &mut (dyn MigrateFace + Send),
    events: UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Result<(Planned, Outcome), StepError> {
    let mut target = Target::open(req.plan.settings, &req.mode, &req.api, req.state_dir.clone()).await?;
    if let Some(w) = target.scope_warning() {
        face.note(&format!("warning: {w}"));
    }
    // the reviewed plan moved, not copied (at 100k nodes a plan is tens of MB); the API's view is
    // read again (a reviewed plan cannot know what an unfinished run did since)
    let planned = match req.reviewed.take() {
        Some(r) if target.kind() == RunKind::Sql => r,
        _ => match target.prepare(&req.plan).await {
            Ok(p) => p,
            Err(e) => {
                target.close().await;
                return Err(e);
            }
        },
    };
    let mut outcome = Outcome {
        kind: target.kind(),
        ended: Ended::NothingToWrite,
        summary: None,
        run: None,
        verify: None,
        phases: planned.prepared.timings,
    };
    match ready(&target, &planned, face) {
        Err(e) => outcome.ended = Ended::NotStarted(e),
        Ok(()) => load_watched(&mut target, &planned, events, cancel, &mut outcome).await,
    }
    if let (true, Some(id)) = (req.verify, outcome.run_id().cloned()) {
        let started = std::time::Instant::now();
        let v = target.verify(&id, &planned.prepared.inventory).await;
        outcome.verify = Some(v.map_err(|e| e.to_string()));
        outcome.phases.verify_ms = Some(ms(started.elapsed()));
    }
    target.close().await;
    Ok((planned, outcome))
}

/// Before anything is written: the plan blocks nothing, and the face agrees.
fn ready(target: &Target, planned: &Planned, face: &mut (dyn MigrateFace + Send)) -> Result<(), StepError> {
    let plan = planned.plan();
    if let Some(missing) = plan.missing_options() {
        return Err(StepError::MissingOptions(missing));
    }
    if plan.blocking() > 0 {
        return Err(StepError::Blocking { count: plan.blocking(), kind: target.kind() });
    }
    if let Some(e) = target.cannot(plan) {
        return Err(e);
    }
    if let Some(id) = target.resuming() {
        face.note(&format!("Resuming run {id}: finished nodes are left alone, the others continue from their state."));
    }
    match target.question(plan) {
        Some(q) => face.confirm(planned, &q),
        None => Ok(()),
    }
}

/// The load, with how it ended: the events pass on to the face, and are tallied (the API path's
/// nodes begun, failed, and left in Ironic).
async fn load_watched(
    target: &mut Target,
    planned: &Planned,
    events: UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
    outcome: &mut Outcome,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut tally = Tally::default();
    let pass = async {
        while let Some(ev) = rx.recv().await {
            tally.see(&ev);
            let _ = events.send(ev);
        }
    };
    let load = async {
        let r = target.load(planned, &tx, cancel).await;
        drop(tx);
        r
    };
    let (result, ()) = tokio::join!(load, pass);
    outcome.run = tally.run.clone();
    let (ended, summary) = ended(outcome.kind, result, tally, planned, cancel.is_cancelled());
    if let Some(s) = &summary {
        outcome.phases.load_ms = Some(s.load_ms);
        if outcome.kind == RunKind::Sql {
            outcome.phases.commit_ms = Some(s.commit_ms);
        }
    }
    (outcome.ended, outcome.summary) = (ended, summary);
}

/// How a load ended, from its result and what its events said.
fn ended(
    kind: RunKind,
    result: Result<LoadSummary, StepError>,
    tally: Tally,
    planned: &Planned,
    cancelled: bool,
) -> (Ended, Option<LoadSummary>) {
    let nothing = planned.plan().to_write().next().is_none();
    match (kind, result) {
        (_, Ok(s)) if nothing => (Ended::NothingToWrite, Some(s)),
        (RunKind::Sql, Ok(s)) if s.rehearse => (Ended::Rehearsed, Some(s)),
        (RunKind::Sql, Ok(s)) if s.committed => (Ended::Committed, Some(s)),
        (RunKind::Sql, Ok(s)) => (Ended::NothingToWrite, Some(s)),
        (RunKind::Sql, Err(e)) => (Ended::RolledBack(e), None),
        (RunKind::Api, Ok(s)) if s.committed && s.errors == 0 => (Ended::Adopted, Some(s)),
        (RunKind::Api, Ok(s)) => {
            let left = tally.left();
            (Ended::PartlyAdopted { failed: tally.failed, interrupted: cancelled, left }, Some(s))
        }
        (RunKind::Api, Err(e)) if !tally.started => (Ended::NotStarted(e), None),
        (RunKind::Api, Err(e)) => (Ended::Stopped { error: e, left: tally.left() }, None),
    }
}
