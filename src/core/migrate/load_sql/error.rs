//! How a SQL load fails ([`LoadError`]): each variant's message says whether anything was written.

use crate::core::db::DbError;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{0} blocking conflict(s) unresolved: nothing written (see `bm2ironic plan`)")]
    Blocked(usize),
    #[error("cancelled: the transaction was rolled back, the target is as it was")]
    Cancelled,
    #[error("writing node {uuid} failed: {message}; the transaction was rolled back, the target is as it was")]
    Node { uuid: String, message: String },
    #[error("{last}; tried {attempts} times, rolled back each time: nothing was written (stop whatever else writes to Ironic's database, then run again)")]
    Conflicts { attempts: u32, last: DbError },
    #[error("the target changed after the plan was made: {count} Ironic node(s) the plan counted on are gone (first: {first}); a rollback or another bm2ironic wrote to it meanwhile. Nothing was written: run the command again to plan from what is there now")]
    TargetChanged { count: usize, first: String },
}

crate::core::kind::always!(Runtime: LoadError);
