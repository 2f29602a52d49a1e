//! Which row made a multi-row INSERT fail: the load writes nodes and ports a thousand or more to a
//! statement, and an error about one of them (a duplicate uuid or MAC, a value the column refuses)
//! must name that node or port, not its batch. The one search both the nodes and the ports use.

use crate::core::db::sql::{multi_insert, Val};
use crate::core::db::{DbError, Tx};

use super::error::LoadError;

/// Set before each multi-row INSERT, so that a failed one can be undone inside the transaction and
/// its rows tried one at a time (PostgreSQL refuses every statement after an error until then).
pub(super) const SAVEPOINT: &str = "SAVEPOINT bm2ironic_batch";
const ROLLBACK_TO_SAVEPOINT: &str = "ROLLBACK TO SAVEPOINT bm2ironic_batch";

/// The error a multi-row INSERT into `table` that failed with `e` stops the load with. An error
/// about the server or the session is returned as it is; one about the rows (`DbError::Other`)
/// names the row that caused it: the statement's rows, built again by `rows` (the INSERT consumed
/// them), are inserted one by one up to the culprit, and `describe` names it from its index in them
/// (or says what it can when none fails alone). The caller rolls the whole transaction back.
pub(super) async fn failed_insert(
    tx: &mut Tx<'_>,
    e: DbError,
    table: &str,
    cols: &[&str],
    rows: impl FnOnce() -> Vec<Vec<Val>>,
    describe: impl FnOnce(Option<usize>) -> String,
) -> LoadError {
    if !matches!(e, DbError::Other { .. }) {
        return e.into(); // about the server or the session, not a row
    }
    let culprit = find_culprit(tx, table, cols, &rows()).await;
    LoadError::Node { uuid: describe(culprit), message: e.to_string() }
}

/// After a multi-row INSERT failed: rolls back to the batch's savepoint and inserts the rows one by
/// one, so the error can name the row that caused it. Returns its index in `rows`.
async fn find_culprit(tx: &mut Tx<'_>, table: &str, cols: &[&str], rows: &[Vec<Val>]) -> Option<usize> {
    tx.execute(ROLLBACK_TO_SAVEPOINT, vec![]).await.ok()?;
    for (k, row) in rows.iter().enumerate() {
        let (sql, vals) = multi_insert(table, cols, vec![row.clone()]);
        if tx.execute(&sql, vals).await.is_err() {
            return Some(k);
        }
    }
    None
}
