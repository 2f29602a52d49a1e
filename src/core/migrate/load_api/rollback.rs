//! `rollback` of an API run: removes through the API exactly the nodes the run created (their
//! marker names the run and the nova_bm row), each put in maintenance first and then deleted, so
//! that Ironic neither tears down, cleans nor powers anything (a node in maintenance is deleted
//! without loading its driver). Refuses when Ironic has changed a node since, unless forced.

use serde::Serialize;

use crate::core::ironic::api::{nodes, ApiError, IronicApi};
use crate::core::ironic::marker;
use crate::core::migrate::run::record::RunRecord;
use crate::core::migrate::run::status::RunStatus;
use crate::core::migrate::run::store::{self as record, RecordError, RunStore};

#[derive(Debug, Clone, Serialize)]
pub struct ApiRollbackReport {
    pub run_id: String,
    pub removed_nodes: usize,
    pub already_gone: usize,
    /// nodes under a recorded uuid that this run did not create: left alone
    pub not_ours: Vec<String>,
    pub changed_but_forced: Vec<String>,
    /// nodes whose marker names this run but the record lacks, removed with `--force`
    pub unrecorded_removed: Vec<String>,
    /// rows of the record that did not read, skipped with `--force`
    pub unreadable_skipped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiRollbackError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("run {run} is {status}: nothing to roll back")]
    NotRollbackable { run: String, status: String },
    #[error("Ironic has changed {count} node(s) of run {run} since the load: {examples}; nothing removed (use --force to remove them anyway)")]
    Changed { run: String, count: usize, examples: String },
    /// Ironic holds nodes marked as this run's that its record does not list
    #[error("Ironic holds {count} node(s) whose marker names run {run} but which its record does not list: {examples}; nothing removed (check them, then use --force to remove them too)")]
    Unrecorded { run: String, count: usize, examples: String },
}

pub async fn rollback_api(
    api: &IronicApi,
    store: &RunStore,
    mut run: RunRecord,
    force: bool,
) -> Result<ApiRollbackReport, ApiRollbackError> {
    if !record::is_api(&run) || !run.status.is_rollbackable() {
        return Err(ApiRollbackError::NotRollbackable { run: run.id.to_string(), status: run.status.to_string() });
    }
    let unreadable_skipped = record::complete(&run, force)?.iter().map(|u| u.to_string()).collect();
    let mut ours = Vec::new();
    let mut report = ApiRollbackReport {
        run_id: run.id.to_string(),
        removed_nodes: 0,
        already_gone: 0,
        not_ours: Vec::new(),
        changed_but_forced: Vec::new(),
        unrecorded_removed: Vec::new(),
        unreadable_skipped,
    };
    // Ironic's markers are the truth: a node marked as this run's that the record lacks is named,
    // and removed only when forced
    let recorded: std::collections::HashSet<&str> = run.written.iter().map(|w| w.uuid.as_str()).collect();
    let unrecorded: Vec<(String, bool)> = nodes::marked_by(api, &run.id)
        .await?
        .iter()
        .filter_map(|v| {
            let uuid = v["uuid"].as_str()?;
            (!recorded.contains(uuid)).then(|| (uuid.to_string(), v["maintenance"].as_bool() == Some(true)))
        })
        .collect();
    if !unrecorded.is_empty() && !force {
        let examples = unrecorded.iter().take(3).map(|(u, _)| u.clone()).collect::<Vec<_>>().join(", ");
        return Err(ApiRollbackError::Unrecorded { run: run.id.to_string(), count: unrecorded.len(), examples });
    }
    let mut changed = Vec::new();
    for w in &run.written {
        let Some(v) = nodes::find(api, &w.uuid).await? else {
            report.already_gone += 1;
            continue;
        };
        let m = &v["extra"];
        if marker::nova_bm_id(m) != Some(w.nova_bm_id) || marker::run(m) != Some(&*run.id) {
            report.not_ours.push(w.uuid.clone());
            continue;
        }
        let inst = v["instance_uuid"].as_str().map(String::from);
        if inst.is_some() && inst != w.instance_uuid {
            changed.push(format!("{} (instance {})", w.uuid, inst.unwrap_or_default()));
        }
        let recorded: Vec<&str> = w.ports.iter().map(|p| p.address.as_str()).collect();
        let extra_ports = nodes::ports(api, &w.uuid)
            .await?
            .iter()
            .filter(|p| p["address"].as_str().is_some_and(|a| !recorded.contains(&a)))
            .count();
        if extra_ports > 0 {
            changed.push(format!("{} ({extra_ports} port(s) added since)", w.uuid));
        }
        ours.push((w.uuid.clone(), v["maintenance"].as_bool() == Some(true)));
    }
    if !changed.is_empty() && !force {
        let examples = changed.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
        return Err(ApiRollbackError::Changed { run: run.id.to_string(), count: changed.len(), examples });
    }
    report.unrecorded_removed = unrecorded.iter().map(|(u, _)| u.clone()).collect();
    ours.extend(unrecorded);
    let reason = format!("bm2ironic: rollback of run {}", run.id);
    for (uuid, in_maintenance) in &ours {
        if !in_maintenance {
            nodes::maintenance_on(api, uuid, &reason).await?;
        }
        nodes::delete(api, uuid).await?;
        report.removed_nodes += 1;
        tracing::warn!(run = %run.id, %uuid, "node removed through the API (maintenance first; no power action)");
    }
    if force {
        report.changed_but_forced = changed;
    }
    run.status = RunStatus::ApiRolledBack;
    store.set_status(&run).await?;
    Ok(report)
}

crate::core::kind::always!(Runtime: ApiRollbackError);
