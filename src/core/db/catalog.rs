//! What the connected database holds, asked of its catalog: the tables, a table's columns, and a
//! table's id counter (PostgreSQL's sequence, MySQL's AUTO_INCREMENT), read before a load and put
//! back after a rollback, because a rolled-back INSERT still advances it.

use crate::core::db::error::DbError;
use crate::core::db::pool::Db;
use crate::core::db::sql::Val;
use crate::core::db::url::Backend;

/// A table's id counter as it was read (`Db::id_counter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdCounter {
    table: String,
    at: CounterAt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum CounterAt {
    /// PostgreSQL: the sequence's name, last_value and is_called
    Sequence { name: String, last: i64, called: bool },
    /// MySQL/MariaDB: AUTO_INCREMENT
    AutoIncrement(i64),
}

/// MySQL 8 caches AUTO_INCREMENT in information_schema; MariaDB has no such variable.
const MYSQL_NO_STATS_CACHE: &str = "SET SESSION information_schema_stats_expiry = 0";
const MYSQL_AUTO_INCREMENT: &str = "SELECT CAST(AUTO_INCREMENT AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?";
const PG_SEQUENCE: &str = "SELECT pg_get_serial_sequence(?, 'id')";

fn pg_sequence_state(sequence: &str) -> String {
    format!("SELECT last_value, is_called FROM {sequence}")
}

impl IdCounter {
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Puts the counter back, never below the highest id present.
    fn restore_sql(&self) -> String {
        match &self.at {
            CounterAt::Sequence { name, last, called } => format!(
                "SELECT setval('{name}', GREATEST({last}, (SELECT COALESCE(MAX(id), 1) FROM {})), {called})",
                self.table
            ),
            CounterAt::AutoIncrement(ai) => format!("ALTER TABLE {} AUTO_INCREMENT = {ai}", self.table),
        }
    }
}

impl Db {
    /// Names of the tables in the connected database (current schema on PostgreSQL).
    pub async fn table_names(&self) -> Result<Vec<String>, DbError> {
        self.fetch_column(self.dialect().table_names_sql(), vec![]).await
    }

    /// Names of the columns of `table`, as the catalog spells them.
    pub async fn column_names(&self, table: &str) -> Result<Vec<String>, DbError> {
        self.fetch_column(self.dialect().column_names_sql(), vec![Val::from(table)]).await
    }

    /// `table`'s id counter (its `id` column's), or None where there is none to put back: SQLite's
    /// rowid tables (nothing advances on rollback), a table without a sequence or AUTO_INCREMENT.
    pub async fn id_counter(&self, table: &str) -> Result<Option<IdCounter>, DbError> {
        let at = match self.backend() {
            Backend::Postgres => {
                let seq: Option<String> = self.fetch_scalar(PG_SEQUENCE, vec![Val::from(table)]).await?;
                let Some(name) = seq else { return Ok(None) };
                let r = self.fetch_one(&pg_sequence_state(&name), vec![]).await?;
                let (last, called) =
                    (|| Ok((r.get::<i64, _>(0)?, r.get::<bool, _>(1)?)))().map_err(|e| self.error(e))?;
                CounterAt::Sequence { name, last, called }
            }
            Backend::MySql => {
                let _ = self.execute(MYSQL_NO_STATS_CACHE, vec![]).await;
                let ai: Option<i64> =
                    self.fetch_column(MYSQL_AUTO_INCREMENT, vec![Val::from(table)]).await?.into_iter().next().flatten();
                let Some(ai) = ai else { return Ok(None) };
                CounterAt::AutoIncrement(ai)
            }
            Backend::Sqlite => return Ok(None),
        };
        Ok(Some(IdCounter { table: table.to_string(), at }))
    }

    /// Puts a counter back as it was read, never below the highest id present.
    pub async fn restore_id_counter(&self, counter: &IdCounter) -> Result<(), DbError> {
        self.execute(&counter.restore_sql(), vec![]).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_read_and_put_back_with_this_sql() {
        assert_eq!(PG_SEQUENCE, "SELECT pg_get_serial_sequence(?, 'id')");
        assert_eq!(pg_sequence_state("public.nodes_id_seq"), "SELECT last_value, is_called FROM public.nodes_id_seq");
        assert_eq!(MYSQL_NO_STATS_CACHE, "SET SESSION information_schema_stats_expiry = 0");
        assert_eq!(
            MYSQL_AUTO_INCREMENT,
            "SELECT CAST(AUTO_INCREMENT AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?"
        );
        let seq = IdCounter {
            table: "nodes".into(),
            at: CounterAt::Sequence { name: "public.nodes_id_seq".into(), last: 41, called: true },
        };
        assert_eq!(
            seq.restore_sql(),
            "SELECT setval('public.nodes_id_seq', GREATEST(41, (SELECT COALESCE(MAX(id), 1) FROM nodes)), true)"
        );
        let ai = IdCounter { table: "ports".into(), at: CounterAt::AutoIncrement(7) };
        assert_eq!(ai.restore_sql(), "ALTER TABLE ports AUTO_INCREMENT = 7");
        assert_eq!(ai.table(), "ports");
    }

    #[tokio::test]
    async fn sqlite_lists_tables_and_columns_and_has_no_counter_to_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::core::db::url::DbUrl::parse(&format!("sqlite:///{}", dir.path().join("c.sqlite").display()))
            .unwrap();
        let db = Db::connect(&url, crate::core::db::pool::Access::Create).await.unwrap();
        db.execute("CREATE TABLE nodes (id INTEGER PRIMARY KEY, uuid TEXT)", vec![]).await.unwrap();
        assert_eq!(db.table_names().await.unwrap(), vec!["nodes".to_string()]);
        assert_eq!(db.column_names("nodes").await.unwrap(), vec!["id".to_string(), "uuid".to_string()]);
        assert_eq!(db.id_counter("nodes").await.unwrap(), None);
        db.close().await;
    }
}
