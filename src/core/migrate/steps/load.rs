//! The load step, for both paths. [`load`] writes a plan into the Ironic database as a new run,
//! in one transaction. [`ApiLoadTarget`] is the REST adopt path: it opens the Ironic API (the
//! adopt flow needs API 1.17) and where the run is kept, plans against the API's view of Ironic
//! (the nodes of an unfinished run left out, so that the load continues them), and loads. The
//! `migrate` command and the wizard's load job both call these.

use std::path::PathBuf;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::error::StepError;
use super::verify::run_store;
use crate::core::db::Db;
use crate::core::ironic::api::nodes::StateIds;
use crate::core::ironic::api::{self, nodes, ApiTarget, IronicApi};
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::events::{LoadEvent, LoadSummary};
use crate::core::migrate::load_api::prepare::{prepare_api, PreparedApi};
use crate::core::migrate::load_api::{self, ApiLoadOptions, ApiLoadRequest};
use crate::core::migrate::load_sql::{self, LoadError, LoadRequest};
use crate::core::migrate::plan::{Plan, PlanOptions};
use crate::core::migrate::prepare::Prepared;
use crate::core::migrate::run::store::RunStore;
use crate::core::migrate::run::RunRecord;
use crate::core::settings::ConnectionSettings;

/// Loads `plan` (the prepared plan, or the one re-decided in the wizard) into the Ironic database
/// `db` (the prepared target's) as a new run with a fresh run id; `rehearse` rolls the transaction
/// back at the end. Events go to `events` as the load proceeds (a closed receiver is fine); `cancel`
/// stops it between batches.
pub async fn load(
    db: &Db,
    prepared: &Prepared,
    plan: &Plan,
    rehearse: bool,
    events: &UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Result<LoadSummary, LoadError> {
    let req = LoadRequest {
        plan,
        schema: &prepared.target.schema,
        rehearse,
        source: prepared.source.clone(),
        run_id: uuid::Uuid::new_v4().to_string(),
    };
    load_sql::load_db(db, req, events, cancel).await
}

/// The Ironic API opened for a load through it, and where its run is kept.
pub struct ApiLoadTarget {
    pub api: IronicApi,
    pub store: RunStore,
    /// what a project-scoped token cannot see, for the faces to show once (also in the audit log)
    pub scope_warning: Option<String>,
}

impl ApiLoadTarget {
    /// Opens the API as `target` says (a URL, Keystone, a fixed token) and negotiates the adopt
    /// flow's version; says what a project-scoped token cannot see; opens the run store (the Ironic
    /// database of `settings` when given, else `state_dir`).
    pub async fn open(
        target: &ApiTarget,
        settings: &ConnectionSettings,
        state_dir: PathBuf,
    ) -> Result<ApiLoadTarget, StepError> {
        const WHAT: &str = "the load through the API (--via api)";
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
        let store = run_store(settings, state_dir).await?;
        Ok(ApiLoadTarget { api, store, scope_warning })
    }

    /// The plan against the API's view of Ironic: nova_bm read, the nodes and ports read through
    /// the API, the unfinished run found (its nodes left out of the target, so the plan holds
    /// their rows again), Nova's facts, the plan.
    pub async fn prepare(
        &self,
        settings: &ConnectionSettings,
        options: &PlanOptions,
        resolutions: &Resolutions,
    ) -> Result<PreparedApi, StepError> {
        Ok(prepare_api(settings, options, resolutions, &self.api, &self.store).await?)
    }

    /// Loads the prepared plan through the API (a rerun resumes the unfinished run). Events go to
    /// `events`; `cancel` stops new nodes from starting and the ones in flight between steps.
    pub async fn load_planned(
        &self,
        prepared: &Prepared,
        ids: StateIds,
        resume: Option<RunRecord>,
        opts: &ApiLoadOptions,
        events: &UnboundedSender<LoadEvent>,
        cancel: &CancellationToken,
    ) -> Result<LoadSummary, StepError> {
        let req = ApiLoadRequest { plan: &prepared.plan, source: prepared.source.clone(), resume, ids };
        Ok(load_api::load_api(&self.api, &self.store, req, opts, events, cancel).await?)
    }

    pub async fn close(self) {
        self.store.close().await;
    }
}
