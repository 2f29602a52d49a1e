//! Loading a plan into the Ironic database by SQL, in ONE transaction: all nodes and ports of the
//! run, and the run record that `verify` and `rollback` find it by. Nothing is committed until the
//! end; a failure, a cancel or a killed process leaves the target as it was. `rehearse` does
//! everything and rolls back. Source primary keys are never forced: Ironic assigns ids.

mod error;
mod rows;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::core::db::galera::{CONFLICT_ATTEMPTS, CONFLICT_BACKOFF_MS};
use crate::core::db::sql::{marks, multi_insert, texts, Val};
use crate::core::db::{Db, DbError, Tx};
use crate::core::ironic::target::TargetSchema;
use crate::core::migrate::counters::{read_counters, restore_counters};
use crate::core::migrate::events::send_skipped;
use crate::core::migrate::events::{now, LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{IronicPort, NodePlan, Plan};
use crate::core::migrate::run_record::{runs_ddl, written, RecordRows, RUNS_TABLE, RUN_NODES_TABLE};
use crate::core::migrate::run_status::RunStatus;
use crate::core::migrate::timing::ms;
use rows::{
    node_batch, node_columns, node_values, port_columns, port_values, rows_within, write_set_size, NodeBatch,
    BIND_LIMIT, STATEMENT_BYTES,
};

pub use error::LoadError;
pub use rows::BATCH;

pub struct LoadRequest<'a> {
    pub plan: &'a Plan,
    pub schema: &'a TargetSchema,
    pub rehearse: bool,
    /// redacted source URL, for the run record
    pub source: String,
    pub run_id: String,
}

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
        // "nothing to write" is a fact about the target only while it holds what the plan found there
        let mut tx = db.begin_write().await?;
        let still = recheck(&mut tx, plan).await;
        let _ = tx.rollback().await;
        still?;
        tracing::info!(run = %req.run_id, "nothing to write");
        return Ok(summary.nothing_to_write(started, events));
    }
    let dialect = db.dialect();
    let names = db.table_names().await?;
    let existed = |t: &str| names.iter().any(|n| n.eq_ignore_ascii_case(t));
    // which run tables this load would create (and so drops again if it does not commit, on MySQL)
    let missing_tables: Vec<&str> = [RUNS_TABLE, RUN_NODES_TABLE].into_iter().filter(|t| !existed(t)).collect();
    let had_runs_table = missing_tables.is_empty();
    let record_run = !req.rehearse || had_runs_table;
    // MySQL commits implicitly on DDL: there the table is created before the transaction and dropped
    // again below when this load does not commit; PostgreSQL and SQLite create it inside the transaction
    let create_runs_table = !req.rehearse && !had_runs_table;
    let ddl_outside = create_runs_table && dialect.ddl_commits();
    if ddl_outside {
        db.execute_all(runs_ddl(dialect)).await?;
    }
    // the ids the database assigns come back from the INSERT where it can say them (not MySQL)
    let returning = db.insert_returning();
    tracing::info!(run = %req.run_id, nodes = to_write.len(), ids = if returning { "returned by the INSERT" } else { "looked up by uuid" }, "load starting");
    let ncols = node_columns(req.schema);
    let pcols = port_columns(req.schema);
    let started_at = now();
    if let Some(g) = &db.galera {
        let (rows, bytes) = write_set_size(req.schema, &req.run_id, plan, &to_write, &ncols, &pcols);
        if let Err(e) = g.check_write_set(&db.url, rows, bytes) {
            drop_tables(db, ddl_outside, &missing_tables).await;
            return Err(e.into());
        }
    }

    let counters = read_counters(db).await?;
    // a write conflict (ERROR 1213: deadlock, Galera certification) rolls the whole load back: try it
    // again from the start, a bounded number of times
    let mut attempt_load = async || {
        summary.ports = 0;
        let mut tx = db.begin_write().await?;
        // the plan was read outside this transaction: what it counts on in the target must still be
        // there, and stays so until the commit (the rows locked; SQLite's write lock held)
        if let Err(e) = recheck(&mut tx, plan).await {
            let _ = tx.rollback().await;
            return Err(e);
        }
        if create_runs_table && !ddl_outside {
            for stmt in runs_ddl(dialect) {
                tx.execute(&stmt.0, stmt.1).await?;
            }
        }
        let mut done = 0usize;
        // statements sized to the server: at most `budget` bytes (below max_allowed_packet on MySQL),
        // `BATCH_ROWS` rows and PostgreSQL's 65535 bound values each
        let budget = db.max_statement_bytes().min(STATEMENT_BYTES);
        let mut record = record_run.then(|| RecordRows::new(&req.run_id, budget));
        let mut next = 0usize;
        // the first batch's rows; each next one is built while the server writes the one before
        let mut pending = Some(node_batch(plan, &to_write, req.schema, &ncols, &req.run_id, budget));
        while let Some(NodeBatch { count, built, rows }) = pending.take() {
            if cancel.is_cancelled() {
                tx.rollback().await?;
                tracing::warn!(run = %req.run_id, done, "load cancelled, rolled back");
                return Err(LoadError::Cancelled);
            }
            let batch = &to_write[next..next + count];
            next += count;
            let following = next;
            // set once this batch's INSERT of nodes is on its way (or the batch ended): the next batch
            // is built while the server works on it
            let sent = AtomicBool::new(false);
            let this_batch = async {
                let _ended = SetOnDrop(&sent);
                // `replace`: the other node and its ports go first
                for n in batch.iter().filter(|n| n.replaces.is_some()) {
                    let id = n.replaces.unwrap_or_default();
                    for t in ["ports", "nodes"] {
                        let col = if t == "ports" { "node_id" } else { "id" };
                        tx.execute(&format!("DELETE FROM {t} WHERE {col} = ?"), vec![Val::from(id)]).await?;
                    }
                    tracing::warn!(run = %req.run_id, replaced_id = id, uuid = ?n.uuid, "replaced an Ironic node (operator's decision)");
                }
                let (mut sql, vals) = multi_insert("nodes", &ncols, rows);
                tx.execute(SAVEPOINT, vec![]).await?;
                sent.store(true, Ordering::Relaxed); // the INSERT below goes out when it is first polled
                                                     // the ids the database assigned: returned by the INSERT where it can (PostgreSQL, SQLite,
                                                     // MariaDB 10.5+), else looked up by uuid below (MySQL has no RETURNING). On PostgreSQL the
                                                     // lookup went to a sequential scan as the uncommitted table grew: quadratic at 100k
                let inserted = if returning {
                    sql.push_str(" RETURNING id, uuid");
                    tx.fetch_map(&sql, vals, |r| Ok((r.string("uuid")?, r.i64("id")?))).await.map(Some)
                } else {
                    tx.execute(&sql, vals).await.map(|_| None)
                };
                let returned = match inserted {
                    Ok(r) => r,
                    Err(e) => {
                        if !matches!(e, DbError::Other { .. }) {
                            return Err(e.into()); // about the server or the session, not a row
                        }
                        // name the row that failed, not the batch: retry one by one up to the culprit
                        let rows: Vec<Vec<Val>> =
                            built.iter().map(|(_, r)| node_values(req.schema, &ncols, &r.node, &req.run_id)).collect();
                        let culprit = find_culprit(&mut tx, "nodes", &ncols, &rows).await;
                        // (rolled back below)
                        let n = culprit.and_then(|k| built.get(k)).map(|(n, _)| n);
                        let what = match n {
                            Some(n) => format!("{} (nova_bm node {})", n.uuid.as_deref().unwrap_or("-"), n.nova_bm_id),
                            None => format!(
                                "{} (batch of {})",
                                batch.first().and_then(|n| n.uuid.clone()).unwrap_or_default(),
                                batch.len()
                            ),
                        };
                        return Err(LoadError::Node { uuid: what, message: e.to_string() });
                    }
                };
                let ids: HashMap<String, i64> = match returned {
                    Some(r) => r.into_iter().collect(),
                    None => {
                        let uuids: Vec<String> = batch.iter().filter_map(|n| n.uuid.clone()).collect();
                        let mut ids = HashMap::with_capacity(uuids.len());
                        for chunk in uuids.chunks(BIND_LIMIT) {
                            let sql = format!("SELECT id, uuid FROM nodes WHERE uuid IN {}", marks(chunk.len()));
                            ids.extend(
                                tx.fetch_map(&sql, texts(chunk), |r| Ok((r.string("uuid")?, r.i64("id")?))).await?,
                            );
                        }
                        ids
                    }
                };
                let ports: Vec<(&NodePlan, &IronicPort)> =
                    built.iter().flat_map(|(n, r)| r.ports.iter().map(move |p| (*n, p))).collect();
                let mut port_rows: Vec<Vec<Val>> = ports
                    .iter()
                    .map(|(_, p)| {
                        port_values(req.schema, &pcols, p, ids.get(&p.node_uuid).copied().unwrap_or_default())
                    })
                    .collect();
                let mut first = 0usize;
                while !port_rows.is_empty() {
                    let take = rows_within(&port_rows, pcols.len(), budget);
                    let rest = port_rows.split_off(take);
                    let chunk = std::mem::replace(&mut port_rows, rest);
                    let (sql, vals) = multi_insert("ports", &pcols, chunk);
                    tx.execute(SAVEPOINT, vec![]).await?;
                    if let Err(e) = tx.execute(&sql, vals).await {
                        if !matches!(e, DbError::Other { .. }) {
                            return Err(e.into());
                        }
                        let chunk: Vec<Vec<Val>> = ports[first..first + take]
                            .iter()
                            .map(|(_, p)| {
                                port_values(req.schema, &pcols, p, ids.get(&p.node_uuid).copied().unwrap_or_default())
                            })
                            .collect();
                        let culprit = find_culprit(&mut tx, "ports", &pcols, &chunk).await;
                        // (rolled back below)
                        let what = match culprit.and_then(|c| ports.get(first + c)) {
                            Some((n, p)) => format!(
                                "{} (nova_bm node {}), port {} (nova_bm interface {})",
                                n.uuid.as_deref().unwrap_or("-"),
                                n.nova_bm_id,
                                p.address,
                                p.nova_bm_interface_id
                            ),
                            None => "(ports)".into(),
                        };
                        return Err(LoadError::Node { uuid: what, message: e.to_string() });
                    }
                    first += take;
                }
                for (n, r) in &built {
                    if let Some(rec) = record.as_mut() {
                        // the run record, a statement at a time as it fills (see `RecordRows`)
                        if let Some((sql, vals)) = rec.push(&written(&r.node, &r.ports, n.nova_bm_id, n.replaces)) {
                            tx.execute(&sql, vals).await?;
                        }
                    }
                    summary.ports += r.ports.len();
                    let _ = events.send(LoadEvent::Node {
                        nova_bm_id: n.nova_bm_id,
                        uuid: r.node.uuid.clone(),
                        status: NodeStatus::Written,
                    });
                }
                Ok::<(), LoadError>(())
            };
            // the client's work for the next batch (building its rows and values: a third of the load's
            // CPU) overlaps the server's for this one, instead of each waiting for the other
            let next_batch = async {
                // `join` polls this batch first: by the time this runs, the INSERT has been sent
                std::future::poll_fn(|_| if sent.load(Ordering::Relaxed) { Poll::Ready(()) } else { Poll::Pending })
                    .await;
                (following < to_write.len())
                    .then(|| node_batch(plan, &to_write[following..], req.schema, &ncols, &req.run_id, budget))
            };
            let (written_now, next_rows) = futures::future::join(this_batch, next_batch).await;
            if let Err(e) = written_now {
                // rolled back here, before the command ends: a transaction only dropped is rolled back
                // by the driver later, and a process that exits first leaves SQLite a hot journal (the
                // file changed until the next opener rolls it back; on a full disk it grew 10x)
                let _ = tx.rollback().await;
                return Err(e);
            }
            pending = next_rows;
            done += batch.len();
            tracing::debug!(run = %req.run_id, done, total = to_write.len(), "batch written");
            let _ = events.send(LoadEvent::Progress { done, total: to_write.len(), elapsed_ms: ms(started.elapsed()) });
        }
        summary.created = done;
        if record_run {
            // the run row, then one row per node in statements of bounded size: one value holding every
            // node would pass max_allowed_packet (4 MB on MySQL 5.6) from about 20,000 nodes on
            let kind = serde_json::to_value(req.schema.kind).ok().and_then(|v| v.as_str().map(String::from));
            let (sql, vals) = multi_insert(
                RUNS_TABLE,
                &["id", "started_at", "finished_at", "status", "plan_checksum", "source", "target_kind", "written"],
                vec![vec![
                    Val::Text(Some(req.run_id.clone())),
                    Val::Time(Some(started_at)),
                    Val::Time(Some(now())),
                    Val::Text(Some(if req.rehearse { RunStatus::Rehearsal } else { RunStatus::Committed }.to_string())),
                    Val::Text(Some(plan.checksum.clone())),
                    Val::Text(Some(req.source.clone())),
                    Val::Text(Some(kind.unwrap_or_default())),
                    Val::Text(Some("[]".into())),
                ]],
            );
            let mut written = tx.execute(&sql, vals).await;
            if let (Ok(_), Some((sql, vals))) = (&written, record.and_then(RecordRows::finish)) {
                written = tx.execute(&sql, vals).await;
            }
            if let Err(e) = written {
                let _ = tx.rollback().await;
                return Err(e.into());
            }
        }
        if cancel.is_cancelled() {
            tx.rollback().await?;
            return Err(LoadError::Cancelled);
        }
        summary.load_ms = ms(started.elapsed());
        if req.rehearse {
            tx.rollback().await?;
            tracing::info!(run = %req.run_id, created = done, "rehearsal complete, rolled back");
        } else {
            tx.commit().await?;
            summary.committed = true;
            tracing::info!(run = %req.run_id, created = done, ports = summary.ports, checksum = %plan.checksum, "load committed");
        }
        Ok::<(), LoadError>(())
    };
    let mut attempt = 1;
    let outcome = loop {
        match attempt_load().await {
            Err(LoadError::Db(e @ DbError::Conflict { .. }))
                if attempt < CONFLICT_ATTEMPTS && !cancel.is_cancelled() =>
            {
                tracing::warn!(run = %req.run_id, attempt, error = %e, "write conflict: the load was rolled back, trying again");
                restore_counters(db, &counters).await;
                tokio::time::sleep(std::time::Duration::from_millis(CONFLICT_BACKOFF_MS << (attempt - 1))).await;
                attempt += 1;
            }
            Err(LoadError::Db(last @ DbError::Conflict { .. })) => {
                break Err(LoadError::Conflicts { attempts: attempt, last })
            }
            other => break other,
        }
    };
    if !summary.committed {
        // a rolled-back INSERT still advances sequences / AUTO_INCREMENT: put them back
        restore_counters(db, &counters).await;
        drop_tables(db, ddl_outside, &missing_tables).await;
        db.settle_after_failure().await;
    }
    outcome?;
    summary.elapsed_ms = ms(started.elapsed());
    summary.commit_ms = summary.elapsed_ms - summary.load_ms;
    summary.finished_at = now();
    let _ = events.send(LoadEvent::Summary(summary.clone()));
    Ok(summary)
}

/// The plan's facts about the target, read again inside the load's transaction
/// ([`super::recheck::target_still_as_planned`]): a node gone meanwhile is a
/// [`LoadError::TargetChanged`].
async fn recheck(tx: &mut Tx<'_>, plan: &Plan) -> Result<(), LoadError> {
    match super::recheck::target_still_as_planned(tx, plan).await? {
        None => Ok(()),
        Some(gone) => Err(LoadError::TargetChanged { count: gone.count, first: gone.first }),
    }
}

/// Sets its flag when dropped (at the end of the future that holds it, however it ends).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Drops the run tables a load created outside its transaction (MySQL) when it did not commit.
async fn drop_tables(db: &Db, ddl_outside: bool, tables: &[&str]) {
    if ddl_outside {
        for t in tables.iter().rev() {
            if let Err(e) = db.execute(&format!("DROP TABLE IF EXISTS {t}"), vec![]).await {
                tracing::warn!(error = %e, table = t, "could not drop a run table this failed load created");
            }
        }
    }
}
const SAVEPOINT: &str = "SAVEPOINT bm2ironic_batch";

/// After a multi-row INSERT failed: rolls back to the batch's savepoint and inserts the rows one by
/// one, so the error can name the row that caused it. Returns its index in `rows`.
async fn find_culprit(tx: &mut Tx<'_>, table: &str, cols: &[&str], rows: &[Vec<Val>]) -> Option<usize> {
    tx.execute("ROLLBACK TO SAVEPOINT bm2ironic_batch", vec![]).await.ok()?;
    for (k, row) in rows.iter().enumerate() {
        let (sql, vals) = multi_insert(table, cols, vec![row.clone()]);
        if tx.execute(&sql, vals).await.is_err() {
            return Some(k);
        }
    }
    None
}
