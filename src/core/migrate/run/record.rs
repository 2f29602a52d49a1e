//! The run record: each load is recorded in the Ironic database, in `bm2ironic_runs` (one row per
//! run: times, status, plan checksum, redacted source) and `bm2ironic_run_nodes` (one row per node it
//! wrote, with its ports; no secrets), so `verify`, `rollback` and `watch` find what a run did.
//! Per-node rows keep every statement small whatever the inventory's size (see docs/performance.md).

use std::collections::HashMap;

use chrono::NaiveDateTime;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::db::sql::{multi_insert, Stmt, Val};
use crate::core::db::{Cast, Db, DbError, Dialect, Tx};
use crate::core::ironic::json::ascii_json;
use crate::core::migrate::plan::{IronicNode, IronicPort};
use crate::core::migrate::run::id::RunId;
use crate::core::migrate::run::status::RunStatus;

pub const RUNS_TABLE: &str = "bm2ironic_runs";
pub const RUN_NODES_TABLE: &str = "bm2ironic_run_nodes";
/// Bytes of record text per INSERT: far below any server's packet limit (MySQL 5.6: 4 MB) and a
/// Galera write-set.
const RECORD_BYTES_PER_STATEMENT: usize = 512 * 1024;
/// Rows per INSERT at most.
const RECORD_ROWS_PER_STATEMENT: usize = 500;

/// What a run wrote, kept in `bm2ironic_runs.written` (no secrets).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WrittenNode {
    pub nova_bm_id: i64,
    pub uuid: String,
    pub provision_state: Option<String>,
    pub instance_uuid: Option<String>,
    pub maintenance: bool,
    pub driver: String,
    /// driver_info with passwords as "***"
    pub driver_info: Value,
    pub properties: Value,
    pub instance_info: Value,
    pub ports: Vec<WrittenPort>,
    /// uuid of an Ironic node this run deleted (`replace`); rollback cannot bring it back
    #[serde(default)]
    pub replaced: Option<i64>,
    /// `--via api`: where the node stands in Ironic and the last error
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiProgress>,
    /// `ramdisk` for an instance whose next boot was learned (modern; docs/mapping.md 2.12)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deploy_interface: Option<String>,
}

/// A node's progress through Ironic's API (`--via api`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ApiProgress {
    /// pending (not touched yet), then the provision state reached, or "failed"
    pub state: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WrittenPort {
    pub uuid: String,
    pub address: String,
    pub nova_bm_interface_id: i64,
    pub vif: Option<String>,
}

/// A row of `bm2ironic_runs` (or an API run's file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: RunId,
    pub started_at: NaiveDateTime,
    pub finished_at: Option<NaiveDateTime>,
    pub status: RunStatus,
    pub plan_checksum: String,
    pub source: String,
    pub target_kind: String,
    /// what the run wrote, node by node (read from its per-node rows or lines)
    #[serde(default)]
    pub written: Vec<WrittenNode>,
    /// rows of the record that could not be read (never dropped in silence)
    #[serde(skip)]
    pub unreadable: Vec<Unreadable>,
}

pub(crate) fn written(node: &IronicNode, ports: &[IronicPort], nova_bm_id: i64, replaced: Option<i64>) -> WrittenNode {
    WrittenNode {
        nova_bm_id,
        uuid: node.uuid.clone(),
        provision_state: node.provision_state.clone(),
        instance_uuid: node.instance_uuid.clone(),
        maintenance: node.maintenance,
        driver: node.driver.clone(),
        driver_info: node.driver_info.redacted_json(),
        properties: node.properties.clone(),
        instance_info: node.instance_info.clone(),
        ports: ports
            .iter()
            .map(|p| WrittenPort {
                uuid: p.uuid.clone(),
                address: p.address.clone(),
                nova_bm_interface_id: p.nova_bm_interface_id,
                vif: p.vif.clone(),
            })
            .collect(),
        replaced,
        api: None,
        deploy_interface: node.deploy_interface.clone(),
    }
}

/// Both tables (`CREATE TABLE IF NOT EXISTS`: an older run table is kept, the node table added).
pub fn runs_ddl(d: Dialect) -> Vec<Stmt> {
    // to the microsecond: runs are ordered by their start ("the newest run" is rollback's default)
    let (ts, text) = (d.precise_timestamp_type(), d.long_text_type());
    vec![
        (
            format!(
                "CREATE TABLE IF NOT EXISTS {RUNS_TABLE} (id VARCHAR(36) NOT NULL PRIMARY KEY, started_at {ts} NOT NULL, \
                 finished_at {ts} NULL, status VARCHAR(20) NOT NULL, plan_checksum VARCHAR(64) NOT NULL, \
                 source VARCHAR(512) NOT NULL, target_kind VARCHAR(10) NOT NULL, written {text} NOT NULL)"
            ),
            vec![],
        ),
        (
            format!(
                "CREATE TABLE IF NOT EXISTS {RUN_NODES_TABLE} (run_id VARCHAR(36) NOT NULL, seq INTEGER NOT NULL, \
                 nova_bm_id BIGINT NOT NULL, uuid VARCHAR(36) NOT NULL, record {text} NOT NULL, PRIMARY KEY (run_id, seq))"
            ),
            vec![],
        ),
    ]
}

/// Whether `bm2ironic_runs` exists.
pub async fn runs_table_exists(db: &Db) -> Result<bool, DbError> {
    Ok(db.table_names().await?.iter().any(|t| t.eq_ignore_ascii_case(RUNS_TABLE)))
}

/// The per-node rows of a run, built as the load goes: `push` gives a full INSERT when one is due
/// (at most `max_bytes` of record text, or `RECORD_ROWS_PER_STATEMENT` rows), `finish` the rest; so
/// a load holds one statement's worth of record, not one per node it wrote.
pub struct RecordRows {
    run_id: String,
    max_bytes: usize,
    seq: i64,
    rows: Vec<Vec<Val>>,
    bytes: usize,
}

const RECORD_COLUMNS: [&str; 5] = ["run_id", "seq", "nova_bm_id", "uuid", "record"];

impl RecordRows {
    pub fn new(run_id: &str, max_bytes: usize) -> RecordRows {
        RecordRows {
            run_id: run_id.to_string(),
            max_bytes: max_bytes.min(RECORD_BYTES_PER_STATEMENT),
            seq: 0,
            rows: Vec::new(),
            bytes: 0,
        }
    }

    pub fn push(&mut self, w: &WrittenNode) -> Option<Stmt> {
        // straight to text (fields in the struct's order: read back by name)
        let text = serde_json::to_string(w).map(ascii_json).unwrap_or_else(|_| "{}".into());
        let full = !self.rows.is_empty()
            && (self.rows.len() >= RECORD_ROWS_PER_STATEMENT || self.bytes + text.len() > self.max_bytes);
        let out = if full { self.take() } else { None };
        self.bytes += text.len() + 100;
        self.rows.push(vec![
            Val::Text(Some(self.run_id.clone())),
            Val::Int(Some(self.seq)),
            Val::Int(Some(w.nova_bm_id)),
            Val::Text(Some(w.uuid.clone())),
            Val::Text(Some(text)),
        ]);
        self.seq += 1;
        out
    }

    pub fn finish(mut self) -> Option<Stmt> {
        self.take()
    }

    fn take(&mut self) -> Option<Stmt> {
        if self.rows.is_empty() {
            return None;
        }
        self.bytes = 0;
        Some(multi_insert(RUN_NODES_TABLE, &RECORD_COLUMNS, std::mem::take(&mut self.rows)))
    }
}

/// A row of a run's record that could not be read: named, never dropped in silence. `verify` lists
/// it as a difference; `rollback` refuses the run until the row is fixed or `--force` is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// where: `bm2ironic_run_nodes seq 3`, `<file> line 12`, `bm2ironic_runs.written`
    pub row: String,
    pub reason: String,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.row, self.reason)
    }
}

impl RunRecord {
    /// A new run's record (nothing written yet).
    pub fn begin(status: RunStatus, plan_checksum: &str, source: &str, target_kind: &str) -> RunRecord {
        RunRecord {
            id: RunId::new(),
            started_at: crate::core::migrate::events::now(),
            finished_at: None,
            status,
            plan_checksum: plan_checksum.to_string(),
            source: source.to_string(),
            target_kind: target_kind.to_string(),
            written: Vec::new(),
            unreadable: Vec::new(),
        }
    }

    /// Adds the nodes read from per-node rows or lines (`seq`, text) to what the head held: a
    /// node recorded twice keeps its last record (an API run upserts its nodes' progress); a row
    /// that does not parse is named in `unreadable`.
    pub fn add_node_records(&mut self, rows: impl IntoIterator<Item = (String, String)>) {
        let mut at: HashMap<String, usize> =
            self.written.iter().enumerate().map(|(i, w)| (w.uuid.clone(), i)).collect();
        for (row, text) in rows {
            match serde_json::from_str::<WrittenNode>(&text) {
                Ok(w) => match at.get(&w.uuid) {
                    Some(&i) => self.written[i] = w,
                    None => {
                        at.insert(w.uuid.clone(), self.written.len());
                        self.written.push(w);
                    }
                },
                Err(e) => self.unreadable.push(Unreadable { row, reason: e.to_string() }),
            }
        }
    }
}

/// The run heads, newest first.
fn heads_sql(d: Dialect, one: bool) -> String {
    let text = |c| d.column(c, Cast::Text);
    format!(
        "SELECT {}, started_at, finished_at, {}, {}, {}, {}, written FROM {RUNS_TABLE}{} ORDER BY started_at DESC, id",
        text("id"),
        text("status"),
        text("plan_checksum"),
        text("source"),
        text("target_kind"),
        if one { " WHERE id = ?" } else { "" },
    )
}

/// Every run's head (its own row: times, status, checksum; a run recorded before per-node rows
/// keeps its nodes there too), newest first; `[]` without the run table. The per-node rows are
/// read only for the run chosen ([`read_nodes`]).
pub async fn heads(tx: &mut Tx<'_>) -> Result<Vec<RunRecord>, DbError> {
    read_heads(tx, None).await
}

async fn read_heads(tx: &mut Tx<'_>, id: Option<&str>) -> Result<Vec<RunRecord>, DbError> {
    let names = tx.table_names().await?;
    if !names.iter().any(|n| n.eq_ignore_ascii_case(RUNS_TABLE)) {
        return Ok(Vec::new());
    }
    let sql = heads_sql(tx.dialect(), id.is_some());
    let vals = id.map(|i| vec![Val::from(i)]).unwrap_or_default();
    tx.fetch_map(&sql, vals, |r| {
        let id = r.string("id")?;
        let mut run = RunRecord {
            id: RunId::parse(&id).unwrap_or_default(),
            started_at: r.time("started_at")?,
            finished_at: r.opt_time("finished_at")?,
            status: r.string("status")?.into(),
            plan_checksum: r.string("plan_checksum")?,
            source: r.string("source")?,
            target_kind: r.string("target_kind")?,
            written: Vec::new(),
            unreadable: Vec::new(),
        };
        if run.id.is_empty() {
            run.unreadable.push(Unreadable { row: format!("{RUNS_TABLE}.id {id:?}"), reason: "not a run id".into() });
        }
        // before per-node rows, a run kept its nodes in its own row
        let legacy = r.string("written")?;
        if !matches!(legacy.trim(), "" | "[]") {
            match serde_json::from_str::<Vec<WrittenNode>>(&legacy) {
                Ok(w) => run.written = w,
                Err(e) => run
                    .unreadable
                    .push(Unreadable { row: format!("{RUNS_TABLE}.written of run {id}"), reason: e.to_string() }),
            }
        }
        Ok(run)
    })
    .await
}

/// Adds run `run`'s per-node rows (only its own, by the primary key's prefix) to its record.
pub async fn read_nodes(tx: &mut Tx<'_>, run: &mut RunRecord) -> Result<(), DbError> {
    let names = tx.table_names().await?;
    if !names.iter().any(|n| n.eq_ignore_ascii_case(RUN_NODES_TABLE)) {
        return Ok(());
    }
    let seq = tx.dialect().column("seq", Cast::Int);
    let sql = format!("SELECT {seq}, record FROM {RUN_NODES_TABLE} WHERE run_id = ? ORDER BY seq");
    let rows: Vec<(String, String)> = tx
        .fetch_map(&sql, vec![Val::from(run.id.as_str())], |r| {
            Ok((format!("{RUN_NODES_TABLE} seq {}", r.get::<i64, _>("seq")?), r.string("record")?))
        })
        .await?;
    run.add_node_records(rows);
    Ok(())
}

/// How many per-node rows each run has (`rollback --list`), without reading them.
pub async fn node_counts(tx: &mut Tx<'_>) -> Result<HashMap<String, usize>, DbError> {
    let names = tx.table_names().await?;
    if !names.iter().any(|n| n.eq_ignore_ascii_case(RUN_NODES_TABLE)) {
        return Ok(HashMap::new());
    }
    let d = tx.dialect();
    let sql = format!(
        "SELECT {}, {} AS n FROM {RUN_NODES_TABLE} GROUP BY run_id",
        d.column("run_id", Cast::Text),
        d.cast(Cast::Int, "COUNT(*)")
    );
    let rows = tx.fetch_map(&sql, vec![], |r| Ok((r.string("run_id")?, r.get::<i64, _>("n")?))).await?;
    Ok(rows.into_iter().map(|(k, n)| (k, n.max(0) as usize)).collect())
}

/// One run, whole: its head and its own node rows, in one snapshot. None: no such run.
pub async fn read_run(tx: &mut Tx<'_>, id: &str) -> Result<Option<RunRecord>, DbError> {
    let Some(mut run) = read_heads(tx, Some(id)).await?.into_iter().next() else { return Ok(None) };
    read_nodes(tx, &mut run).await?;
    Ok(Some(run))
}

/// The statements that record one node's progress (an API run): its row replaced in place.
pub fn put_node_stmts(run_id: &str, seq: i64, w: &WrittenNode) -> (Stmt, Stmt) {
    let text = serde_json::to_string(w).map(ascii_json).unwrap_or_else(|_| "{}".into());
    let update = (
        format!("UPDATE {RUN_NODES_TABLE} SET record = ?, uuid = ?, nova_bm_id = ? WHERE run_id = ? AND seq = ?"),
        vec![
            Val::Text(Some(text.clone())),
            Val::from(w.uuid.as_str()),
            Val::from(w.nova_bm_id),
            Val::from(run_id),
            Val::from(seq),
        ],
    );
    let insert = multi_insert(
        RUN_NODES_TABLE,
        &RECORD_COLUMNS,
        vec![vec![
            Val::from(run_id),
            Val::from(seq),
            Val::from(w.nova_bm_id),
            Val::from(w.uuid.as_str()),
            Val::Text(Some(text)),
        ]],
    );
    (update, insert)
}

/// Reads one run's status (a statement to run inside a transaction).
pub fn status_stmt(run_id: &str) -> Stmt {
    (format!("SELECT status FROM {RUNS_TABLE} WHERE id = ?"), vec![Val::Text(Some(run_id.into()))])
}

/// Sets a run's status (e.g. rolled back) inside an open transaction's statements list.
pub fn set_status_stmt(run_id: &str, status: &RunStatus) -> Stmt {
    (
        format!("UPDATE {RUNS_TABLE} SET status = ? WHERE id = ?"),
        vec![Val::Text(Some(status.to_string())), Val::Text(Some(run_id.into()))],
    )
}
