//! The rollback use case, in its order: Ironic first (a SQL run removed in one transaction, an API
//! run put in maintenance and deleted through the API, never a power action), then, when the Nova
//! databases are given, the flavor changes and then the instances' hosts put back (an old baremetal
//! nova-compute restarted while its instances name the Ironic host would destroy them). The
//! `rollback` command prints what this returns; every connection is closed here.

use std::path::PathBuf;

use super::error::StepError;
use super::verify::run_store;
use crate::core::db::{Access, Db};
use crate::core::ironic::api::{self, ApiTarget};
use crate::core::ironic::target::{self, TargetKind};
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::hosts::{self, HostsError};
use crate::core::migrate::load_api::rollback::{rollback_api, ApiRollbackReport};
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback::{self, RollbackError, RollbackReport};
use crate::core::migrate::run::lock::RunLock;
use crate::core::migrate::run::store::{is_api, select, FindError};
use crate::core::migrate::run::{RunRecord, RunStore};
use crate::core::settings::ConnectionSettings;
use crate::core::using;

/// What the face is asked before anything is removed.
pub trait RollbackFace {
    /// Whether `confirm` will ask anyone (false with `--yes`: the run is then chosen inside the
    /// transaction only, without reading every run record first).
    fn asks(&self) -> bool;
    /// `what` the rollback removes: `Err` stops it with nothing removed.
    fn confirm(&mut self, what: &str) -> Result<(), StepError>;
}

/// Which run, and how.
pub struct RollbackRequest<'a> {
    pub settings: &'a ConnectionSettings,
    pub api: &'a ApiTarget,
    pub state_dir: PathBuf,
    /// None: the newest one a rollback acts on
    pub run: Option<&'a str>,
    pub force: bool,
}

/// What was undone in Ironic.
pub enum Undone {
    Sql(RollbackReport),
    Api(ApiRollbackReport),
}

/// What was put back in Nova after Ironic: each None when its database was not given.
pub struct NovaRestored {
    pub flavors: Option<Result<(String, usize), FlavorError>>,
    pub hosts: Option<Result<(String, usize), HostsError>>,
}

/// A run's start as an operator reads it: to the second, with its zone (the records keep UTC).
pub fn when(t: &chrono::NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Removes from Ironic what the run wrote (the run of either kind, where it is kept).
pub async fn rollback_ironic(req: &RollbackRequest<'_>, face: &mut dyn RollbackFace) -> Result<Undone, StepError> {
    let store = run_store(req.settings, req.state_dir.clone()).await?;
    let api_run = using(store, async |store| match store.find(req.run).await {
        Ok(run) if is_api(&run) => rollback_api_run(req, store, run, face).await.map(Some),
        // a SQL run, or none: the SQL rollback picks it inside its transaction and names what is
        // missing
        Ok(_) | Err(FindError::NoRun | FindError::Unknown(_)) => Ok(None),
        Err(FindError::NotKeptHere { .. }) => Err(StepError::from(PrepareError::NoTarget)),
        Err(e) => Err(e.into()),
    })
    .await?;
    if let Some(r) = api_run {
        return Ok(Undone::Api(r));
    }
    let tgt = req.settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
    let db = target::connect(&tgt.value).await?;
    using(db, async |db| {
        if face.asks() {
            // the prompt names the run it undoes: which one, when, how many nodes
            let runs = RunStore::Db(db.clone()).list().await?;
            let nodes: std::collections::HashMap<String, usize> =
                runs.iter().map(|(r, n)| (r.id.to_string(), *n)).collect();
            let heads = runs.into_iter().map(|(r, _)| r).collect();
            let r = select(heads, req.run, |r| r.status.is_committed_sql()).map_err(RollbackError::from)?;
            let n = nodes.get(r.id.as_str()).copied().unwrap_or(0);
            let what = format!("run {} of {} ({n} nodes)", r.id, when(&r.started_at));
            face.confirm(&format!("This removes from {} the nodes and ports that {what} wrote", tgt.value.redacted()))?;
        }
        // the transaction takes the target before anything else and picks the run inside it (a
        // migrate started meanwhile waits, then sees the rollback)
        Ok(Undone::Sql(rollback::rollback(db, req.run, req.force).await?))
    })
    .await
}

async fn rollback_api_run(
    req: &RollbackRequest<'_>,
    store: &RunStore,
    run: RunRecord,
    face: &mut dyn RollbackFace,
) -> Result<ApiRollbackReport, StepError> {
    let api =
        api::open(req.api, TargetKind::Modern).await?.ok_or_else(|| StepError::ApiRun { run: run.id.to_string() })?;
    // never beside a load through the API (it would create nodes this rollback has not seen); the
    // record read again once the lock is held (a load that just ended has written all of it)
    let _lock = RunLock::acquire(&req.state_dir, api.base(), "rollback")?;
    let run = store.find(Some(&run.id)).await?;
    face.confirm(&format!(
        "This puts in maintenance and deletes, through the Ironic API at {}, the {} node(s) run {} of {} created (no power action, no teardown)",
        crate::core::db::url::redact_url(api.base()),
        run.written.len(),
        run.id,
        when(&run.started_at)
    ))?;
    Ok(rollback_api(&api, store, run, req.force).await?)
}

/// After Ironic: the flavors changed for the upgrade, then the instances' hosts, put back when
/// their databases are given (`NothingToRestore` when nothing was changed).
pub async fn restore_nova(settings: &ConnectionSettings) -> NovaRestored {
    let flavors = match settings.flavors_db() {
        Some(nova) => Some(restore_in(&nova.value, async |db| super::restore_flavor_changes(db, None).await).await),
        None => None,
    };
    // the hosts only once the flavors are back (or had nothing to restore): a failure stops here,
    // and the operator retries both
    let flavors_back = flavors.as_ref().is_none_or(|r| matches!(r, Ok(_) | Err(FlavorError::NothingToRestore)));
    let hosts = match &settings.nova_db {
        Some(nova) if flavors_back => {
            Some(restore_in(&nova.value, async |db| hosts::restore_hosts(db, None).await).await)
        }
        _ => None,
    };
    NovaRestored { flavors, hosts }
}

/// `f` on the database at `url`, opened for writing and closed after.
async fn restore_in<E: From<crate::core::db::DbError>>(
    url: &crate::core::db::url::DbUrl,
    f: impl AsyncFnOnce(&Db) -> Result<(String, usize), E>,
) -> Result<(String, usize), E> {
    using(Db::connect(url, Access::ReadWrite).await?, f).await
}

/// Every run recorded where runs are kept, newest first, with its node count (`rollback --list`).
pub async fn list_runs(
    settings: &ConnectionSettings,
    state_dir: PathBuf,
) -> Result<Vec<(RunRecord, usize)>, StepError> {
    let store = run_store(settings, state_dir).await?;
    Ok(using(store, async |store| store.list().await).await?)
}
