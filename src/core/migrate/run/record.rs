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
    pub id: String,
    pub started_at: NaiveDateTime,
    pub finished_at: Option<NaiveDateTime>,
    pub status: RunStatus,
    pub plan_checksum: String,
    pub source: String,
    pub target_kind: String,
    pub written: Vec<WrittenNode>,
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
    let (ts, text) = (d.timestamp_type(), d.long_text_type());
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

/// The run records, newest first.
fn runs_sql(d: Dialect) -> String {
    let text = |c| d.column(c, Cast::Text);
    format!(
        "SELECT {}, started_at, finished_at, {}, {}, {}, {}, written FROM {RUNS_TABLE} ORDER BY started_at DESC, id",
        text("id"),
        text("status"),
        text("plan_checksum"),
        text("source"),
        text("target_kind"),
    )
}

/// Reads run records, newest first, with what each wrote (per-node rows; a run recorded before them
/// keeps its nodes in `bm2ironic_runs.written`).
pub async fn runs(db: &Db) -> Result<Vec<RunRecord>, DbError> {
    // one snapshot: the runs and their nodes as of one moment
    let mut tx = db.begin().await?;
    let runs = read_runs(&mut tx, true).await;
    let _ = tx.rollback().await;
    runs
}

/// The runs without the per-node records of SQL runs (`written` holds only what the run's own row
/// keeps: an API run's nodes): enough to pick a run by id, status or kind, without reading and
/// parsing a record per node written (a second at 20,000 nodes).
pub async fn run_heads(db: &Db) -> Result<Vec<RunRecord>, DbError> {
    let mut tx = db.begin().await?;
    let runs = read_runs(&mut tx, false).await;
    let _ = tx.rollback().await;
    runs
}

/// [`runs`] inside an open transaction (rollback reads them holding the write lock it deletes with).
pub async fn runs_in(tx: &mut Tx<'_>) -> Result<Vec<RunRecord>, DbError> {
    read_runs(tx, true).await
}

async fn read_runs(tx: &mut Tx<'_>, with_nodes: bool) -> Result<Vec<RunRecord>, DbError> {
    let db = tx;
    let names = db.table_names().await?;
    let has = |t: &str| names.iter().any(|n| n.eq_ignore_ascii_case(t));
    if !has(RUNS_TABLE) {
        return Ok(Vec::new());
    }
    let d = db.dialect();
    let sql = runs_sql(d);
    let mut runs = db
        .fetch_map(&sql, vec![], |r| {
            Ok(RunRecord {
                id: r.string("id")?,
                started_at: r.time("started_at")?,
                finished_at: r.opt_time("finished_at")?,
                status: r.string("status")?.into(),
                plan_checksum: r.string("plan_checksum")?,
                source: r.string("source")?,
                target_kind: r.string("target_kind")?,
                written: serde_json::from_str(&r.string("written")?).unwrap_or_default(),
            })
        })
        .await?;
    if with_nodes && has(RUN_NODES_TABLE) {
        let sql =
            format!("SELECT {}, record FROM {RUN_NODES_TABLE} ORDER BY run_id, seq", d.column("run_id", Cast::Text));
        let rows: Vec<(String, String)> =
            db.fetch_map(&sql, vec![], |r| Ok((r.string("run_id")?, r.string("record")?))).await?;
        let mut by_run: HashMap<String, Vec<WrittenNode>> = HashMap::new();
        for (run, text) in rows {
            if let Ok(w) = serde_json::from_str::<WrittenNode>(&text) {
                by_run.entry(run).or_default().push(w);
            }
        }
        for r in &mut runs {
            if let Some(nodes) = by_run.remove(&r.id) {
                r.written.extend(nodes);
            }
        }
    }
    Ok(runs)
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
