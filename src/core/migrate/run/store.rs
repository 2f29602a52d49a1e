//! Where runs are kept and the one place they are looked up. Every run of either kind is a row of
//! the Ironic database's `bm2ironic_runs` when that database is given; an API run made without it
//! is a run file (JSON, mode 0600) in the state directory. `find` (the run a command means),
//! `resumable` (the API run a rerun continues) and `list` serve `verify`, `rollback`, `watch`, the
//! takeover check and the API load; `select` is the same choice over runs already read (a
//! rollback reads them inside its transaction).

use std::path::PathBuf;

use super::dir;
pub use super::error::RecordError;
use super::record::{self as run_record, RunRecord, WrittenNode, RUNS_TABLE, RUN_NODES_TABLE};
use super::status::{RunKind, RunStatus};
use crate::core::db::sql::{Stmt, Val};
use crate::core::db::{Db, DbError};

pub fn is_api(run: &RunRecord) -> bool {
    run.status.kind() == RunKind::Api
}

/// The run a command means was not found.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("no committed bm2ironic run in this Ironic database")]
    NoRun,
    #[error("no run {0} in this Ironic database (see `bm2ironic rollback --list`)")]
    Unknown(String),
    /// no Ironic database given, and no API run kept in the state directory either (a usage error)
    #[error("no Ironic database given: use --ironic-db URL, BM2IRONIC_IRONIC_DB, or --ironic-conf with [database] connection (no API run{} in {dir} either: for a run made with --via api give --state-dir)", run.as_ref().map(|r| format!(" {r}")).unwrap_or_default())]
    NotKeptHere { run: Option<String>, dir: String },
}

impl crate::core::kind::HasKind for FindError {
    /// Runs looked for where none are kept, or a run id that is not there, are the operator's to
    /// fix (the command names the wrong place or the wrong run); none committed yet, or the
    /// record unreadable, are not.
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            FindError::NotKeptHere { .. } | FindError::Unknown(_) => Kind::Usage,
            FindError::NoRun | FindError::Record(_) => Kind::Runtime,
        }
    }
}

/// The run `id` (of either kind), or (None) the newest run that `newest` accepts; `runs` newest
/// first.
pub fn select(
    runs: Vec<RunRecord>,
    id: Option<&str>,
    newest: impl Fn(&RunRecord) -> bool,
) -> Result<RunRecord, FindError> {
    match id {
        Some(id) => runs.into_iter().find(|r| r.id.as_str() == id).ok_or_else(|| FindError::Unknown(id.into())),
        None => runs.into_iter().find(newest).ok_or(FindError::NoRun),
    }
}

/// The ids of the runs recorded as finished (a committed SQL load, an API run whose every node
/// settled): a node another run's marker names is not taken as migrated.
pub fn finished_ids(heads: &[RunRecord]) -> std::collections::HashSet<String> {
    heads
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Committed | RunStatus::ApiCommitted))
        .map(|r| r.id.to_string())
        .collect()
}

/// What a command acts on when no run is named: the newest committed SQL run or API run (an API
/// run of any status: a partial one is verified, resumed or rolled back too).
pub fn acted_on(run: &RunRecord) -> bool {
    run.status.is_committed_sql() || is_api(run)
}

/// `run` whole, or the error naming its unreadable rows (`force`: they are skipped, and returned
/// to be said).
pub fn complete(run: &RunRecord, force: bool) -> Result<Vec<run_record::Unreadable>, RecordError> {
    match run.unreadable.first() {
        Some(first) if !force => Err(RecordError::Unreadable {
            run: run.id.to_string(),
            count: run.unreadable.len(),
            first: first.to_string(),
        }),
        _ => Ok(run.unreadable.clone()),
    }
}

/// Where runs are kept: the Ironic database's run tables, or (API runs made without it) the
/// state directory (`dir.rs`).
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per command
pub enum RunStore {
    Db(Db),
    /// a directory of `<run id>.json` heads and `<run id>.nodes.jsonl` journals
    Dir(PathBuf),
}

impl std::fmt::Debug for RunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunStore::Db(db) => write!(f, "{} in {}", RUNS_TABLE, db.url.redacted()),
            RunStore::Dir(d) => write!(f, "run files in {}", d.display()),
        }
    }
}

impl RunStore {
    /// Closes the Ironic database's connections, when the runs are kept there.
    pub async fn close(self) {
        if let RunStore::Db(db) = self {
            db.close().await;
        }
    }

    /// Every run's head, newest first, with how many nodes its record holds (`rollback --list`);
    /// the node records themselves are not read.
    pub async fn list(&self) -> Result<Vec<(RunRecord, usize)>, RecordError> {
        match self {
            RunStore::Db(db) => {
                let mut tx = db.begin().await?;
                let read = async {
                    let heads = run_record::heads(&mut tx).await?;
                    let counts = run_record::node_counts(&mut tx).await?;
                    Ok::<_, DbError>((heads, counts))
                }
                .await;
                let _ = tx.rollback().await;
                let (heads, counts) = read?;
                Ok(heads
                    .into_iter()
                    .map(|h| {
                        let n = h.written.len() + counts.get(h.id.as_str()).copied().unwrap_or(0);
                        (h, n)
                    })
                    .collect())
            }
            RunStore::Dir(d) => {
                let mut out = Vec::new();
                for mut h in dir::heads(d)? {
                    dir::read_nodes(d, &mut h)?;
                    let n = h.written.len() + h.unreadable.len();
                    h.written.clear();
                    out.push((h, n));
                }
                Ok(out)
            }
        }
    }

    /// Every run's head (its nodes not read), newest first.
    pub async fn heads(&self) -> Result<Vec<RunRecord>, RecordError> {
        match self {
            RunStore::Db(db) => {
                let mut tx = db.begin().await?;
                let heads = run_record::heads(&mut tx).await;
                let _ = tx.rollback().await;
                Ok(heads?)
            }
            RunStore::Dir(d) => dir::heads(d),
        }
    }

    /// The whole record of a run whose head was read: its own node rows or journal added.
    async fn load(&self, mut head: RunRecord) -> Result<RunRecord, RecordError> {
        match self {
            RunStore::Db(db) => {
                let mut tx = db.begin().await?;
                let run = run_record::read_run(&mut tx, &head.id).await;
                let _ = tx.rollback().await;
                // gone between the two reads (a rollback of a rehearsal cannot be): the head as read
                Ok(run?.unwrap_or(head))
            }
            RunStore::Dir(d) => {
                dir::read_nodes(d, &mut head)?;
                Ok(head)
            }
        }
    }

    /// The run `id` of either kind, or (None) the newest one a command acts on ([`acted_on`]), with
    /// its own nodes only. Without the Ironic database only API runs are kept (in the state
    /// directory): a run that is not there is named with where to look instead.
    pub async fn find(&self, id: Option<&str>) -> Result<RunRecord, FindError> {
        let head = match self {
            RunStore::Db(_) => select(self.heads().await?, id, acted_on)?,
            RunStore::Dir(d) => select(self.heads().await?, id, acted_on).map_err(|e| match e {
                FindError::NoRun | FindError::Unknown(_) => {
                    FindError::NotKeptHere { run: id.map(str::to_string), dir: d.display().to_string() }
                }
                e => e,
            })?,
        };
        Ok(self.load(head).await?)
    }

    /// The newest API run still to finish (a rerun resumes it), whole.
    pub async fn resumable(&self) -> Result<Option<RunRecord>, RecordError> {
        match self.heads().await?.into_iter().find(is_api).filter(|r| r.status.is_resumable()) {
            Some(h) => Ok(Some(self.load(h).await?)),
            None => Ok(None),
        }
    }

    /// Records an API run as it starts (or resumes): its head, and every node it sets out to write
    /// (so a killed run is found again), each node's row numbered by its place in `run.written`.
    pub async fn begin(&self, run: &RunRecord) -> Result<(), RecordError> {
        match self {
            RunStore::Dir(d) => {
                dir::save_head(d, run)?;
                dir::append_nodes(d, &run.id, &run.written)?;
                Ok(())
            }
            RunStore::Db(db) => {
                if !run_record::runs_table_exists(db).await? {
                    db.execute_all(run_record::runs_ddl(db.dialect())).await?;
                }
                let mut stmts = vec![head_delete(run)];
                stmts.push((
                    format!("DELETE FROM {RUN_NODES_TABLE} WHERE run_id = ?"),
                    vec![Val::from(run.id.as_str())],
                ));
                stmts.push(head_insert(run));
                let mut rows = run_record::RecordRows::new(&run.id, usize::MAX);
                stmts.extend(run.written.iter().filter_map(|w| rows.push(w)));
                stmts.extend(rows.finish());
                // one transaction: the run and its list of nodes, or neither
                let mut tx = db.begin_write().await?;
                let r = tx.execute_all(stmts).await;
                match r {
                    Ok(()) => Ok(tx.commit().await?),
                    Err(e) => {
                        let _ = tx.rollback().await;
                        Err(e.into())
                    }
                }
            }
        }
    }

    /// Records one node's progress: its row replaced (the database) or a line appended (the
    /// state directory). `seq`: its place in the run's `written`.
    pub async fn put_node(&self, run_id: &str, seq: usize, w: &WrittenNode) -> Result<(), RecordError> {
        match self {
            RunStore::Dir(d) => dir::append_nodes(d, run_id, [w]).map(|_| ()),
            RunStore::Db(db) => {
                let ((usql, uvals), (isql, ivals)) = run_record::put_node_stmts(run_id, seq as i64, w);
                if db.execute(&usql, uvals).await? == 0 {
                    db.execute(&isql, ivals).await?;
                }
                Ok(())
            }
        }
    }

    /// Records a run's status and end (its head only).
    pub async fn set_status(&self, run: &RunRecord) -> Result<(), RecordError> {
        match self {
            RunStore::Dir(d) => dir::save_head(d, run),
            RunStore::Db(db) => {
                db.execute(
                    &format!("UPDATE {RUNS_TABLE} SET finished_at = ?, status = ?, plan_checksum = ? WHERE id = ?"),
                    vec![
                        Val::Time(run.finished_at),
                        Val::Text(Some(run.status.to_string())),
                        Val::Text(Some(run.plan_checksum.clone())),
                        Val::from(run.id.as_str()),
                    ],
                )
                .await?;
                Ok(())
            }
        }
    }
}

/// A resumed run's head goes and comes back with its nodes in rows (`written` emptied: a run from
/// before per-node rows moves its nodes into them).
fn head_delete(run: &RunRecord) -> Stmt {
    (format!("DELETE FROM {RUNS_TABLE} WHERE id = ?"), vec![Val::from(run.id.as_str())])
}

fn head_insert(run: &RunRecord) -> Stmt {
    (
        format!("INSERT INTO {RUNS_TABLE} (id, started_at, finished_at, status, plan_checksum, source, target_kind, written) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
        vec![
            Val::from(run.id.as_str()),
            Val::Time(Some(run.started_at)),
            Val::Time(run.finished_at),
            Val::Text(Some(run.status.to_string())),
            Val::Text(Some(run.plan_checksum.clone())),
            Val::Text(Some(run.source.clone())),
            Val::Text(Some(run.target_kind.clone())),
            Val::Text(Some("[]".into())),
        ],
    )
}

impl crate::core::closing::Closes for RunStore {
    async fn close_now(self) {
        self.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn run(id: &str, status: RunStatus, secs: i64) -> RunRecord {
        RunRecord {
            id: crate::core::migrate::run::RunId::parse(id).unwrap(),
            unreadable: vec![],
            started_at: chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap().naive_utc(),
            finished_at: None,
            status,
            plan_checksum: "c".into(),
            source: "s".into(),
            target_kind: "modern".into(),
            written: vec![],
        }
    }

    #[tokio::test]
    async fn run_files_are_private_and_found_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::Dir(dir.path().join("runs"));
        store.begin(&run("a", RunStatus::ApiCommitted, 0)).await.unwrap();
        store.begin(&run("b", RunStatus::ApiPartial, 10)).await.unwrap();
        let mode = std::fs::metadata(dir.path().join("runs/b.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(store.resumable().await.unwrap().unwrap().id, "b");
        assert_eq!(store.find(None).await.unwrap().id, "b");
        assert_eq!(store.find(Some("a")).await.unwrap().status, RunStatus::ApiCommitted);
        assert!(matches!(store.find(Some("c")).await, Err(FindError::NotKeptHere { .. })));
        store.begin(&run("b", RunStatus::ApiCommitted, 10)).await.unwrap();
        assert!(store.resumable().await.unwrap().is_none());
    }

    /// A run recorded before per-node rows (an API run kept its nodes in its head row's `written`)
    /// still reads whole; resumed, its nodes move into rows and read once, not twice; a row that
    /// does not parse is named, never dropped.
    #[tokio::test]
    async fn a_run_recorded_before_per_node_rows_still_reads_and_moves_into_rows() {
        use crate::core::db::url::DbUrl;
        use crate::core::db::Access;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ironic.sqlite");
        std::fs::write(&file, b"").unwrap();
        let url = DbUrl::parse(&format!("sqlite:///{}", file.display())).unwrap();
        let db = Db::connect(&url, Access::ReadWrite).await.unwrap();
        db.execute_all(run_record::runs_ddl(db.dialect())).await.unwrap();
        let node = |uuid: &str| {
            serde_json::json!({"nova_bm_id": 1, "uuid": uuid, "provision_state": "active", "instance_uuid": null,
                "maintenance": false, "driver": "ipmi", "driver_info": {}, "properties": {}, "instance_info": {},
                "ports": [], "api": {"state": "pending", "error": null}})
        };
        let written = serde_json::json!([node("n1"), node("n2")]).to_string();
        db.execute(
            &format!("INSERT INTO {RUNS_TABLE} (id, started_at, finished_at, status, plan_checksum, source, target_kind, written) VALUES ('old-run', '2026-01-01 00:00:00', NULL, 'api-partial', 'c', 's', 'modern', ?)"),
            vec![Val::from(written.as_str())],
        )
        .await
        .unwrap();
        let store = RunStore::Db(db.clone());
        let run = store.find(Some("old-run")).await.unwrap();
        assert_eq!(run.written.iter().map(|w| w.uuid.as_str()).collect::<Vec<_>>(), ["n1", "n2"]);
        assert!(run.unreadable.is_empty());
        assert_eq!(store.list().await.unwrap()[0].1, 2);
        // resumed: its nodes are rows now, its head holds none, and each node reads once
        let resumed = store.resumable().await.unwrap().expect("api-partial resumes");
        store.begin(&resumed).await.unwrap();
        let rows = db
            .fetch_map("SELECT COUNT(*) AS n FROM bm2ironic_run_nodes", vec![], |r| r.get::<i64, _>("n"))
            .await
            .unwrap();
        assert_eq!(rows, [2]);
        let run = store.find(Some("old-run")).await.unwrap();
        assert_eq!(run.written.len(), 2);
        // a row cut short is named with its run and row, and `complete` refuses the run unless forced
        db.execute("UPDATE bm2ironic_run_nodes SET record = substr(record, 1, 30) WHERE seq = 1", vec![])
            .await
            .unwrap();
        let run = store.find(Some("old-run")).await.unwrap();
        assert_eq!(run.written.len(), 1);
        assert_eq!(run.unreadable.len(), 1);
        assert!(run.unreadable[0].row.ends_with("seq 1"), "{}", run.unreadable[0]);
        let e = complete(&run, false).unwrap_err().to_string();
        assert!(e.contains("old-run") && e.contains("seq 1") && e.contains("--force"), "{e}");
        assert_eq!(complete(&run, true).unwrap().len(), 1);
        db.close().await;
    }
}
