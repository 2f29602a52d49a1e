//! What reading or writing a run's record can fail with (the database, a file of the state
//! directory, a lock held by another process, rows that do not read).

use crate::core::db::DbError;

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("run file {path}: {reason}")]
    File { path: String, reason: String },
    /// another load or rollback through the API holds the state directory's lock
    #[error("another bm2ironic load or rollback through the API is running: {holder} holds {path}; wait for it to end (one run at a time per target)")]
    Locked { path: String, holder: String },
    /// rows of a run's record that do not read: the run is not acted on without them
    #[error("run {run}'s record has {count} unreadable row(s), e.g. {first}: nothing was done (restore the row from a backup, or give --force to go on without it: Ironic's markers still name the run's nodes)")]
    Unreadable { run: String, count: usize, first: String },
}

crate::core::kind::always!(Runtime: RecordError);
