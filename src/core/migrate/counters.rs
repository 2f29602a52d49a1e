//! The id counters of Ironic's `nodes` and `ports` (PostgreSQL sequences, MySQL AUTO_INCREMENT):
//! read before a load and put back after a rollback, because a rolled-back INSERT still advances them.

use crate::core::db::sql::Val;
use crate::core::db::url::Backend;
use crate::core::db::{Db, DbError};

/// The id counters of `nodes` and `ports` before the load (PostgreSQL sequences, MySQL AUTO_INCREMENT).
pub(super) struct Counter {
    table: &'static str,
    /// PostgreSQL: sequence name, last_value, is_called
    pg: Option<(String, i64, bool)>,
    /// MySQL: AUTO_INCREMENT
    my: Option<i64>,
}

pub(super) async fn read_counters(db: &Db) -> Result<Vec<Counter>, DbError> {
    let mut out = Vec::new();
    for table in ["nodes", "ports"] {
        match db.backend() {
            Backend::Postgres => {
                let seq: Option<String> =
                    db.fetch_scalar("SELECT pg_get_serial_sequence(?, 'id')", vec![Val::from(table)]).await?;
                if let Some(seq) = seq {
                    let sql = format!("SELECT last_value, is_called FROM {seq}");
                    let r = db.fetch_one(&sql, vec![]).await?;
                    let (last, called) =
                        (|| Ok((r.get::<i64, _>(0)?, r.get::<bool, _>(1)?)))().map_err(|e| db.error(e))?;
                    out.push(Counter { table, pg: Some((seq, last, called)), my: None });
                }
            }
            Backend::MySql => {
                // MySQL 8 caches it; MariaDB has no such variable
                let _ = db.execute("SET SESSION information_schema_stats_expiry = 0", vec![]).await;
                let sql = "SELECT CAST(AUTO_INCREMENT AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?";
                let ai: Option<i64> = db.fetch_column(sql, vec![Val::from(table)]).await?.into_iter().next().flatten();
                out.push(Counter { table, pg: None, my: ai });
            }
            Backend::Sqlite => {} // rowid tables: nothing advances on rollback
        }
    }
    Ok(out)
}

/// Best effort, never below the highest id present.
pub(super) async fn restore_counters(db: &Db, counters: &[Counter]) {
    for c in counters {
        let sql = match (&c.pg, c.my) {
            (Some((seq, last, called)), _) => format!(
                "SELECT setval('{seq}', GREATEST({last}, (SELECT COALESCE(MAX(id), 1) FROM {})), {called})",
                c.table
            ),
            (_, Some(ai)) => format!("ALTER TABLE {} AUTO_INCREMENT = {ai}", c.table),
            _ => continue,
        };
        match db.execute(&sql, vec![]).await {
            Ok(_) => tracing::debug!(table = c.table, "id counter restored after rollback"),
            Err(e) => {
                tracing::warn!(table = c.table, error = %e, "could not restore the id counter after rollback (harmless: ids stay unique)")
            }
        }
    }
}
