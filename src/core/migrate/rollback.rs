//! `rollback`: removes exactly what one run wrote (its nodes, their ports) in one transaction, and
//! refuses when Ironic has since changed those nodes (e.g. a new instance) unless forced.

use std::collections::HashSet;

use serde::Serialize;

use crate::core::db::sql::{marks, Val};
use crate::core::db::{Cast, Db, DbError, Dialect};
use crate::core::migrate::run_record::{self, RunRecord};

/// Tables whose rows hang off a node and go with it (Ironic writes node_history on its own).
const NODE_CHILD_TABLES: &[&str] =
    &["node_history", "node_traits", "node_tags", "bios_settings", "node_inventory", "firmware_information"];

#[derive(Debug, Clone, Serialize)]
pub struct RollbackReport {
    pub run_id: String,
    pub removed_nodes: usize,
    pub removed_ports: usize,
    pub already_gone: usize,
    pub changed_but_forced: Vec<String>,
    /// nodes the run deleted with `replace`: a rollback cannot bring them back
    pub not_restored: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("no committed bm2ironic run in this Ironic database")]
    NoRun,
    #[error("no run {0} in this Ironic database (see `bm2ironic rollback --list`)")]
    UnknownRun(String),
    #[error("run {run} is {status}, not committed: nothing to roll back")]
    NotCommitted { run: String, status: String },
    #[error("Ironic has changed {count} node(s) of run {run} since the load: {examples}; nothing removed (use --force to remove them anyway)")]
    Changed { run: String, count: usize, examples: String },
}

pub fn pick_run(runs: Vec<RunRecord>, id: Option<&str>) -> Result<RunRecord, RollbackError> {
    match id {
        Some(id) => runs.into_iter().find(|r| r.id == id).ok_or_else(|| RollbackError::UnknownRun(id.into())),
        None => runs.into_iter().find(|r| r.status == "committed").ok_or(RollbackError::NoRun),
    }
}

struct Current {
    id: i64,
    uuid: String,
    provision_state: Option<String>,
    instance_uuid: Option<String>,
    reservation: Option<String>,
}

/// The nodes of `marks` (an IN list of uuids) as they are now.
fn current_sql(d: Dialect, marks: &str) -> String {
    format!(
        "SELECT {}, {}, {}, {}, {} FROM nodes WHERE uuid IN {marks}",
        d.column("id", Cast::Int),
        d.cast(Cast::Text, "uuid"),
        d.cast(Cast::Text, "provision_state"),
        d.cast(Cast::Text, "instance_uuid"),
        d.cast(Cast::Text, "reservation"),
    )
}

/// The ports of the nodes of `marks` (an IN list of uuids).
fn ports_sql(d: Dialect, marks: &str) -> String {
    format!(
        "SELECT {} AS uuid FROM ports p JOIN nodes n ON p.node_id = n.id WHERE n.uuid IN {marks}",
        d.cast(Cast::Text, "p.uuid")
    )
}

pub async fn rollback(db: &Db, run_id: Option<&str>, force: bool) -> Result<RollbackReport, RollbackError> {
    let run = pick_run(run_record::runs(db).await?, run_id)?;
    if run.status != "committed" {
        return Err(RollbackError::NotCommitted { run: run.id, status: run.status });
    }
    let d = db.dialect();
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let our_ports: HashSet<String> = run.written.iter().flat_map(|w| w.ports.iter().map(|p| p.uuid.clone())).collect();

    // what is there now
    let current: Vec<Current> = db
        .fetch_map_in(
            &uuids,
            |m| current_sql(d, m),
            |r| {
                Ok(Current {
                    id: r.get("id")?,
                    uuid: r.string("uuid")?,
                    provision_state: r.opt_string("provision_state")?,
                    instance_uuid: r.opt_string("instance_uuid")?,
                    reservation: r.opt_string("reservation")?,
                })
            },
        )
        .await?;
    let foreign_ports: Vec<String> = db
        .fetch_map_in(&uuids, |m| ports_sql(d, m), |r| r.opt_string("uuid"))
        .await?
        .into_iter()
        .flatten()
        .filter(|u| !our_ports.contains(u))
        .collect();

    let mut changed = Vec::new();
    for c in &current {
        let Some(w) = run.written.iter().find(|w| w.uuid == c.uuid) else { continue };
        let mut why = Vec::new();
        if c.provision_state != w.provision_state {
            why.push(format!(
                "provision state {} (was {})",
                c.provision_state.as_deref().unwrap_or("none"),
                w.provision_state.as_deref().unwrap_or("none")
            ));
        }
        if c.instance_uuid != w.instance_uuid {
            why.push(format!("instance {}", c.instance_uuid.as_deref().unwrap_or("none")));
        }
        if let Some(r) = &c.reservation {
            why.push(format!("locked by conductor {r}"));
        }
        if !why.is_empty() {
            changed.push(format!("{} ({})", c.uuid, why.join(", ")));
        }
    }
    if !foreign_ports.is_empty() {
        changed.push(format!("{} port(s) added since", foreign_ports.len()));
    }
    if !changed.is_empty() && !force {
        let examples = changed.iter().take(3).cloned().collect::<Vec<_>>().join("; ");
        return Err(RollbackError::Changed { run: run.id, count: changed.len(), examples });
    }

    let ids: Vec<i64> = current.iter().map(|c| c.id).collect();
    let tables: Vec<String> = db.table_names().await?.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    let mut removed_ports = 0u64;
    let mut removed_nodes = 0u64;
    let mut tx = db.begin().await?;
    for chunk in ids.chunks(500) {
        let m = marks(chunk.len());
        let vals = || chunk.iter().map(|id| Val::from(*id)).collect::<Vec<_>>();
        for t in NODE_CHILD_TABLES.iter().filter(|t| tables.iter().any(|x| x == *t)) {
            tx.execute(&format!("DELETE FROM {t} WHERE node_id IN {m}"), vals()).await?;
        }
        removed_ports += tx.execute(&format!("DELETE FROM ports WHERE node_id IN {m}"), vals()).await?;
        removed_nodes += tx.execute(&format!("DELETE FROM nodes WHERE id IN {m}"), vals()).await?;
    }
    let (sql, vals) = run_record::set_status_stmt(&run.id, "rolled-back");
    tx.execute(&sql, vals).await?;
    tx.commit().await?;
    let not_restored: Vec<String> = run
        .written
        .iter()
        .filter_map(|w| w.replaced.map(|id| format!("Ironic node id {id} (replaced by {})", w.uuid)))
        .collect();
    tracing::warn!(run = %run.id, removed_nodes, removed_ports, forced = force, "rollback committed");
    Ok(RollbackReport {
        run_id: run.id.clone(),
        removed_nodes: removed_nodes as usize,
        removed_ports: removed_ports as usize,
        already_gone: uuids.len() - current.len(),
        changed_but_forced: if force { changed } else { Vec::new() },
        not_restored,
    })
}
