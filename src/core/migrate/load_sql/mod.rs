//! Loading a plan into the Ironic database by SQL, in ONE transaction: all nodes and ports of the
//! run, and the run record that `verify` and `rollback` find it by. Nothing is committed until the
//! end; a failure, a cancel or a killed process leaves the target as it was. `rehearse` does
//! everything and rolls back. Source primary keys are never forced: Ironic assigns ids. Where this
//! stands in a migrate: the use case in `core/migrate/steps/migrate.rs` calls it through `LoadPath`.
//!
//! Here: [`load_db`], what is done outside the transaction (the run tables MySQL cannot create inside
//! it, Galera's limits, the id counters) and the retry of a transaction that lost a write conflict.
//! The transaction itself, and what it guarantees, is `transaction.rs`; one batch of it `batch.rs`;
//! which row made a multi-row INSERT fail `culprit.rs`; the rows and the statements' sizes `rows.rs`;
//! what a load is given `request.rs`; how it fails `error.rs`.

mod batch;
mod culprit;
mod error;
mod request;
mod rows;
mod transaction;

use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::core::db::galera::{CONFLICT_ATTEMPTS, CONFLICT_BACKOFF_MS};
use crate::core::db::{Db, DbError, IdCounter};
use crate::core::migrate::counters::{read_counters, restore_counters};
use crate::core::migrate::events::{now, send_skipped, LoadEvent, LoadSummary};
use crate::core::migrate::plan::{NodePlan, Plan};
use crate::core::migrate::run::record::{runs_ddl, RUNS_TABLE, RUN_NODES_TABLE};
use crate::core::migrate::timing::ms;
use request::Load;
use rows::{node_columns, port_columns, write_set_size, STATEMENT_BYTES};
use transaction::recheck;

pub use error::LoadError;
pub use request::LoadRequest;
pub use rows::BATCH;

/// Loads the plan. Events go to `events` (a closed receiver is fine); `cancel` stops between batches.
pub async fn load_db(
    db: &Db,
    req: LoadRequest<'_>,
    events: &UnboundedSender<LoadEvent>,
    cancel: &CancellationToken,
) -> Result<LoadSummary, LoadError> {
    let started = Instant::now();
    let plan = req.plan;
    if plan.blocking() > 0 {
        return Err(LoadError::Blocked(plan.blocking()));
    }
    let to_write: Vec<_> = plan.to_write().collect();
    let total_ports: usize = to_write.iter().map(|n| n.write.map_or(0, |w| w.ports)).sum();
    let _ = events.send(LoadEvent::Started {
        run_id: req.run_id.clone(),
        nodes: to_write.len(),
        ports: total_ports,
        rehearse: req.rehearse,
    });
    send_skipped(plan, events);
    let mut summary = LoadSummary::begin(plan, &req.run_id, req.rehearse);
    if to_write.is_empty() {
        nothing_to_write(db, plan, &req.run_id).await?;
        return Ok(summary.nothing_to_write(started, events));
    }
    // read before anything is changed outside the transaction (the run tables on MySQL): a failure
    // here leaves the target untouched, with nothing to undo
    let counters = read_counters(db).await?;
    let load = prepare(db, &req, to_write, events, cancel, started).await?;
    let outcome = with_retries(&load, &counters, &mut summary).await;
    if !summary.committed {
        undo_outside(&load, &counters).await;
    }
    outcome?;
    summary.elapsed_ms = ms(started.elapsed());
    summary.commit_ms = summary.elapsed_ms - summary.load_ms;
    summary.finished_at = now();
    let _ = events.send(LoadEvent::Summary(summary.clone()));
    Ok(summary)
}

/// "Nothing to write" is a fact about the target only while it holds what the plan found there:
/// checked in a write transaction of its own, which writes nothing and is rolled back.
async fn nothing_to_write(db: &Db, plan: &Plan, run_id: &str) -> Result<(), LoadError> {
    let mut tx = db.begin_write().await?;
    let still = recheck(&mut tx, plan).await;
    let _ = tx.rollback().await;
    still?;
    tracing::info!(run = %run_id, "nothing to write");
    Ok(())
}

/// What is settled before the transaction opens: the run tables (created here on MySQL, whose DDL
/// commits implicitly, and dropped again if the load does not commit), the columns and the size of
/// the statements, and Galera's limits on one write set checked against the whole load (it is never
/// split: it must stay all or nothing).
async fn prepare<'a>(
    db: &'a Db,
    req: &'a LoadRequest<'a>,
    to_write: Vec<&'a NodePlan>,
    events: &'a UnboundedSender<LoadEvent>,
    cancel: &'a CancellationToken,
    started: Instant,
) -> Result<Load<'a>, LoadError> {
    let dialect = db.dialect();
    let names = db.table_names().await?;
    let existed = |t: &str| names.iter().any(|n| n.eq_ignore_ascii_case(t));
    // which run tables this load would create (and so drops again if it does not commit, on MySQL)
    let missing_tables: Vec<&str> = [RUNS_TABLE, RUN_NODES_TABLE].into_iter().filter(|t| !existed(t)).collect();
    let had_runs_table = missing_tables.is_empty();
    // MySQL commits implicitly on DDL: there the table is created before the transaction and dropped
    // again when this load does not commit; PostgreSQL and SQLite create it inside the transaction
    let create_runs_table = !req.rehearse && !had_runs_table;
    let ddl_outside = create_runs_table && dialect.ddl_commits();
    if ddl_outside {
        if let Err(e) = db.execute_all(runs_ddl(dialect)).await {
            // the first table may have been made before the second failed: not left behind
            for t in missing_tables.iter().rev() {
                let _ = db.execute(&format!("DROP TABLE IF EXISTS {t}"), vec![]).await;
            }
            return Err(e.into());
        }
    }
    // the ids the database assigns come back from the INSERT where it can say them (not MySQL)
    let returning = db.insert_returning();
    tracing::info!(run = %req.run_id, nodes = to_write.len(), ids = if returning { "returned by the INSERT" } else { "looked up by uuid" }, "load starting");
    let load = Load {
        db,
        req,
        to_write,
        events,
        cancel,
        started,
        ncols: node_columns(req.schema),
        pcols: port_columns(req.schema),
        started_at: now(),
        dialect,
        returning,
        // statements sized to the server: at most `budget` bytes (below max_allowed_packet on
        // MySQL), `BATCH` rows and PostgreSQL's 65535 bound values each
        budget: db.max_statement_bytes().min(STATEMENT_BYTES),
        record_run: !req.rehearse || had_runs_table,
        create_runs_table,
        ddl_outside,
        missing_tables,
    };
    if let Some(g) = &db.galera {
        let (rows, bytes) =
            write_set_size(req.schema, &req.run_id, load.req.plan, &load.to_write, &load.ncols, &load.pcols);
        if let Err(e) = g.check_write_set(&db.url, rows, bytes) {
            drop_tables(&load).await;
            return Err(e.into());
        }
    }
    Ok(load)
}

/// Runs the transaction until it ends. A write conflict (ERROR 1213: InnoDB's deadlock detection, or
/// Galera's certification at commit) has rolled the whole attempt back: it is tried again from the
/// start, in a new transaction that checks the target again, after putting back the id counters the
/// attempt advanced; `CONFLICT_ATTEMPTS` times at most, with a pause that doubles each time, and not
/// once cancelled.
async fn with_retries(load: &Load<'_>, counters: &[IdCounter], summary: &mut LoadSummary) -> Result<(), LoadError> {
    let mut attempt = 1;
    loop {
        match transaction::attempt(load, summary).await {
            Err(LoadError::Db(e @ DbError::Conflict { .. }))
                if attempt < CONFLICT_ATTEMPTS && !load.cancel.is_cancelled() =>
            {
                tracing::warn!(run = %load.req.run_id, attempt, error = %e, "write conflict: the load was rolled back, trying again");
                restore_counters(load.db, counters).await;
                tokio::time::sleep(Duration::from_millis(CONFLICT_BACKOFF_MS << (attempt - 1))).await;
                attempt += 1;
            }
            Err(LoadError::Db(last @ DbError::Conflict { .. })) => {
                return Err(LoadError::Conflicts { attempts: attempt, last })
            }
            other => return other,
        }
    }
}

/// After a load that did not commit (it failed, was cancelled, or was a rehearsal): what it changed
/// outside its transaction is put back, so that the target is as it was.
async fn undo_outside(load: &Load<'_>, counters: &[IdCounter]) {
    // a rolled-back INSERT still advances sequences / AUTO_INCREMENT: put them back
    restore_counters(load.db, counters).await;
    drop_tables(load).await;
    load.db.settle_after_failure().await;
}

/// Drops the run tables a load created outside its transaction (MySQL) when it did not commit.
async fn drop_tables(load: &Load<'_>) {
    if load.ddl_outside {
        for t in load.missing_tables.iter().rev() {
            if let Err(e) = load.db.execute(&format!("DROP TABLE IF EXISTS {t}"), vec![]).await {
                tracing::warn!(error = %e, table = t, "could not drop a run table this failed load created");
            }
        }
    }
}
