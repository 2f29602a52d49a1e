//! `rollback`: removes exactly what one run wrote (its nodes, their ports) in one transaction, and
//! refuses when Ironic has since changed those nodes (e.g. a new instance) unless forced.

use std::collections::HashSet;

use serde::Serialize;

use crate::core::db::sql::{marks, Val};
use crate::core::db::{Cast, Db, DbError, Dialect, Tx};
use crate::core::ironic::marker;
use crate::core::migrate::run::record as run_record;
use crate::core::migrate::run::status::RunStatus;
use crate::core::migrate::run::store::{complete, select, FindError, RecordError};

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
    /// nodes of the record whose marker names another run (or none): left alone
    pub not_ours: Vec<String>,
    /// nodes whose marker names this run but the record lacks, removed with `--force`
    pub unrecorded_removed: Vec<String>,
    /// rows of the record that did not read, skipped with `--force`
    pub unreadable_skipped: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error(transparent)]
    Db(#[from] DbError),
    /// no such run, or none committed
    #[error(transparent)]
    Find(#[from] FindError),
    #[error("run {run} is {status}, not committed: nothing to roll back")]
    NotCommitted { run: String, status: String },
    #[error("Ironic has changed {count} node(s) of run {run} since the load: {examples}; nothing removed (use --force to remove them anyway)")]
    Changed { run: String, count: usize, examples: String },
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Ironic holds nodes marked as this run's that its record does not list
    #[error("Ironic holds {count} node(s) whose marker names run {run} but which its record does not list: {examples}; nothing removed (check them, then use --force to remove them too)")]
    Unrecorded { run: String, count: usize, examples: String },
}

/// A node whose marker (`extra`) names a run: Ironic's own word on what the run wrote.
pub struct Marked {
    pub id: i64,
    pub uuid: String,
}

/// The nodes whose marker names run `run_id` (either form of the marker). `LIKE` narrows the
/// rows read; the marker itself decides.
pub async fn marked_nodes(tx: &mut Tx<'_>, run_id: &str, lock: bool) -> Result<Vec<Marked>, DbError> {
    let d = tx.dialect();
    let lock = if lock { tx.lock_suffix() } else { "" };
    let sql = format!(
        "SELECT {}, {}, {} FROM nodes WHERE {} LIKE ?{lock}",
        d.column("id", Cast::Int),
        d.column("uuid", Cast::Text),
        d.column("extra", Cast::Text),
        d.cast(Cast::Text, "extra"),
    );
    let rows: Vec<(i64, Option<String>, Option<String>)> = tx
        .fetch_map(&sql, vec![Val::from(format!("%{run_id}%"))], |r| {
            Ok((r.get("id")?, r.opt_string("uuid")?, r.opt_string("extra")?))
        })
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, uuid, extra)| {
            let extra: serde_json::Value = serde_json::from_str(extra.as_deref()?).ok()?;
            (marker::run(&extra) == Some(run_id)).then(|| Marked { id, uuid: uuid.unwrap_or_default() })
        })
        .collect())
}

/// On MariaDB/MySQL and PostgreSQL: locks the run's row first thing, before the slower reading of
/// every run record (seconds at 20,000 nodes). A `migrate` locks the committed runs' rows before it
/// reads the target again (`recheck.rs`), so whichever takes them first goes first and the other
/// waits for its commit and sees what it did. (SQLite's transaction holds the write lock from its
/// start already.)
async fn lock_run_first(tx: &mut Tx<'_>, run_id: Option<&str>) -> Result<(), DbError> {
    let lock = tx.lock_suffix();
    let tables = tx.table_names().await?;
    if lock.is_empty() || !tables.iter().any(|n| n.eq_ignore_ascii_case(run_record::RUNS_TABLE)) {
        return Ok(());
    }
    let id = tx.dialect().column("id", Cast::Text);
    let (sql, vals) = match run_id {
        Some(r) => (format!("SELECT {id} FROM {} WHERE id = ?{lock}", run_record::RUNS_TABLE), vec![Val::from(r)]),
        None => (
            format!(
                "SELECT {id} FROM {} WHERE status = ? ORDER BY started_at DESC, id LIMIT 1{lock}",
                run_record::RUNS_TABLE
            ),
            vec![Val::from(RunStatus::Committed.as_str())],
        ),
    };
    let run: Vec<String> = tx.fetch_map(&sql, vals, |r| r.string("id")).await?;
    tracing::debug!(run = ?run.first(), "rollback: the run's row locked");
    Ok(())
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

/// The ports of the nodes of `marks` (an IN list of Ironic node ids). By id, without a join: Ironic
/// has no index on `ports.node_id`, and PostgreSQL's plan for the join by uuid scanned the ports once
/// per node (a rollback of 5,000 nodes spent minutes here).
fn ports_sql(d: Dialect, marks: &str) -> String {
    format!("SELECT {} AS uuid FROM ports WHERE node_id IN {marks}", d.cast(Cast::Text, "uuid"))
}

pub async fn rollback(db: &Db, run_id: Option<&str>, force: bool) -> Result<RollbackReport, RollbackError> {
    // one transaction from the first read on: it holds what it reads (SQLite's write lock, the rows
    // locked on the servers), so a migrate or another rollback started meanwhile waits for it and then
    // sees its outcome (a migrate that had planned from the nodes removed here says so:
    // load_sql/transaction.rs `recheck`). A rollback that ends early rolls the transaction back:
    // nothing was changed.
    let mut tx = db.begin_write().await?;
    let outcome = remove_run(&mut tx, run_id, force).await;
    match outcome {
        Ok(report) => {
            tx.commit().await?;
            tracing::warn!(run = %report.run_id, removed_nodes = report.removed_nodes, removed_ports = report.removed_ports, forced = force, "rollback committed");
            Ok(report)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

async fn remove_run(tx: &mut Tx<'_>, run_id: Option<&str>, force: bool) -> Result<RollbackReport, RollbackError> {
    lock_run_first(tx, run_id).await?;
    // the run named, or the newest committed SQL one (an API run is undone through the API)
    let head = select(run_record::heads(tx).await?, run_id, |r| r.status.is_committed_sql())?;
    let run = run_record::read_run(tx, &head.id).await?.unwrap_or(head);
    // a record row that does not read stops the rollback (Ironic's markers still name the node)
    let unreadable_skipped: Vec<String> = complete(&run, force)?.iter().map(|u| u.to_string()).collect();
    let lock = tx.lock_suffix();
    let (status_sql, status_vals) = run_record::status_stmt(&run.id);
    let status: Option<String> = tx
        .fetch_map(&format!("{status_sql}{lock}"), status_vals, |r| r.opt_string("status"))
        .await?
        .into_iter()
        .flatten()
        .next();
    if !status.as_deref().is_some_and(|s| RunStatus::from(s).is_committed_sql()) {
        return Err(RollbackError::NotCommitted {
            run: run.id.to_string(),
            status: status.unwrap_or_else(|| "gone".into()),
        });
    }
    let d = tx.dialect();
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let our_ports: HashSet<String> = run.written.iter().flat_map(|w| w.ports.iter().map(|p| p.uuid.clone())).collect();
    let tables: Vec<String> = tx.table_names().await?.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    // what is there now
    let current: Vec<Current> = tx
        .fetch_map_in(
            &uuids,
            |m| format!("{}{lock}", current_sql(d, m)),
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
    // Ironic's markers are the truth: a recorded node that another run (or no run) marks is left
    // alone; a node marked as this run's that the record lacks is named, and removed only when forced
    // (a plain read: the run's row is locked, and no other run writes this run's marker)
    let marked = marked_nodes(tx, &run.id, false).await?;
    let marked_ids: HashSet<i64> = marked.iter().map(|m| m.id).collect();
    let (mut current, others): (Vec<Current>, Vec<Current>) =
        current.into_iter().partition(|c| marked_ids.contains(&c.id));
    let not_ours: Vec<String> = others.iter().map(|c| c.uuid.clone()).collect();
    let recorded: HashSet<&str> = run.written.iter().map(|w| w.uuid.as_str()).collect();
    let unrecorded: Vec<Marked> = marked.into_iter().filter(|m| !recorded.contains(m.uuid.as_str())).collect();
    if !unrecorded.is_empty() && !force {
        let examples = unrecorded.iter().take(3).map(|m| m.uuid.clone()).collect::<Vec<_>>().join(", ");
        return Err(RollbackError::Unrecorded { run: run.id.to_string(), count: unrecorded.len(), examples });
    }
    let unrecorded_removed: Vec<String> = unrecorded.iter().map(|m| m.uuid.clone()).collect();
    for m in unrecorded {
        current.push(Current { id: m.id, uuid: m.uuid, provision_state: None, instance_uuid: None, reservation: None });
    }
    let mut foreign_ports: Vec<String> = Vec::new();
    for chunk in current.chunks(500) {
        let vals = chunk.iter().map(|c| Val::from(c.id)).collect();
        let ports = tx.fetch_map(&ports_sql(d, &marks(chunk.len())), vals, |r| r.opt_string("uuid")).await?;
        foreign_ports.extend(ports.into_iter().flatten().filter(|u| !our_ports.contains(u)));
    }

    let mut changed = Vec::new();
    let by_uuid: std::collections::HashMap<&str, &run_record::WrittenNode> =
        run.written.iter().map(|w| (w.uuid.as_str(), w)).collect();
    for c in &current {
        let Some(w) = by_uuid.get(c.uuid.as_str()) else { continue };
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
        return Err(RollbackError::Changed { run: run.id.to_string(), count: changed.len(), examples });
    }

    let ids: Vec<i64> = current.iter().map(|c| c.id).collect();
    let mut removed_ports = 0u64;
    let mut removed_nodes = 0u64;
    // every child row first, then the nodes: deleting a node makes the database look for rows that
    // still point at it (SQLite has no index on ports.node_id: with the ports of later chunks still
    // there, 20,000 nodes took 40 s; with them gone first, the look-ups find empty tables)
    let chunks: Vec<&[i64]> = ids.chunks(500).collect();
    let vals = |chunk: &[i64]| chunk.iter().map(|id| Val::from(*id)).collect::<Vec<_>>();
    for chunk in &chunks {
        let m = marks(chunk.len());
        for t in NODE_CHILD_TABLES.iter().filter(|t| tables.iter().any(|x| x == *t)) {
            tx.execute(&format!("DELETE FROM {t} WHERE node_id IN {m}"), vals(chunk)).await?;
        }
        removed_ports += tx.execute(&format!("DELETE FROM ports WHERE node_id IN {m}"), vals(chunk)).await?;
    }
    for chunk in &chunks {
        removed_nodes +=
            tx.execute(&format!("DELETE FROM nodes WHERE id IN {}", marks(chunk.len())), vals(chunk)).await?;
    }
    let (sql, vals) = run_record::set_status_stmt(&run.id, &RunStatus::RolledBack);
    tx.execute(&sql, vals).await?;
    let not_restored: Vec<String> = run
        .written
        .iter()
        .filter_map(|w| w.replaced.map(|id| format!("Ironic node id {id} (replaced by {})", w.uuid)))
        .collect();
    Ok(RollbackReport {
        run_id: run.id.to_string(),
        removed_nodes: removed_nodes as usize,
        removed_ports: removed_ports as usize,
        already_gone: uuids.len().saturating_sub(current.len() - unrecorded_removed.len() + not_ours.len()),
        changed_but_forced: if force { changed } else { Vec::new() },
        not_restored,
        not_ours,
        unrecorded_removed,
        unreadable_skipped,
    })
}

impl crate::core::kind::HasKind for RollbackError {
    /// A run that is not where runs are kept is the operator's to fix ([`FindError`]'s kind); the
    /// rest is the database's answer.
    fn kind(&self) -> crate::core::kind::Kind {
        match self {
            RollbackError::Find(e) => crate::core::kind::HasKind::kind(e),
            _ => crate::core::kind::Kind::Runtime,
        }
    }
}
