//! One attempt at a SQL load: the one transaction that writes the whole plan, from its opening to
//! its commit. It is all or nothing: every statement of the load is in it, nothing is committed
//! before [`finish`], and an attempt that does not commit rolls it back (a killed process leaves it
//! uncommitted, and the server discards it). What the load changes outside it (MySQL's run tables,
//! the id counters) `load_db` puts back.

use crate::core::db::sql::{multi_insert, Val};
use crate::core::db::{DbError, Tx};
use crate::core::migrate::events::{now, LoadEvent, LoadSummary};
use crate::core::migrate::plan::Plan;
use crate::core::migrate::recheck::target_still_as_planned;
use crate::core::migrate::run::record::{runs_ddl, RecordRows, RUNS_TABLE};
use crate::core::migrate::run::status::RunStatus;
use crate::core::migrate::timing::ms;

use super::batch::{batch_from, write_and_build_next};
use super::error::LoadError;
use super::request::Load;

/// One attempt at the load: open the transaction, write every batch, record the run, then commit (or
/// roll back a rehearsal). Whatever fails, the transaction is not committed, and the target is as it
/// was.
pub(super) async fn attempt(load: &Load<'_>, summary: &mut LoadSummary) -> Result<(), LoadError> {
    summary.ports = 0;
    let tx = open(load).await?;
    let mut record = load.record_run.then(|| RecordRows::new(&load.req.run_id, load.budget));
    let (mut tx, done) = write_batches(load, tx, &mut record, summary).await?;
    summary.created = done;
    if load.record_run {
        if let Err(e) = record_run(load, &mut tx, record).await {
            return Err(rolled_back(tx, e.into()).await);
        }
    }
    finish(load, tx, summary).await
}

/// Opens the transaction and checks that the target still holds what the plan counts on (see
/// [`recheck`]), then keeps it so until the end: `Db::begin_write` holds SQLite's write lock from the
/// start (`BEGIN IMMEDIATE`), and on MariaDB/MySQL and PostgreSQL the recheck's reads lock the rows it
/// reads (`FOR UPDATE`): the committed runs' rows, the nodes an earlier run wrote that the plan
/// leaves, and those it replaces. A `rollback` or another bm2ironic then waits for this load instead
/// of removing them under it. Where DDL is transactional (PostgreSQL, SQLite), the run tables this
/// load creates are created in the transaction too.
async fn open<'a>(load: &Load<'a>) -> Result<Tx<'a>, LoadError> {
    let mut tx = load.db.begin_write().await?;
    if let Err(e) = recheck(&mut tx, load.req.plan).await {
        return Err(rolled_back(tx, e).await);
    }
    if load.create_runs_table && !load.ddl_outside {
        for stmt in runs_ddl(load.dialect) {
            if let Err(e) = tx.execute(&stmt.0, stmt.1).await {
                return Err(rolled_back(tx, e.into()).await);
            }
        }
    }
    Ok(tx)
}

/// The plan's facts about the target, read again inside the load's transaction
/// ([`target_still_as_planned`]): a node gone meanwhile is a [`LoadError::TargetChanged`].
pub(super) async fn recheck(tx: &mut Tx<'_>, plan: &Plan) -> Result<(), LoadError> {
    match target_still_as_planned(tx, plan).await? {
        None => Ok(()),
        Some(gone) => Err(LoadError::TargetChanged { count: gone.count, first: gone.first }),
    }
}

/// Every batch of nodes, in order, and a progress event after each. A cancel is seen before each
/// batch (the one under way is finished first). Returns the transaction and how many nodes were
/// written; on a cancel or an error the transaction is rolled back here.
async fn write_batches<'a>(
    load: &Load<'a>,
    mut tx: Tx<'a>,
    record: &mut Option<RecordRows>,
    summary: &mut LoadSummary,
) -> Result<(Tx<'a>, usize), LoadError> {
    let mut done = 0usize;
    // the first batch's rows; each next one is built while the server writes the one before
    let mut pending = Some(batch_from(load, 0));
    while let Some(rows) = pending.take() {
        if load.cancel.is_cancelled() {
            tx.rollback().await?;
            tracing::warn!(run = %load.req.run_id, done, "load cancelled, rolled back");
            return Err(LoadError::Cancelled);
        }
        let count = rows.count;
        pending = match write_and_build_next(load, &mut tx, record, summary, done, rows).await {
            Ok(next_rows) => next_rows,
            Err(e) => return Err(rolled_back(tx, e).await),
        };
        done += count;
        let total = load.to_write.len();
        tracing::debug!(run = %load.req.run_id, done, total, "batch written");
        let _ = load.events.send(LoadEvent::Progress { done, total, elapsed_ms: ms(load.started.elapsed()) });
    }
    Ok((tx, done))
}

/// The run row, then the run record's last node rows (`RecordRows` wrote the others as they filled a
/// statement): one row per node in statements of bounded size, because one value holding every node
/// would pass max_allowed_packet (4 MB on MySQL 5.6) from about 20,000 nodes on.
async fn record_run(load: &Load<'_>, tx: &mut Tx<'_>, record: Option<RecordRows>) -> Result<(), DbError> {
    let req = load.req;
    let kind = serde_json::to_value(req.schema.kind).ok().and_then(|v| v.as_str().map(String::from));
    let (sql, vals) = multi_insert(
        RUNS_TABLE,
        &["id", "started_at", "finished_at", "status", "plan_checksum", "source", "target_kind", "written"],
        vec![vec![
            Val::Text(Some(req.run_id.to_string())),
            Val::Time(Some(load.started_at)),
            Val::Time(Some(now())),
            Val::Text(Some(if req.rehearse { RunStatus::Rehearsal } else { RunStatus::Committed }.to_string())),
            Val::Text(Some(load.req.plan.checksum.clone())),
            Val::Text(Some(req.source.clone())),
            Val::Text(Some(kind.unwrap_or_default())),
            Val::Text(Some("[]".into())),
        ]],
    );
    tx.execute(&sql, vals).await?;
    if let Some((sql, vals)) = record.and_then(RecordRows::finish) {
        tx.execute(&sql, vals).await?;
    }
    Ok(())
}

/// The end of an attempt, the one place where the load becomes visible: the commit shows every node,
/// port and the run record at once. A cancel that came after the last batch still undoes it all,
/// and a rehearsal rolls back what it wrote.
async fn finish(load: &Load<'_>, tx: Tx<'_>, summary: &mut LoadSummary) -> Result<(), LoadError> {
    if load.cancel.is_cancelled() {
        tx.rollback().await?;
        return Err(LoadError::Cancelled);
    }
    summary.load_ms = ms(load.started.elapsed());
    let (run, created) = (&load.req.run_id, summary.created);
    if load.req.rehearse {
        tx.rollback().await?;
        tracing::info!(run = %run, created, "rehearsal complete, rolled back");
    } else {
        tx.commit().await?;
        summary.committed = true;
        tracing::info!(run = %run, created, ports = summary.ports, checksum = %load.req.plan.checksum, "load committed");
    }
    Ok(())
}

/// Rolls the transaction back and returns `e`, the error that stops the attempt. Rolled back here,
/// before the command ends: a transaction only dropped is rolled back by the driver later, and a
/// process that exits first leaves SQLite a hot journal (the file changed until the next opener rolls
/// it back; on a full disk it grew 10x).
async fn rolled_back(tx: Tx<'_>, e: LoadError) -> LoadError {
    let _ = tx.rollback().await;
    e
}
