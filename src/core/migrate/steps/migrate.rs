//! The migrate use case, written once for both faces and both load paths: open where the load
//! writes ([`LoadPath`]: the Ironic database, or Ironic's API with its run store), make the plan
//! against it, refuse decisions that match nothing, stop on blocking conflicts, ask the face, load
//! (events to a channel), and verify a finished run for the report. The `migrate` command prints
//! what this returns and sends; the wizard's load job calls the same function with the plan the
//! operator confirmed (`MigrateRequest::reviewed`: loaded as it is into the Ironic database, whose
//! transaction re-reads the target and refuses a plan the target no longer matches). The path's
//! connections are closed here, once, whatever happens: no face closes a pool.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::error::StepError;
use super::load::ApiLoadTarget;
use crate::core::db::Db;
use crate::core::ironic::api::nodes::StateIds;
use crate::core::ironic::api::ApiTarget;
use crate::core::ironic::target;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::load_api::ApiLoadOptions;
use crate::core::migrate::plan::{Plan, PlanOptions};
use crate::core::migrate::prepare::{self, PrepareError, Prepared};
use crate::core::migrate::run::RunRecord;
use crate::core::migrate::timing::{ms, Phases};
use crate::core::settings::ConnectionSettings;

/// Where a load writes, as the operator chose it.
#[derive(Debug, Clone)]
pub enum Via {
    /// the Ironic database, in one transaction; `rehearse` rolls it back at the end
    Db { rehearse: bool },
    /// Ironic's REST API, node by node (enroll, manage, adopt or provide)
    Api(ApiLoadOptions),
}

/// Where a load writes, opened. It owns its connections: [`LoadPath::close`] closes them once;
/// dropped without it (an early return, a panic), a task closes them, so no connection is left
/// for the server to time out.
pub struct LoadPath(Option<Opened>);

enum Opened {
    Db(Box<Db>),
    Api(Box<ApiLoadTarget>),
}

impl LoadPath {
    /// Opens the Ironic database (`Via::Db`: `settings.ironic_db`), or the API as `api` says with
    /// the run store (`Via::Api`: the Ironic database when given, else `state_dir`).
    pub async fn open(
        settings: &ConnectionSettings,
        via: &Via,
        api: &ApiTarget,
        state_dir: PathBuf,
    ) -> Result<LoadPath, StepError> {
        Ok(LoadPath(Some(match via {
            Via::Db { .. } => {
                let url = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
                Opened::Db(Box::new(target::connect(&url.value).await?))
            }
            Via::Api(_) => {
                if !api.given() {
                    return Err(StepError::NoApi { what: "--via api" });
                }
                Opened::Api(Box::new(ApiLoadTarget::open(api, settings, state_dir).await?))
            }
        })))
    }

    /// Where the load writes, for a question or a message (passwords hidden).
    pub fn describe(&self) -> String {
        match &self.0 {
            Some(Opened::Db(db)) => db.url.redacted().to_string(),
            Some(Opened::Api(t)) => crate::core::db::url::redact_url(t.api.base()),
            None => String::new(),
        }
    }

    /// What a project-scoped token cannot see (the API path), for the face to show once.
    pub fn scope_warning(&self) -> Option<&str> {
        match &self.0 {
            Some(Opened::Api(t)) => t.scope_warning.as_deref(),
            _ => None,
        }
    }

    /// The plan against this target: the Ironic database's rows, or the API's view (an unfinished
    /// API run's nodes left out, so that the load continues them). A decision that matches no
    /// conflict of the plan is refused: the operator's file is wrong.
    pub async fn prepare(&self, req: &PlanRequest<'_>) -> Result<Planned, StepError> {
        let planned = match &self.0 {
            Some(Opened::Db(db)) => Planned {
                prepared: Arc::new(
                    prepare::prepare(req.settings, db, req.options, req.resolutions, req.object_version).await?,
                ),
                plan: None,
                api: None,
            },
            Some(Opened::Api(t)) => {
                let p = t.prepare(req.settings, req.options, req.resolutions).await?;
                let api = Some(ApiPlanned { ids: p.ids, resume: p.resume });
                Planned { prepared: Arc::new(p.prepared), plan: None, api }
            }
            None => unreachable!("a LoadPath is used only until it is closed"),
        };
        let unmatched = req.resolutions.unmatched(&planned.prepared.plan.conflicts);
        if !unmatched.is_empty() {
            let file = req.resolutions_file.clone().unwrap_or_default();
            return Err(StepError::Unmatched { file, count: unmatched.len(), examples: unmatched });
        }
        Ok(planned)
    }

    /// Loads `planned` (made by [`LoadPath::prepare`] on this path). Events go to `events`;
    /// `cancel` stops the load between batches (SQL: rolled back) or between nodes' steps (API).
    async fn load(
        &self,
        planned: &Planned,
        via: &Via,
        events: &UnboundedSender<LoadEvent>,
        cancel: &CancellationToken,
    ) -> Result<LoadSummary, StepError> {
        let p = &planned.prepared;
        match (&self.0, via, &planned.api) {
            (Some(Opened::Db(db)), Via::Db { rehearse }, _) => {
                Ok(super::load::load(db, p, planned.plan(), *rehearse, events, cancel).await?)
            }
            (Some(Opened::Api(t)), Via::Api(opts), Some(a)) => {
                let (ids, resume) = (a.ids.clone(), a.resume.clone());
                Ok(t.load_planned(p, ids, resume, opts, events, cancel).await?)
            }
            _ => unreachable!("a plan is loaded on the path that made it"),
        }
    }

    /// Closes the path's connections.
    pub async fn close(mut self) {
        if let Some(o) = self.0.take() {
            o.close().await;
        }
    }
}

impl Opened {
    async fn close(self) {
        match self {
            Opened::Db(db) => db.close().await,
            Opened::Api(t) => t.close().await,
        }
    }
}

impl Drop for LoadPath {
    fn drop(&mut self) {
        if let (Some(o), Ok(rt)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(o.close());
        }
    }
}

/// What a plan is made from.
pub struct PlanRequest<'a> {
    pub settings: &'a ConnectionSettings,
    pub options: &'a PlanOptions,
    pub resolutions: &'a Resolutions,
    /// `--resolutions FILE`, to name it when a decision matches nothing
    pub resolutions_file: Option<String>,
    /// `--object-version NODE,PORT` (the database path)
    pub object_version: Option<&'a (String, String)>,
}

/// A plan made on a load path.
pub struct Planned {
    pub prepared: Arc<Prepared>,
    /// the plan to load when it is not `prepared.plan`: the one the operator re-decided (the wizard)
    pub plan: Option<Plan>,
    /// through the API: what the load continues from
    pub api: Option<ApiPlanned>,
}

impl Planned {
    /// The plan to load.
    pub fn plan(&self) -> &Plan {
        self.plan.as_ref().unwrap_or(&self.prepared.plan)
    }
}

/// The API path's part of a plan: the stand-in ids of the API's nodes, and the run a load resumes.
pub struct ApiPlanned {
    pub ids: StateIds,
    pub resume: Option<RunRecord>,
}

/// The plan alone (`bm2ironic plan`, the wizard's preview): the path opened, planned on, closed.
/// `warn` hears what a project-scoped token cannot see.
pub async fn plan(
    req: &PlanRequest<'_>,
    via: &Via,
    api: &ApiTarget,
    state_dir: PathBuf,
    warn: &mut (dyn FnMut(&str) + Send),
) -> Result<Planned, StepError> {
    let path = LoadPath::open(req.settings, via, api, state_dir).await?;
    if let Some(w) = path.scope_warning() {
        warn(w);
    }
    let planned = path.prepare(req).await;
    path.close().await;
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
    pub via: Via,
    /// how to reach the Ironic API (the API path; verifying an API run)
    pub api: ApiTarget,
    /// where API runs are kept without an Ironic database, and reports that cannot go where asked
    pub state_dir: PathBuf,
    /// a report follows: a finished run is verified for it
    pub verify: bool,
    /// the plan the operator reviewed (the wizard): loaded as it is into the Ironic database (its
    /// transaction re-reads the target and refuses a plan the target no longer matches); through
    /// the API the plan is made again against the API's view (an unfinished run's nodes left out)
    pub reviewed: Option<Reviewed>,
}

/// A plan the operator reviewed, with what it was made from.
#[derive(Clone)]
pub struct Reviewed {
    pub prepared: Arc<Prepared>,
    pub plan: Plan,
}

/// How a migration ended, with what the report is made from.
pub struct Migrated {
    pub planned: Planned,
    pub ending: Ending,
    pub phases: Phases,
    /// the finished run verified (`MigrateRequest::verify`): the report's text, or why not
    pub verify: Option<Result<String, String>>,
}

/// How a migration ended, once its plan was made.
pub enum Ending {
    /// nothing was written: blocking conflicts, or the face did not go ahead
    NotStarted(StepError),
    /// the load ended: committed, rehearsed or nothing to write (SQL); every node settled or some
    /// failed (API: `failed` names them with Ironic's error, the run resumable)
    Loaded { summary: LoadSummary, failed: Vec<(String, String)> },
    /// the load failed after it started (SQL: rolled back; API: what was done stays)
    Failed { error: StepError, started: bool },
}

/// The migrate use case. `Err`: no plan was made (nothing to report); else how it ended. Events go
/// to `events`, which is dropped at the end (a face draining it sees the channel close).
pub async fn migrate(
    mut req: MigrateRequest<'_>,
    face: &mut (dyn MigrateFace + Send),
    events: UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Result<Migrated, StepError> {
    let path = LoadPath::open(req.plan.settings, &req.via, &req.api, req.state_dir.clone()).await?;
    if let Some(w) = path.scope_warning() {
        face.note(&format!("warning: {w}"));
    }
    // the reviewed plan moved, not copied (at 100k nodes a plan is tens of MB)
    let planned = match req.reviewed.take() {
        Some(r) if matches!(req.via, Via::Db { .. }) => Planned { prepared: r.prepared, plan: Some(r.plan), api: None },
        _ => match path.prepare(&req.plan).await {
            Ok(p) => p,
            Err(e) => {
                path.close().await;
                return Err(e);
            }
        },
    };
    let phases = planned.prepared.timings;
    let ending = match ready(&req, &path, &planned, face) {
        Err(e) => Ending::NotStarted(e),
        Ok(()) => load_watched(&path, &planned, &req.via, events, cancel).await,
    };
    path.close().await;
    let mut m = Migrated { planned, ending, phases, verify: None };
    if let Ending::Loaded { summary, .. } = &m.ending {
        m.phases.load_ms = Some(summary.load_ms);
        if matches!(req.via, Via::Db { .. }) {
            m.phases.commit_ms = Some(summary.commit_ms);
        }
        if req.verify && summary.committed {
            let started = std::time::Instant::now();
            m.verify = Some(verify_for_report(&req, &m.planned.prepared, &summary.run_id).await);
            m.phases.verify_ms = Some(ms(started.elapsed()));
        }
    }
    Ok(m)
}

/// Before anything is written: the plan blocks nothing, and the face agrees.
fn ready(
    req: &MigrateRequest<'_>,
    path: &LoadPath,
    planned: &Planned,
    face: &mut (dyn MigrateFace + Send),
) -> Result<(), StepError> {
    let plan = planned.plan();
    if plan.blocking() > 0 {
        return Err(StepError::Blocking { count: plan.blocking(), via_api: matches!(req.via, Via::Api(_)) });
    }
    if let Some(r) = planned.api.as_ref().and_then(|a| a.resume.as_ref()) {
        face.note(&format!(
            "Resuming run {}: finished nodes are left alone, the others continue from their state.",
            r.id
        ));
    }
    match &req.via {
        Via::Db { rehearse: true } => Ok(()),
        Via::Db { rehearse: false } => face.confirm(
            planned,
            &format!(
                "This writes {} nodes and {} ports into {} in one transaction",
                plan.summary.create,
                plan.summary.ports,
                path.describe()
            ),
        ),
        Via::Api(_) if plan.summary.create == 0 => Ok(()),
        Via::Api(opts) => face.confirm(
            planned,
            &format!(
                "This creates {} nodes and {} ports through the Ironic API at {} (enroll, manage, then adopt or provide), {} at a time",
                plan.summary.create,
                plan.summary.ports,
                path.describe(),
                opts.concurrency
            ),
        ),
    }
}

/// The load, with what it ended in: the API path's failed nodes gathered from the events as they
/// pass on to the face.
async fn load_watched(
    path: &LoadPath,
    planned: &Planned,
    via: &Via,
    events: UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Ending {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut failed = Vec::new();
    let mut started = false;
    let pass = async {
        while let Some(ev) = rx.recv().await {
            started |= matches!(ev, LoadEvent::Started { .. });
            if let LoadEvent::Node { uuid, status: NodeStatus::Failed { error }, .. } = &ev {
                failed.push((uuid.clone(), error.clone()));
            }
            let _ = events.send(ev);
        }
    };
    let load = async {
        let r = path.load(planned, via, &tx, cancel).await;
        drop(tx);
        r
    };
    let (result, ()) = tokio::join!(load, pass);
    match result {
        Ok(summary) => Ending::Loaded { summary, failed },
        Err(error) => Ending::Failed { error, started },
    }
}

/// The run just finished, verified as `bm2ironic verify` would (for the report).
async fn verify_for_report(req: &MigrateRequest<'_>, prepared: &Prepared, run_id: &str) -> Result<String, String> {
    let inventory = Some(prepared.inventory.clone());
    let v = super::verify::verify(req.plan.settings, Some(run_id), &req.api, req.state_dir.clone(), inventory)
        .await
        .map_err(|e| e.to_string())?;
    crate::core::migrate::report::verify_text(&v.report)
}
