//! The takeover step: follow Ironic's takeover of the nodes a run wrote (API answers and the
//! followed logs), as both faces run it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use chrono::TimeZone;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::error::StepError;
use super::verify::run_store;
use crate::core::ironic::api::{self, ApiTarget, IronicApi};
use crate::core::ironic::takeover;
use crate::core::ironic::target::TargetKind;
use crate::core::ironic::verdict::{CheckOptions, TakeoverEvent, TakeoverOutcome};
use crate::core::logs::watch::{Patterns, Start, WatchedLog, Watcher};
use crate::core::migrate::run::record::RunRecord;
use crate::core::settings::ConnectionSettings;

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

/// The takeover of run `run_id` of either path, from the settings (the wizard's takeover step):
/// finds the run where it is kept ([`RunStore::find`]), reaches the API as `target` says, and
/// follows it as [`check_takeover`] does (as `follow` says, not stopping at the first failure).
pub async fn check_takeover_of(
    settings: &ConnectionSettings,
    state_dir: PathBuf,
    run_id: &str,
    target: &ApiTarget,
    follow: Follow<'_>,
    events: &UnboundedSender<TakeoverEvent>,
    cancel: &CancellationToken,
) -> Result<TakeoverOutcome, StepError> {
    let store = run_store(settings, state_dir).await?;
    let found = store.find(Some(run_id)).await;
    store.close().await;
    let run = found?;
    // the run record names the target kind as `TargetKind` serialises it
    let kind = if run.target_kind == "juno" { TargetKind::Juno } else { TargetKind::Modern };
    let api = api::client(target, kind).await?.ok_or(StepError::NoApi { what: "following Ironic's takeover" })?;
    check_takeover(&api, &run, follow.timeout, false, follow.logs, events, cancel).await
}

/// How a takeover is followed: for how long at most, and which logs beside the API.
pub struct Follow<'a> {
    pub timeout: Duration,
    pub logs: &'a [WatchedLog],
}
