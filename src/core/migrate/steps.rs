//! The sequences both faces run, written once: load a plan, verify a run, preview / apply / restore
//! the flavor change, check Ironic's takeover of the migrated nodes. The CLI commands (`src/cli/cmd/`)
//! and the wizard's jobs call these; they print nothing and know no terminal: they return typed
//! results, and report progress through a callback or a channel.

use std::collections::HashSet;
use std::time::Duration;

use chrono::TimeZone;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::core::db::conf::ConnectionSettings;
use crate::core::db::secret::Secret;
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db, DbError};
use crate::core::ironic::api::{self, ApiError, ApiTarget, IronicApi};
use crate::core::ironic::takeover::{self, CheckOptions, TakeoverEvent, TakeoverOutcome};
use crate::core::ironic::target::{self, TargetError, TargetKind};
use crate::core::logs::watch::{Patterns, Start, WatchError, WatchedLog, Watcher};
use crate::core::migrate::flavors::{self, FlavorError, FlavorSchema, FlavorTarget, SpecChange};
use crate::core::migrate::load_sql::{self, LoadError, LoadEvent, LoadRequest, LoadSummary, RunRecord};
use crate::core::migrate::plan::Plan;
use crate::core::migrate::prepare::{PrepareError, Prepared};
use crate::core::migrate::rollback::{self, RollbackError};
use crate::core::migrate::verify::{self, VerifyReport};
use crate::core::source::model::Inventory;
use crate::core::source::nova_bm::{NovaBmSource, SourceError};

/// What a step can fail with: the error of the core module that failed, unchanged.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// a connection is missing from the settings (a usage error: see [`PrepareError::is_usage`])
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Source(#[from] SourceError),
    /// no such run, or it is not committed
    #[error(transparent)]
    Run(#[from] RollbackError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Logs(#[from] WatchError),
}

// ---------------------------------------------------------------------------------------------------
// load

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

// ---------------------------------------------------------------------------------------------------
// verify

/// The run that was checked and what the check found.
#[derive(Debug, Clone)]
pub struct Verified {
    pub run: RunRecord,
    pub report: VerifyReport,
}

/// The run `run_id` (None: the newest committed one) recorded in the Ironic database `db`.
pub async fn pick_run(db: &Db, run_id: Option<&str>) -> Result<RunRecord, StepError> {
    let runs = load_sql::runs(db).await?;
    Ok(rollback::pick_run(runs, run_id)?)
}

/// Verifies a run against an open Ironic database, the nova_bm inventory already read, and (when
/// given) the Ironic API. This is the wizard's verify step (its database and inventory are at hand).
pub async fn verify_run(
    db: &Db,
    run_id: Option<&str>,
    inventory: &Inventory,
    api: Option<&IronicApi>,
) -> Result<Verified, StepError> {
    let run = pick_run(db, run_id).await?;
    let report = verify::verify(db, &run, inventory, api).await?;
    Ok(Verified { run, report })
}

/// What [`verify_from_settings`] found, with the API client it used (for a takeover check after).
pub struct VerifiedRun {
    pub run: RunRecord,
    pub report: VerifyReport,
    /// the Ironic API client, when `settings.ironic_url` is given
    pub api: Option<IronicApi>,
}

/// The whole verify from the connection settings (the `verify` command): opens the Ironic database
/// (needs `ironic_db`; detects its schema), picks the run, reads nova_bm (needs `nova_bm_db`),
/// builds the API client when `ironic_url` is given (`token`: an optional Keystone token), verifies,
/// and closes what it opened.
pub async fn verify_from_settings(
    settings: &ConnectionSettings,
    run_id: Option<&str>,
    token: Option<Secret>,
) -> Result<VerifiedRun, StepError> {
    let target = ApiTarget { url: settings.ironic_url.as_ref().map(|u| u.value.clone()), auth: None, token };
    verify_with_api(settings, run_id, &target).await
}

/// [`verify_from_settings`] with the API reached as `target` says (a URL, Keystone credentials with
/// the endpoint from the catalog, a fixed token).
pub async fn verify_with_api(
    settings: &ConnectionSettings,
    run_id: Option<&str>,
    target: &ApiTarget,
) -> Result<VerifiedRun, StepError> {
    let src = settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?;
    let tgt = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
    let db = target::connect(&tgt.value).await?;
    let result = async {
        let schema = target::detect(&db, None).await?;
        let run = pick_run(&db, run_id).await?;
        let source = NovaBmSource::open(&src.value).await?;
        let inventory = source.read_inventory(|_| {}).await?;
        source.close().await;
        let api = api::open(target, schema.kind).await?;
        let report = verify::verify(&db, &run, &inventory, api.as_ref()).await?;
        Ok(VerifiedRun { run, report, api })
    }
    .await;
    db.close().await;
    result
}

/// With a project-scoped Keystone token: what it cannot see of `run` (the nodes answering 404),
/// said plainly. None with a system-scoped token, a fixed one, or none.
pub async fn scope_warning(api: &IronicApi, run: &RunRecord) -> Option<String> {
    let scope = api.scope().await?;
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let hidden = api.not_visible(&uuids).await;
    api::scope_warning(&scope, &hidden)
}

// ---------------------------------------------------------------------------------------------------
// takeover

/// How often the takeover check asks the API about every node.
pub const TAKEOVER_POLL: Duration = Duration::from_secs(2);

/// Follows Ironic's takeover of every node `run` wrote (see [`takeover::check`]): a power state
/// read from the BMC, no last_error or fault, not stuck, a conductor; failing as soon as Ironic
/// reports a fault or error, or `logs` show the node's BMC errors (the built-in takeover patterns).
/// `logs` are read from the run's end, then followed; their warning and error records naming a
/// node are attached to it, collapsed. Waits `timeout` at most (`fail_fast`: up to the first
/// failing node); status changes and counts go to `events`. Each node's verdict goes to the audit log.
pub async fn check_takeover(
    api: &IronicApi,
    run: &RunRecord,
    timeout: Duration,
    fail_fast: bool,
    logs: &[WatchedLog],
    events: &UnboundedSender<TakeoverEvent>,
    cancel: &CancellationToken,
) -> Result<TakeoverOutcome, StepError> {
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let watcher = if logs.is_empty() {
        None
    } else {
        let migrated: HashSet<String> = uuids.iter().map(|u| u.to_ascii_lowercase()).collect();
        // the run's times are UTC; oslo.log writes the conductor's local time
        let since = run.finished_at.unwrap_or(run.started_at);
        let since = chrono::Local.from_utc_datetime(&since).naive_local();
        Some(Watcher::open(logs, Start::Since(since), &Patterns::default_set(), &migrated)?)
    };
    let opts = CheckOptions { timeout, poll: TAKEOVER_POLL, fail_fast };
    let outcome = takeover::check(api, &uuids, opts, watcher, events, cancel).await;
    for n in &outcome.nodes {
        tracing::info!(uuid = %n.uuid, state = ?n.state, power = ?n.power_state, problems = ?n.problems, "takeover");
    }
    tracing::info!(ending = ?outcome.ending, elapsed_ms = outcome.elapsed.as_millis() as u64, "takeover check ended");
    Ok(outcome)
}

// ---------------------------------------------------------------------------------------------------
// flavors

/// Opens the Nova database (`nova` for Juno flavors, `nova_api` for modern ones) and finds its
/// flavor tables. The caller closes the `Db`.
pub async fn open_flavors(url: &DbUrl, access: Access) -> Result<(Db, FlavorSchema), FlavorError> {
    let db = Db::connect(url, access).await?;
    match flavors::detect(&db).await {
        Ok(schema) => Ok((db, schema)),
        Err(e) => {
            db.close().await;
            Err(e)
        }
    }
}

/// What the flavors need for a target of `kind`, from the wizard's fields: Juno/Kilo Nova copies the
/// deploy images from the flavor; modern Nova schedules by resource class (None when none is given).
pub fn flavor_target_for(kind: TargetKind, kernel: &str, ramdisk: &str, resource_class: &str) -> Option<FlavorTarget> {
    match kind {
        TargetKind::Juno => {
            Some(FlavorTarget::DeployImages { kernel: kernel.to_string(), ramdisk: ramdisk.to_string() })
        }
        TargetKind::Modern => {
            Some(resource_class.to_string()).filter(|c| !c.is_empty()).map(FlavorTarget::ResourceClass)
        }
    }
}

/// One sentence on why the flavors change, for the operator.
pub fn describe_flavor_target(t: &FlavorTarget) -> String {
    match t {
        FlavorTarget::DeployImages { .. } => {
            "Juno/Kilo Nova copies the deploy images from the flavor: point them at Ironic's".to_string()
        }
        FlavorTarget::ResourceClass(c) => {
            format!("modern Nova schedules bare metal by resource class {}", flavors::custom_class(c))
        }
    }
}

/// The flavor tables found and the changes a target needs.
#[derive(Debug, Clone)]
pub struct FlavorPreview {
    pub schema: FlavorSchema,
    /// None when no target was given (the tables were checked, there is nothing to plan against)
    pub changes: Option<Vec<SpecChange>>,
}

/// Reads (read-only) the flavor changes `target` needs, for the flavors named in `only` (empty:
/// every flavor with a baremetal: key). Connects, finds the tables, plans, closes.
pub async fn preview_flavors(
    url: &DbUrl,
    target: Option<&FlavorTarget>,
    only: &[String],
) -> Result<FlavorPreview, FlavorError> {
    let (db, schema) = open_flavors(url, Access::ReadOnly).await?;
    let changes = match target {
        Some(t) => flavors::plan_changes(&db, schema, t, only).await.map(Some),
        None => Ok(None),
    };
    db.close().await;
    Ok(FlavorPreview { schema, changes: changes? })
}

/// Applies `changes` on an open Nova database in one transaction, recorded as a new change set;
/// returns the change set id (`flavors --restore --change-set ID` undoes it).
pub async fn apply_flavor_changes(
    db: &Db,
    schema: FlavorSchema,
    changes: &[SpecChange],
) -> Result<String, FlavorError> {
    let set = uuid::Uuid::new_v4().to_string();
    flavors::apply(db, schema, changes, &set).await?;
    Ok(set)
}

/// [`apply_flavor_changes`] on its own connection (read-write): connects, finds the tables, applies,
/// closes; returns the change set id.
pub async fn apply_flavors(url: &DbUrl, changes: &[SpecChange]) -> Result<String, FlavorError> {
    let (db, schema) = open_flavors(url, Access::ReadWrite).await?;
    let r = apply_flavor_changes(&db, schema, changes).await;
    db.close().await;
    r
}

/// Puts back, on an open Nova database, the recorded values of change set `change_set` (None: the
/// newest); returns the change set id and how many specs were restored.
/// `FlavorError::NothingToRestore` when no change is recorded.
pub async fn restore_flavor_changes(db: &Db, change_set: Option<&str>) -> Result<(String, usize), FlavorError> {
    let schema = flavors::detect(db).await?;
    flavors::restore(db, schema, change_set).await
}

/// [`restore_flavor_changes`] on its own connection (read-write): connects, restores, closes.
pub async fn restore_flavors(url: &DbUrl, change_set: Option<&str>) -> Result<(String, usize), FlavorError> {
    let db = Db::connect(url, Access::ReadWrite).await?;
    let r = restore_flavor_changes(&db, change_set).await;
    db.close().await;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavor_targets_by_kind() {
        assert!(matches!(
            flavor_target_for(TargetKind::Juno, "k", "r", ""),
            Some(FlavorTarget::DeployImages { kernel, ramdisk }) if kernel == "k" && ramdisk == "r"
        ));
        assert!(flavor_target_for(TargetKind::Modern, "k", "r", "").is_none());
        let t = flavor_target_for(TargetKind::Modern, "", "", "baremetal-gold").unwrap();
        assert!(describe_flavor_target(&t).starts_with("modern Nova schedules bare metal by resource class CUSTOM_"));
    }
}
