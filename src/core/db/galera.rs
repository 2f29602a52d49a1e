//! What a MariaDB Galera cluster does differently, for a MySQL target (docs/galera.md): detected at
//! connect; a node outside the primary component (no quorum) refused with a message that says so; the
//! one write set of a load checked against `wsrep_max_ws_size` / `wsrep_max_ws_rows` before it starts;
//! reads made causal (`wsrep_sync_wait`) so `verify` sees what any node committed.

use sqlx::mysql::MySqlConnectOptions;
use sqlx::{Connection, MySqlConnection, Row as _};

use crate::core::db::error::{classify, connect_error, DbError};
use crate::core::db::sql::Val;
use crate::core::db::url::DbUrl;

/// Read-your-writes for the reads of a session on a Galera node: a SELECT (and SHOW) first waits
/// until the node has applied every write set the cluster had committed when it was sent.
pub const CAUSAL_READS: &str = "SET SESSION wsrep_sync_wait = 1";

/// How many times a load is tried when Galera's certification (or InnoDB's deadlock detection)
/// rolls it back (`ERROR 1213`), and the pause before the second try (doubled each time).
pub const CONFLICT_ATTEMPTS: u32 = 3;
pub const CONFLICT_BACKOFF_MS: u64 = 500;

/// What a Galera node said about itself when we connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Galera {
    /// `wsrep_cluster_status`: Primary, non-Primary or Disconnected
    pub cluster_status: String,
    pub cluster_size: u64,
    /// `wsrep_max_ws_size` (bytes) and `wsrep_max_ws_rows` (0: no limit)
    pub max_ws_size: u64,
    pub max_ws_rows: u64,
}

/// Asks a MySQL/MariaDB server whether it is a Galera node (`wsrep_on`); None on a plain server.
/// Uses a connection of its own, before the pool's sessions are set up (they depend on the answer).
pub(super) async fn detect(options: &MySqlConnectOptions, url: &DbUrl) -> Result<Option<Galera>, DbError> {
    let err = |e: sqlx::Error| classify(url, e);
    let mut c = MySqlConnection::connect_with(options).await.map_err(|e| connect_error(url, e))?;
    let value = async |c: &mut MySqlConnection, sql: &str| -> Result<Option<String>, DbError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_optional(&mut *c).await.map_err(err)?;
        Ok(match row {
            Some(r) => Some(
                r.try_get::<String, _>(1)
                    .or_else(|_| r.try_get::<Vec<u8>, _>(1).map(|b| String::from_utf8_lossy(&b).into_owned()))
                    .map_err(err)?,
            ),
            None => None,
        })
    };
    // SHOW, not @@wsrep_on: MySQL has no such variable, and SHOW answers with no row instead of an error
    let on = value(&mut c, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").await?;
    if !on.is_some_and(|v| v.eq_ignore_ascii_case("ON")) {
        let _ = c.close().await;
        return Ok(None);
    }
    let num = |v: Option<String>| v.and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0);
    let g = Galera {
        cluster_status: value(&mut c, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_status'").await?.unwrap_or_default(),
        cluster_size: num(value(&mut c, "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_size'").await?),
        max_ws_size: num(value(&mut c, "SHOW GLOBAL VARIABLES LIKE 'wsrep_max_ws_size'").await?),
        max_ws_rows: num(value(&mut c, "SHOW GLOBAL VARIABLES LIKE 'wsrep_max_ws_rows'").await?),
    };
    let _ = c.close().await;
    Ok(Some(g))
}

/// The bytes a row adds to a write set, roughly: its values, and a fixed share for keys and headers.
pub fn row_bytes(row: &[Val]) -> u64 {
    let values: usize = row
        .iter()
        .map(|v| match v {
            Val::Text(Some(t)) => t.len() + 2,
            _ => 8,
        })
        .sum();
    values as u64 + 64
}

impl Galera {
    pub fn is_primary(&self) -> bool {
        self.cluster_status == "Primary"
    }

    /// Refuses a load whose one transaction (`rows` rows, about `bytes` bytes) cannot fit in a
    /// single write set. The load is never split: it must stay all or nothing.
    pub fn check_write_set(&self, url: &DbUrl, rows: u64, bytes: u64) -> Result<(), DbError> {
        let mut over = Vec::new();
        if self.max_ws_rows > 0 && rows > self.max_ws_rows {
            over.push(format!("{rows} rows, wsrep_max_ws_rows is {}", self.max_ws_rows));
        }
        // the estimate is rough: keep a quarter of the limit as margin
        if self.max_ws_size > 0 && bytes > self.max_ws_size / 4 * 3 {
            over.push(format!("about {} bytes, wsrep_max_ws_size is {}", bytes, self.max_ws_size));
        }
        if over.is_empty() {
            return Ok(());
        }
        Err(DbError::WriteSetTooLarge { what: url.describe(), detail: over.join("; ") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rows: u64, size: u64) -> Galera {
        Galera { cluster_status: "Primary".into(), cluster_size: 3, max_ws_size: size, max_ws_rows: rows }
    }

    #[test]
    fn a_load_that_cannot_fit_one_write_set_is_refused_naming_the_variable() {
        let url = DbUrl::parse("mysql://u:secret@db1:3306/ironic").unwrap();
        assert!(node(0, 2_147_483_647).check_write_set(&url, 1_000_000, 100_000_000).is_ok());
        let e = node(1_000, 2_147_483_647).check_write_set(&url, 1_001, 10).unwrap_err().to_string();
        assert!(e.contains("1001 rows, wsrep_max_ws_rows is 1000") && e.contains("db1:3306"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let e = node(0, 1_000_000).check_write_set(&url, 10, 900_000).unwrap_err().to_string();
        assert!(e.contains("wsrep_max_ws_size is 1000000") && e.contains("nothing was written"), "{e}");
        assert!(node(0, 1_000_000).check_write_set(&url, 10, 700_000).is_ok());
    }

    #[test]
    fn row_bytes_counts_text_and_a_share_for_keys() {
        assert_eq!(row_bytes(&[Val::Text(Some("abcd".into())), Val::Int(Some(1)), Val::Text(None)]), 6 + 8 + 8 + 64);
    }
}
