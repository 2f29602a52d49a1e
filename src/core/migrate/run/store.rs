//! Where runs are kept and the one place they are looked up. Every run of either kind is a row of
//! the Ironic database's `bm2ironic_runs` when that database is given; an API run made without it
//! is a run file (JSON, mode 0600) in the state directory. `find` (the run a command means),
//! `resumable` (the API run a rerun continues) and `list` serve `verify`, `rollback`, `watch`, the
//! takeover check and the API load; `select` is the same choice over runs already read (a
//! rollback reads them inside its transaction).

use std::path::{Path, PathBuf};

use super::record::{self as run_record, RunRecord, RUNS_TABLE};
use super::status::RunKind;
use crate::core::db::sql::Val;
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

crate::core::kind::always!(Runtime: RecordError);

/// The run `id` (of either kind), or (None) the newest run that `newest` accepts; `runs` newest
/// first.
pub fn select(
    runs: Vec<RunRecord>,
    id: Option<&str>,
    newest: impl Fn(&RunRecord) -> bool,
) -> Result<RunRecord, FindError> {
    match id {
        Some(id) => runs.into_iter().find(|r| r.id == id).ok_or_else(|| FindError::Unknown(id.into())),
        None => runs.into_iter().find(newest).ok_or(FindError::NoRun),
    }
}

/// What a command acts on when no run is named: the newest committed SQL run or API run (an API
/// run of any status: a partial one is verified, resumed or rolled back too).
pub fn acted_on(run: &RunRecord) -> bool {
    run.status.is_committed_sql() || is_api(run)
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("run file {path}: {reason}")]
    File { path: String, reason: String },
}

/// The run records of API runs.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per command
pub enum RunStore {
    Db(Db),
    /// a directory of `<run id>.json` files
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

/// A run record is a few MB even at 100,000 nodes; the bound only keeps a device or a huge file
/// planted in the state directory from exhausting memory.
const MAX_RECORD_FILE: u64 = 1 << 30;

fn file_err(path: &Path, e: impl std::fmt::Display) -> RecordError {
    RecordError::File { path: path.display().to_string(), reason: e.to_string() }
}

/// Writes `text` to `path` with mode 0600 (through a temporary file and a rename).
fn write_private(path: &Path, text: &str) -> Result<(), RecordError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| file_err(&tmp, e))?;
    f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).map_err(|e| file_err(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| file_err(path, e))
}

impl RunStore {
    /// Closes the Ironic database's connections, when the runs are kept there.
    pub async fn close(self) {
        if let RunStore::Db(db) = self {
            db.close().await;
        }
    }

    /// Creates or replaces `run`'s record.
    pub async fn save(&self, run: &RunRecord) -> Result<(), RecordError> {
        let written = serde_json::to_string(&run.written).unwrap_or_else(|_| "[]".into());
        match self {
            RunStore::Dir(dir) => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| file_err(dir, e))?;
                let text = serde_json::to_string_pretty(run).unwrap_or_default();
                write_private(&dir.join(format!("{}.json", run.id)), &text)
            }
            RunStore::Db(db) => {
                if !run_record::runs_table_exists(db).await? {
                    db.execute_all(run_record::runs_ddl(db.dialect())).await?;
                }
                let n = db
                    .execute(
                        &format!("UPDATE {RUNS_TABLE} SET finished_at = ?, status = ?, plan_checksum = ?, written = ? WHERE id = ?"),
                        vec![
                            Val::Time(run.finished_at),
                            Val::Text(Some(run.status.to_string())),
                            Val::Text(Some(run.plan_checksum.clone())),
                            Val::Text(Some(written.clone())),
                            Val::Text(Some(run.id.clone())),
                        ],
                    )
                    .await?;
                if n == 0 {
                    db.execute(
                        &format!("INSERT INTO {RUNS_TABLE} (id, started_at, finished_at, status, plan_checksum, source, target_kind, written) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                        vec![
                            Val::Text(Some(run.id.clone())),
                            Val::Time(Some(run.started_at)),
                            Val::Time(run.finished_at),
                            Val::Text(Some(run.status.to_string())),
                            Val::Text(Some(run.plan_checksum.clone())),
                            Val::Text(Some(run.source.clone())),
                            Val::Text(Some(run.target_kind.clone())),
                            Val::Text(Some(written)),
                        ],
                    )
                    .await?;
                }
                Ok(())
            }
        }
    }

    /// Every run (SQL and API alike in the database), newest first.
    pub async fn list(&self) -> Result<Vec<RunRecord>, RecordError> {
        match self {
            RunStore::Db(db) => Ok(run_record::runs(db).await?),
            RunStore::Dir(dir) => {
                let mut out: Vec<RunRecord> = Vec::new();
                let Ok(rd) = std::fs::read_dir(dir) else { return Ok(out) };
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().and_then(|x| x.to_str()) != Some("json") {
                        continue;
                    }
                    // ours, but in a directory others may write to: a FIFO or a device named *.json
                    // must not hang or exhaust a rollback
                    let text =
                        crate::core::settings::file::read_text(&p, MAX_RECORD_FILE).map_err(|e| file_err(&p, e))?;
                    out.push(serde_json::from_str(&text).map_err(|e| file_err(&p, e))?);
                }
                out.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(a.id.cmp(&b.id)));
                Ok(out)
            }
        }
    }

    /// The run `id` of either kind, or (None) the newest one a command acts on ([`acted_on`]).
    /// Without the Ironic database only API runs are kept (in the state directory): a run that is
    /// not there is named with where to look instead.
    pub async fn find(&self, id: Option<&str>) -> Result<RunRecord, FindError> {
        match self {
            RunStore::Db(db) => {
                // the per-node records of every SQL run are read only for the run chosen
                let heads = run_record::run_heads(db).await.map_err(RecordError::from)?;
                let head = select(heads, id, acted_on)?;
                if is_api(&head) {
                    // an API run's record is whole in its own row
                    return Ok(head);
                }
                let runs = run_record::runs(db).await.map_err(RecordError::from)?;
                select(runs, Some(&head.id), acted_on)
            }
            RunStore::Dir(dir) => select(self.list().await?, id, acted_on).map_err(|e| match e {
                FindError::NoRun | FindError::Unknown(_) => {
                    FindError::NotKeptHere { run: id.map(str::to_string), dir: dir.display().to_string() }
                }
                e => e,
            }),
        }
    }

    /// The newest API run still to finish (a rerun resumes it).
    pub async fn resumable(&self) -> Result<Option<RunRecord>, RecordError> {
        Ok(self.list().await?.into_iter().find(is_api).filter(|r| r.status.is_resumable()))
    }
}

impl crate::core::closing::Closes for RunStore {
    async fn close_now(self) {
        self.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::migrate::run::status::RunStatus;
    use std::os::unix::fs::PermissionsExt;

    fn run(id: &str, status: RunStatus, secs: i64) -> RunRecord {
        RunRecord {
            id: id.into(),
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
        store.save(&run("a", RunStatus::ApiCommitted, 0)).await.unwrap();
        store.save(&run("b", RunStatus::ApiPartial, 10)).await.unwrap();
        let mode = std::fs::metadata(dir.path().join("runs/b.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(store.resumable().await.unwrap().unwrap().id, "b");
        assert_eq!(store.find(None).await.unwrap().id, "b");
        assert_eq!(store.find(Some("a")).await.unwrap().status, RunStatus::ApiCommitted);
        assert!(matches!(store.find(Some("c")).await, Err(FindError::NotKeptHere { .. })));
        store.save(&run("b", RunStatus::ApiCommitted, 10)).await.unwrap();
        assert!(store.resumable().await.unwrap().is_none());
    }
}
