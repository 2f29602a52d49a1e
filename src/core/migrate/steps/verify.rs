//! The verify step, for runs of either path: the run is found where it is kept (the Ironic
//! database's run table, or the state directory for an API run made without one); a SQL run is
//! compared with the database, nova_bm and (when given) the API, an API run with the API and
//! nova_bm. The `verify` command and the wizard's verify step call [`verify`].

use std::path::PathBuf;
use std::sync::Arc;

use super::error::StepError;
use crate::core::ironic::api::{self, ApiTarget, IronicApi};
use crate::core::ironic::target::{self, TargetKind};
use crate::core::migrate::load_api::verify::verify_api;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::run::record::RunRecord;
use crate::core::migrate::run::store::{is_api, RunStore};
use crate::core::migrate::verify::{self, VerifyReport};
use crate::core::settings::ConnectionSettings;
use crate::core::source::model::Inventory;
use crate::core::source::nova_bm::NovaBmSource;

/// Where runs are kept for these settings: the Ironic database when given, else `state_dir`
/// (API runs made without database access). The caller closes it ([`RunStore::close`]).
pub async fn run_store(settings: &ConnectionSettings, state_dir: PathBuf) -> Result<RunStore, StepError> {
    Ok(match &settings.ironic_db {
        Some(u) => RunStore::Db(target::connect(&u.value).await?),
        None => RunStore::Dir(state_dir),
    })
}

/// What [`verify`] found, with the API client it used (for a takeover check after).
pub struct VerifiedRun {
    pub run: RunRecord,
    pub report: VerifyReport,
    /// the Ironic API client, when the API was given
    pub api: Option<IronicApi>,
}

/// Verifies run `run_id` (None: the newest one) of either path. `inventory`: nova_bm already read
/// (the wizard has it); None reads it when `settings` name nova_bm (a SQL run needs it). The API
/// is reached as `target` says; an API run needs it.
pub async fn verify(
    settings: &ConnectionSettings,
    run_id: Option<&str>,
    target: &ApiTarget,
    state_dir: PathBuf,
    inventory: Option<Arc<Inventory>>,
) -> Result<VerifiedRun, StepError> {
    let store = run_store(settings, state_dir).await?;
    let result = async {
        let run = store.find(run_id).await?;
        let api_run = is_api(&run);
        let inventory = match inventory {
            Some(i) => Some(i),
            None if api_run && settings.nova_bm_db.is_none() => None,
            None => Some(read_inventory(settings).await?),
        };
        let db = match (&store, api_run) {
            (RunStore::Db(db), false) => db,
            _ => {
                let api = api::open(target, TargetKind::Modern)
                    .await?
                    .ok_or(StepError::NoApi { what: "verifying a run made through the API" })?;
                let report = verify_api(&api, &run, inventory.as_deref()).await?;
                return Ok(VerifiedRun { run, report, api: Some(api) });
            }
        };
        let schema = target::detect(db, None).await?;
        let api = api::open(target, schema.kind).await?;
        let inventory = inventory.ok_or(PrepareError::NoSource)?;
        let report = verify::verify(db, &run, &inventory, api.as_ref()).await?;
        Ok(VerifiedRun { run, report, api })
    }
    .await;
    store.close().await;
    result
}

async fn read_inventory(settings: &ConnectionSettings) -> Result<Arc<Inventory>, StepError> {
    let src = settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?;
    let source = NovaBmSource::open(&src.value).await?;
    let inventory = source.read_inventory(|_| {}).await;
    source.close().await;
    Ok(Arc::new(inventory?))
}

/// With a project-scoped Keystone token: what it cannot see of `run` (the nodes answering 404),
/// said plainly. None with a system-scoped token, a fixed one, or none.
pub async fn scope_warning(api: &IronicApi, run: &RunRecord) -> Option<String> {
    let scope = api.scope().await?;
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let hidden = api.not_visible(&uuids).await;
    api::scope_warning(&scope, &hidden)
}
