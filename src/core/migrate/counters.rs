//! The id counters of Ironic's `nodes` and `ports` (PostgreSQL sequences, MySQL AUTO_INCREMENT):
//! read before a load and put back after a rollback, because a rolled-back INSERT still advances them.

use crate::core::db::{Db, DbError, IdCounter};

/// The id counters of `nodes` and `ports` before the load (none on SQLite, whose rowids do not
/// advance on rollback).
pub(super) async fn read_counters(db: &Db) -> Result<Vec<IdCounter>, DbError> {
    let mut out = Vec::new();
    for table in ["nodes", "ports"] {
        out.extend(db.id_counter(table).await?);
    }
    Ok(out)
}

/// Best effort, never below the highest id present.
pub(super) async fn restore_counters(db: &Db, counters: &[IdCounter]) {
    for c in counters {
        match db.restore_id_counter(c).await {
            Ok(()) => tracing::debug!(table = c.table(), "id counter restored after rollback"),
            Err(e) => {
                tracing::warn!(table = c.table(), error = %e, "could not restore the id counter after rollback (harmless: ids stay unique)")
            }
        }
    }
}
