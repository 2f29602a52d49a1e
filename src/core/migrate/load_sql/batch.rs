//! One batch of a SQL load, inside its transaction: the nodes it replaces deleted, its nodes in one
//! INSERT, the ids the database gave them, their ports, and its share of the run record; the next
//! batch's rows are built meanwhile.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use crate::core::db::sql::{marks, multi_insert, texts, Val};
use crate::core::db::Tx;
use crate::core::migrate::events::{LoadEvent, LoadSummary, NodeStatus};
use crate::core::migrate::plan::{IronicPort, NodePlan, Rows};
use crate::core::migrate::run::record::{written, RecordRows};

use super::culprit::{failed_insert, SAVEPOINT};
use super::error::LoadError;
use super::request::Load;
use super::rows::{node_batch, node_values, port_values, rows_within, NodeBatch, BIND_LIMIT};

/// The batch of nodes that starts at `from` in the load's order.
pub(super) fn batch_from<'a>(load: &Load<'a>, from: usize) -> NodeBatch<'a> {
    node_batch(load.req.plan, &load.to_write[from..], load.req.schema, &load.ncols, &load.req.run_id, load.budget)
}

/// Writes `rows`, the batch that starts at `from`, and returns the next batch (None after the last).
/// The client's work for the next batch (building its rows and values: a third of the load's CPU)
/// overlaps the server's for this one, instead of each waiting for the other. An error leaves the
/// transaction for the caller to roll back.
pub(super) async fn write_and_build_next<'a>(
    load: &Load<'a>,
    tx: &mut Tx<'_>,
    record: &mut Option<RecordRows>,
    summary: &mut LoadSummary,
    from: usize,
    rows: NodeBatch<'a>,
) -> Result<Option<NodeBatch<'a>>, LoadError> {
    let NodeBatch { count, built, rows } = rows;
    let following = from + count;
    // set once this batch's INSERT of nodes is on its way (or the batch ended): the next batch
    // is built while the server works on it
    let sent = AtomicBool::new(false);
    let this_batch = async {
        let _ended = SetOnDrop(&sent);
        let batch = &load.to_write[from..following];
        delete_replaced(load, tx, batch).await?;
        let ids = insert_nodes(load, tx, batch, &built, rows, &sent).await?;
        insert_ports(load, tx, &built, &ids).await?;
        record_and_report(load, tx, record, summary, &built).await
    };
    let next_batch = async {
        // `join` polls this batch first: by the time this runs, the INSERT has been sent
        std::future::poll_fn(|_| if sent.load(Ordering::Relaxed) { Poll::Ready(()) } else { Poll::Pending }).await;
        (following < load.to_write.len()).then(|| batch_from(load, following))
    };
    let (written_now, next_rows) = futures::future::join(this_batch, next_batch).await;
    written_now.map(|()| next_rows)
}

/// Sets its flag when dropped (at the end of the future that holds it, however it ends).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `replace`: the other node and its ports go first (the recheck locked it when the transaction opened).
async fn delete_replaced(load: &Load<'_>, tx: &mut Tx<'_>, batch: &[&NodePlan]) -> Result<(), LoadError> {
    for n in batch.iter().filter(|n| n.replaces.is_some()) {
        let id = n.replaces.unwrap_or_default();
        for t in ["ports", "nodes"] {
            let col = if t == "ports" { "node_id" } else { "id" };
            tx.execute(&format!("DELETE FROM {t} WHERE {col} = ?"), vec![Val::from(id)]).await?;
        }
        tracing::warn!(run = %load.req.run_id, replaced_id = id, uuid = ?n.uuid, "replaced an Ironic node (operator's decision)");
    }
    Ok(())
}

/// Inserts the batch's nodes (`rows`, built from `built`) in one statement and returns the ids the
/// database assigned them, by uuid. Sets `sent` just before the INSERT goes out.
async fn insert_nodes(
    load: &Load<'_>,
    tx: &mut Tx<'_>,
    batch: &[&NodePlan],
    built: &[(&NodePlan, Rows)],
    rows: Vec<Vec<Val>>,
    sent: &AtomicBool,
) -> Result<HashMap<String, i64>, LoadError> {
    let (mut sql, vals) = multi_insert("nodes", &load.ncols, rows);
    tx.execute(SAVEPOINT, vec![]).await?;
    // the INSERT below goes out when it is first polled
    sent.store(true, Ordering::Relaxed);
    // the ids the database assigned: returned by the INSERT where it can (PostgreSQL, SQLite,
    // MariaDB 10.5+), else looked up by uuid below (MySQL has no RETURNING). On PostgreSQL the
    // lookup went to a sequential scan as the uncommitted table grew: quadratic at 100k
    let inserted = if load.returning {
        sql.push_str(" RETURNING id, uuid");
        tx.fetch_map(&sql, vals, |r| Ok((r.string("uuid")?, r.i64("id")?))).await.map(Some)
    } else {
        tx.execute(&sql, vals).await.map(|_| None)
    };
    let returned = match inserted {
        Ok(r) => r,
        Err(e) => {
            let rows = || {
                built
                    .iter()
                    .map(|(_, r)| node_values(load.req.schema, &load.ncols, &r.node, &load.req.run_id))
                    .collect()
            };
            let describe = |culprit: Option<usize>| match culprit.and_then(|k| built.get(k)) {
                Some((n, _)) => node_named(n),
                None => format!(
                    "{} (batch of {})",
                    batch.first().and_then(|n| n.uuid.clone()).unwrap_or_default(),
                    batch.len()
                ),
            };
            return Err(failed_insert(tx, e, "nodes", &load.ncols, rows, describe).await);
        }
    };
    match returned {
        Some(r) => Ok(r.into_iter().collect()),
        None => {
            let uuids: Vec<String> = batch.iter().filter_map(|n| n.uuid.clone()).collect();
            let mut ids = HashMap::with_capacity(uuids.len());
            for chunk in uuids.chunks(BIND_LIMIT) {
                let sql = format!("SELECT id, uuid FROM nodes WHERE uuid IN {}", marks(chunk.len()));
                ids.extend(tx.fetch_map(&sql, texts(chunk), |r| Ok((r.string("uuid")?, r.i64("id")?))).await?);
            }
            Ok(ids)
        }
    }
}

/// Inserts the batch's ports, each with its node's id from `ids`, in statements within the budget.
async fn insert_ports(
    load: &Load<'_>,
    tx: &mut Tx<'_>,
    built: &[(&NodePlan, Rows)],
    ids: &HashMap<String, i64>,
) -> Result<(), LoadError> {
    let ports: Vec<(&NodePlan, &IronicPort)> =
        built.iter().flat_map(|(n, r)| r.ports.iter().map(move |p| (*n, p))).collect();
    let row = |p: &IronicPort| {
        port_values(load.req.schema, &load.pcols, p, ids.get(&p.node_uuid).copied().unwrap_or_default())
    };
    let mut port_rows: Vec<Vec<Val>> = ports.iter().map(|(_, p)| row(p)).collect();
    let mut first = 0usize;
    while !port_rows.is_empty() {
        let take = rows_within(&port_rows, load.pcols.len(), load.budget);
        let rest = port_rows.split_off(take);
        let chunk = std::mem::replace(&mut port_rows, rest);
        let (sql, vals) = multi_insert("ports", &load.pcols, chunk);
        tx.execute(SAVEPOINT, vec![]).await?;
        if let Err(e) = tx.execute(&sql, vals).await {
            let chunk = &ports[first..first + take];
            let describe = |culprit: Option<usize>| match culprit.and_then(|c| chunk.get(c)) {
                Some((n, p)) => {
                    format!("{}, port {} (nova_bm interface {})", node_named(n), p.address, p.nova_bm_interface_id)
                }
                None => "(ports)".into(),
            };
            let rows = || chunk.iter().map(|(_, p)| row(p)).collect();
            return Err(failed_insert(tx, e, "ports", &load.pcols, rows, describe).await);
        }
        first += take;
    }
    Ok(())
}

/// A node as an error names it: its Ironic uuid and where it came from.
fn node_named(n: &NodePlan) -> String {
    format!("{} (nova_bm node {})", n.uuid.as_deref().unwrap_or("-"), n.nova_bm_id)
}

/// The batch's nodes in the run record (a statement at a time as it fills, see `RecordRows`), its
/// ports in the summary, and a `written` event per node.
async fn record_and_report(
    load: &Load<'_>,
    tx: &mut Tx<'_>,
    record: &mut Option<RecordRows>,
    summary: &mut LoadSummary,
    built: &[(&NodePlan, Rows)],
) -> Result<(), LoadError> {
    for (n, r) in built {
        if let Some(rec) = record.as_mut() {
            if let Some((sql, vals)) = rec.push(&written(&r.node, &r.ports, n.nova_bm_id, n.replaces)) {
                tx.execute(&sql, vals).await?;
            }
        }
        summary.ports += r.ports.len();
        let _ = load.events.send(LoadEvent::Node {
            nova_bm_id: n.nova_bm_id,
            uuid: r.node.uuid.clone(),
            status: NodeStatus::Written,
        });
    }
    Ok(())
}
