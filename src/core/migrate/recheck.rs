//! The plan is made from the target as read before the load's transaction; the load reads again,
//! inside it, what the plan counts on there, and keeps it until the commit (the rows locked on
//! MariaDB/MySQL and PostgreSQL; SQLite's write lock held from `BEGIN IMMEDIATE`). A `rollback` or
//! another bm2ironic that changed the target in between is then seen, instead of a run reporting
//! success on nodes that are gone (docs/faults.md, "migrate racing rollback").

use std::collections::HashSet;

use crate::core::db::sql::{marks, Val};
use crate::core::db::{DbError, Tx};
use crate::core::migrate::plan::{NodeAction, Plan};
use crate::core::migrate::run::record::RUNS_TABLE;
use crate::core::migrate::run::status::RunStatus;

/// What the plan counted on and is gone: how many, and the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone {
    pub count: usize,
    pub first: String,
}

/// What the plan found in the target and counts on, read again inside the load's transaction and
/// kept there (`Tx::lock_suffix`): the Ironic nodes of an earlier run it leaves as they are
/// (`already-migrated`) and those a `replace` deletes. A rollback or another bm2ironic that removed
/// one after the plan was read makes this a `LoadError::TargetChanged`: the load must not report
/// success on a target that no longer holds what it said was there. (A node or port written
/// meanwhile with a uuid or MAC of ours fails on Ironic's unique keys and is named: `LoadError::Node`.)
pub async fn target_still_as_planned(tx: &mut Tx<'_>, plan: &Plan) -> Result<Option<Gone>, DbError> {
    let kept: Vec<String> =
        plan.nodes.iter().filter(|n| n.action == NodeAction::AlreadyMigrated).filter_map(|n| n.uuid.clone()).collect();
    let lock = tx.lock_suffix();
    // first the committed runs' rows, which a rollback locks first thing too: the two wait for each
    // other there, before either reads nodes (a rollback's row locks on 20,000 nodes come seconds
    // after its start, too late to stop a migrate from reading them as present)
    let has_runs = tx.table_names().await?.iter().any(|t| t.eq_ignore_ascii_case(RUNS_TABLE));
    if has_runs && !lock.is_empty() {
        let sql = format!("SELECT id FROM {RUNS_TABLE} WHERE status = ?{lock}");
        tx.fetch_all(&sql, vec![Val::from(RunStatus::Committed.as_str())]).await?;
    }
    let mut gone = Vec::new();
    if !kept.is_empty() {
        let found: HashSet<String> = tx
            .fetch_map_in(&kept, |m| format!("SELECT uuid FROM nodes WHERE uuid IN {m}{lock}"), |r| r.string("uuid"))
            .await?
            .into_iter()
            .map(|u| u.to_ascii_lowercase())
            .collect();
        gone.extend(kept.iter().filter(|u| !found.contains(&u.to_ascii_lowercase())).map(|u| format!("node {u}")));
    }
    let replaced: Vec<i64> = plan.nodes.iter().filter_map(|n| n.replaces).collect();
    for chunk in replaced.chunks(500) {
        let sql = format!("SELECT id FROM nodes WHERE id IN {}{lock}", marks(chunk.len()));
        let found: HashSet<i64> = tx
            .fetch_map(&sql, chunk.iter().map(|id| Val::from(*id)).collect(), |r| r.i64("id"))
            .await?
            .into_iter()
            .collect();
        gone.extend(
            chunk.iter().filter(|id| !found.contains(id)).map(|id| format!("Ironic node id {id}, to be replaced")),
        );
    }
    Ok(gone.first().map(|first| {
        tracing::warn!(gone = gone.len(), first = %first, "the target changed after the plan was made");
        Gone { count: gone.len(), first: first.clone() }
    }))
}
