//! The Ironic target of a migration, one interface over its two ways in: the Ironic database
//! (`--via db`: one transaction; `--rehearse` rolls it back) and Ironic's REST API (`--via api`:
//! enroll, manage, adopt or provide, node by node, its run kept in a run store). Opened once from
//! the [`Mode`], it reads the target's state and plans against it, says what a load will do, loads,
//! verifies the run it wrote while its connections are still open, and is closed once. What
//! differs between the two ways lives here and below (`load_sql/`, `load_api/`); the use case
//! (`migrate.rs`) does not ask which one it holds. See docs/runs.md ("The two ways into Ironic").

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::error::StepError;
use super::verify::run_store;
use crate::core::db::Db;
use crate::core::ironic::api::nodes::{self, StateIds};
use crate::core::ironic::api::{self, ApiTarget, IronicApi};
use crate::core::ironic::target::{self, TargetKind};
use crate::core::migrate::conflict::{Action, ConflictCode, Resolutions, Subject};
use crate::core::migrate::events::{LoadEvent, LoadSummary};
use crate::core::migrate::load_api::{self, ApiLoadOptions, ApiLoadRequest};
use crate::core::migrate::load_sql::{self, LoadRequest};
use crate::core::migrate::plan::{Plan, PlanOptions};
use crate::core::migrate::prepare::{self, PrepareError, Prepared};
use crate::core::migrate::run::lock::RunLock;
use crate::core::migrate::run::store::RunStore;
use crate::core::migrate::run::{RunId, RunKind, RunRecord};
use crate::core::migrate::verify::VerifyReport;
use crate::core::settings::ConnectionSettings;
use crate::core::source::model::Inventory;

/// How the operator chose to load.
#[derive(Debug, Clone)]
pub enum Mode {
    /// the Ironic database, in one transaction; `rehearse` rolls it back at the end
    Db { rehearse: bool },
    /// Ironic's REST API, node by node (enroll, manage, adopt or provide)
    Api(ApiLoadOptions),
}

impl Mode {
    pub fn kind(&self) -> RunKind {
        match self {
            Mode::Db { .. } => RunKind::Sql,
            Mode::Api(_) => RunKind::Api,
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

/// A plan made against a target, or the one the operator reviewed.
pub struct Planned {
    pub prepared: Arc<Prepared>,
    /// the plan to load when it is not `prepared.plan`: the one the operator re-decided (the wizard)
    pub redecided: Option<Plan>,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.plan();
        f.debug_struct("Planned").field("checksum", &p.checksum).field("nodes", &p.nodes.len()).finish()
    }
}

impl Planned {
    /// The plan to load.
    pub fn plan(&self) -> &Plan {
        self.redecided.as_ref().unwrap_or(&self.prepared.plan)
    }
}

/// The Ironic target, opened. It owns its connections: [`Target::close`] closes them once; dropped
/// without it (an early return, a panic), a task closes them, so no connection is left for the
/// server to time out.
pub struct Target(Option<Side>);

enum Side {
    Sql(Box<SqlSide>),
    Api(Box<ApiSide>),
}

struct SqlSide {
    db: Db,
    rehearse: bool,
    /// to ask the API too when a run is verified (when given)
    api: ApiTarget,
}

struct ApiSide {
    /// one load or rollback through the API at a time (held until the target closes)
    _lock: RunLock,
    api: IronicApi,
    store: RunStore,
    opts: ApiLoadOptions,
    scope_warning: Option<String>,
    /// what the last plan was made against: the API's stand-in node ids, and the unfinished run a
    /// load continues
    basis: Option<(StateIds, Option<RunRecord>)>,
}

impl Target {
    /// Opens the target as `mode` says: the Ironic database (`settings.ironic_db`), or the API as
    /// `api` says (the adopt flow's version negotiated) with its run store (the Ironic database when
    /// given, else `state_dir`).
    pub async fn open(
        settings: &ConnectionSettings,
        mode: &Mode,
        api: &ApiTarget,
        state_dir: PathBuf,
    ) -> Result<Target, StepError> {
        let side = match mode {
            Mode::Db { rehearse } => {
                let url = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
                let db = target::connect(&url.value).await?;
                Side::Sql(Box::new(SqlSide { db, rehearse: *rehearse, api: api.clone() }))
            }
            Mode::Api(opts) => Side::Api(Box::new(ApiSide::open(api, settings, state_dir, opts.clone()).await?)),
        };
        Ok(Target(Some(side)))
    }

    fn side(&self) -> Result<&Side, StepError> {
        self.0.as_ref().ok_or(StepError::Closed)
    }

    /// How a run on this target writes.
    pub fn kind(&self) -> RunKind {
        match &self.0 {
            Some(Side::Api(_)) => RunKind::Api,
            _ => RunKind::Sql,
        }
    }

    /// Where the load writes, for a question or a message (passwords hidden).
    pub fn describe(&self) -> String {
        match &self.0 {
            Some(Side::Sql(s)) => s.db.url.redacted().to_string(),
            Some(Side::Api(a)) => crate::core::db::url::redact_url(a.api.base()),
            None => String::new(),
        }
    }

    /// What a project-scoped token cannot see (the API), for the face to show once.
    pub fn scope_warning(&self) -> Option<&str> {
        match &self.0 {
            Some(Side::Api(a)) => a.scope_warning.as_deref(),
            _ => None,
        }
    }

    /// The plan against this target: the Ironic database's rows, or the API's view (an unfinished
    /// API run's nodes left out, so that the load continues them). A decision that matches no
    /// conflict of the plan is refused: the operator's file is wrong.
    pub async fn prepare(&mut self, req: &PlanRequest<'_>) -> Result<Planned, StepError> {
        let prepared = match self.0.as_mut().ok_or(StepError::Closed)? {
            Side::Sql(s) => {
                prepare::prepare(req.settings, &s.db, req.options, req.resolutions, req.object_version).await?
            }
            Side::Api(a) => a.prepare(req).await?,
        };
        let unmatched = req.resolutions.unmatched(&prepared.plan.conflicts);
        if !unmatched.is_empty() {
            let file = req.resolutions_file.clone().unwrap_or_default();
            return Err(StepError::Unmatched { file, count: unmatched.len(), examples: unmatched });
        }
        Ok(Planned { prepared: Arc::new(prepared), redecided: None })
    }

    /// The unfinished API run the next load continues (found by the last [`Target::prepare`]).
    pub fn resuming(&self) -> Option<&RunId> {
        match &self.0 {
            Some(Side::Api(a)) => a.basis.as_ref().and_then(|(_, r)| r.as_ref()).map(|r| &r.id),
            _ => None,
        }
    }

    /// What the operator is asked before `plan` is loaded; None when nothing stays to ask about (a
    /// rehearsal rolls everything back; an API plan that creates nothing only continues a run).
    pub fn question(&self, plan: &Plan) -> Option<String> {
        let (nodes, ports, at) = (plan.summary.create, plan.summary.ports, self.describe());
        match &self.0 {
            Some(Side::Sql(s)) if !s.rehearse => {
                Some(format!("This writes {nodes} nodes and {ports} ports into {at} in one transaction"))
            }
            Some(Side::Api(a)) if nodes > 0 => Some(format!(
                "This creates {nodes} nodes and {ports} ports through the Ironic API at {at} (enroll, manage, then adopt or provide), {} at a time",
                a.opts.concurrency
            )),
            _ => None,
        }
    }

    /// What this way into Ironic cannot deliver of `plan`, said before anything is written: through
    /// the API a node without its BMC address cannot be managed, so `missing-bmc=maintenance` would
    /// leave it in `enroll`, not in maintenance as the plan says.
    pub fn cannot(&self, plan: &Plan) -> Option<StepError> {
        match self.kind() {
            RunKind::Api => api_cannot(plan),
            RunKind::Sql => None,
        }
    }

    /// Loads `planned` (made by [`Target::prepare`] here, or reviewed). Events go to `events`;
    /// `cancel` stops the load between batches (the database: rolled back) or between nodes' steps
    /// (the API: what was done stays, the run resumable).
    pub async fn load(
        &mut self,
        planned: &Planned,
        events: &UnboundedSender<LoadEvent>,
        cancel: &CancellationToken,
    ) -> Result<LoadSummary, StepError> {
        let p = &planned.prepared;
        match self.0.as_mut().ok_or(StepError::Closed)? {
            Side::Sql(s) => {
                let req = LoadRequest {
                    plan: planned.plan(),
                    schema: &p.target.schema,
                    rehearse: s.rehearse,
                    source: p.source.clone(),
                    run_id: RunId::new(),
                };
                Ok(load_sql::load_db(&s.db, req, events, cancel).await?)
            }
            Side::Api(a) => {
                // the plan made against the API's view just now (a reviewed plan is made again)
                let (ids, resume) = a.basis.take().ok_or(StepError::NotPlanned)?;
                let req = ApiLoadRequest { plan: planned.plan(), source: p.source.clone(), resume, ids };
                Ok(load_api::load_api(&a.api, &a.store, req, &a.opts, events, cancel).await?)
            }
        }
    }

    /// The run `run_id` this target holds, verified as `bm2ironic verify` does, on the connections
    /// still open: a SQL run against the database, nova_bm (`inventory`) and the API when given; an
    /// API run against the API and nova_bm.
    pub async fn verify(&self, run_id: &str, inventory: &Inventory) -> Result<VerifyReport, StepError> {
        match self.side()? {
            Side::Sql(s) => {
                let store = RunStore::Db(s.db.clone());
                let run = store.find(Some(run_id)).await?;
                let schema = target::detect(&s.db, None).await?;
                let api = api::open(&s.api, schema.kind).await?;
                Ok(crate::core::migrate::verify::verify(&s.db, &run, inventory, api.as_ref()).await?)
            }
            Side::Api(a) => {
                let run = a.store.find(Some(run_id)).await?;
                Ok(load_api::verify::verify_api(&a.api, &run, Some(inventory)).await?)
            }
        }
    }

    /// Closes the target's connections.
    pub async fn close(mut self) {
        if let Some(s) = self.0.take() {
            s.close().await;
        }
    }
}

impl Side {
    async fn close(self) {
        match self {
            Side::Sql(s) => s.db.close().await,
            Side::Api(a) => a.store.close().await,
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let (Some(s), Ok(rt)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            rt.spawn(s.close());
        }
    }
}

impl ApiSide {
    /// Opens the API as `target` says (a URL, Keystone, a fixed token) and negotiates the adopt
    /// flow's version; says what a project-scoped token cannot see; opens the run store.
    async fn open(
        target: &ApiTarget,
        settings: &ConnectionSettings,
        state_dir: PathBuf,
        opts: ApiLoadOptions,
    ) -> Result<ApiSide, StepError> {
        const WHAT: &str = "the load through the API (--via api)";
        if !target.given() {
            return Err(StepError::NoApi { what: "--via api" });
        }
        let api = api::open(target, TargetKind::Modern).await?.ok_or(StepError::NoApi { what: WHAT })?;
        if api.version().is_none_or(|v| v < nodes::ADOPT_VERSION) {
            api.negotiate(Some((nodes::ADOPT_VERSION, "the adopt flow (--via api)"))).await?;
        }
        let scope_warning = match api.scope().await {
            Some(scope) => api::scope_warning(&scope, &[]),
            None => None,
        };
        if let Some(w) = &scope_warning {
            tracing::warn!("{w}");
        }
        let lock = RunLock::acquire(&state_dir, api.base(), "migrate --via api")?;
        let store = run_store(settings, state_dir).await?;
        Ok(ApiSide { _lock: lock, api, store, opts, scope_warning, basis: None })
    }

    /// nova_bm read while the API is asked for the target's nodes and ports; the unfinished run
    /// found (its nodes left out of the target, so the plan holds their rows again); Nova's facts;
    /// the plan.
    async fn prepare(&mut self, req: &PlanRequest<'_>) -> Result<Prepared, StepError> {
        let settings = req.settings;
        let src_url = &settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?.value;
        let started = std::time::Instant::now();
        let (inventory, (mut target, ids)) =
            tokio::try_join!(async { Ok::<_, StepError>(prepare::read_inventory(src_url).await?) }, async {
                Ok::<_, StepError>(nodes::read_state(&self.api).await?)
            })?;
        let resume = self.store.resumable().await?;
        if let Some(r) = &resume {
            let resumed: std::collections::HashSet<i64> =
                target.nodes.iter().filter(|n| n.migrated_by_run() == Some(r.id.as_str())).map(|n| n.id).collect();
            target.nodes.retain(|n| !resumed.contains(&n.id));
            target.ports.retain(|p| p.node_id.is_none_or(|id| !resumed.contains(&id)));
            tracing::info!(run = %r.id, nodes = resumed.len(), "resuming an unfinished API run");
        }
        target.mark_runs(&crate::core::migrate::run::store::finished_ids(&self.store.heads().await?));
        let nova = prepare::read_nova(settings, &inventory).await?;
        let against = format!("the Ironic API at {}", self.api.base());
        let read = prepare::Read { inventory, nova, target, src_url, started, against: &against };
        let prepared = prepare::finish(read, req.options, req.resolutions).await?;
        self.basis = Some((ids, resume));
        Ok(prepared)
    }
}

/// Through the API: the decisions of `plan` Ironic's API cannot carry out (`Target::cannot`).
fn api_cannot(plan: &Plan) -> Option<StepError> {
    let nodes: Vec<String> = plan
        .conflicts
        .iter()
        .filter(|c| c.code == ConflictCode::MissingBmc && c.action == Some(Action::Maintenance))
        .map(|c| match &c.subject {
            Subject::Node { nova_bm_id } => format!("nova_bm node {nova_bm_id}"),
            _ => c.node_uuid.clone().unwrap_or_default(),
        })
        .collect();
    (!nodes.is_empty()).then(|| StepError::NotThroughApi {
            decision: "missing-bmc=maintenance",
            why: "Ironic refuses to manage or adopt a node without its BMC address, so it would stay in `enroll`, not in maintenance as the plan says",
            count: nodes.len(),
            examples: nodes.into_iter().take(3).collect::<Vec<_>>().join(", "),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
    use crate::core::migrate::plan::plan;

    /// `missing-bmc=maintenance` through the API is refused before the load, naming the nodes
    /// (before: `manage` failed for them, each rerun the same, and the node stayed in `enroll`);
    /// `skip` goes through, and the database path takes `maintenance`.
    #[test]
    fn a_decision_the_api_cannot_carry_out_is_refused_before_the_load() {
        let f = crate::core::demo::fixture::Fixture::standard();
        let inv = crate::core::source::model::Inventory::join(f.nodes, f.interfaces);
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let opts = PlanOptions { default_arch: Some("x86_64".into()), ..Default::default() };
        let decide = |a: &str| {
            let mut r = Resolutions::default();
            r.add_flag(&format!("missing-bmc={a}")).unwrap();
            r
        };
        let p = plan(&inv.clone().into(), &target, None, &opts, &decide("maintenance"));
        let e = api_cannot(&p).expect("refused").to_string();
        assert!(e.contains("missing-bmc=maintenance") && e.contains("enroll") && e.contains("nova_bm node"), "{e}");
        let p = plan(&inv.into(), &target, None, &opts, &decide("skip"));
        assert!(api_cannot(&p).is_none());
    }
}
