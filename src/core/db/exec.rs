//! Fetch and execute on any backend: the one place that matches on the pool. `Db` and `Tx` (a
//! transaction) offer the same operations; SQL is written with `?` placeholders, numbered `$n` here
//! for PostgreSQL when values are bound (SQL without values is sent as written).

use futures::stream::{BoxStream, StreamExt};
use sqlx::{AssertSqlSafe, MySql, Postgres, Sqlite, Transaction};

use crate::core::db::dialect::Dialect;
use crate::core::db::error::DbError;
use crate::core::db::pool::{Db, Pool};
use crate::core::db::row::{Decodable, Row};
use crate::core::db::sql::{marks, placeholders, statement_bytes, texts, Stmt, Val};
use crate::core::db::url::Backend;

/// An open transaction: the operations of `Db`, then `commit` or `rollback` (dropped without
/// either, it rolls back).
pub struct Tx<'a> {
    db: &'a Db,
    inner: TxInner,
}

enum TxInner {
    MySql(Transaction<'static, MySql>),
    Postgres(Transaction<'static, Postgres>),
    Sqlite(Transaction<'static, Sqlite>),
}

/// Where a statement runs: the pool, or an open transaction.
enum Target<'a> {
    Pool(&'a Pool),
    Tx(&'a mut TxInner),
}

/// A query with its values bound.
macro_rules! bound {
    ($sql:expr, $vals:expr) => {{
        let mut q = sqlx::query(AssertSqlSafe($sql));
        for v in $vals {
            q = match v {
                Val::Int(x) => q.bind(x),
                Val::Bool(x) => q.bind(x),
                Val::Text(x) => q.bind(x),
                // microseconds at most: what Nova's and Ironic's SQLAlchemy read back (on SQLite a
                // time is text, and SQLAlchemy 0.9 takes 9 digits of nanoseconds for microseconds)
                Val::Time(x) => q.bind(x.as_ref().map(|t| chrono::SubsecRound::trunc_subsecs(*t, 6))),
            };
        }
        q
    }};
}

/// Runs `$body` with `$e` bound to the executor of the target, whatever its backend.
macro_rules! on {
    ($target:expr, $e:ident => $body:expr) => {
        match $target {
            Target::Pool(Pool::MySql($e)) => $body,
            Target::Pool(Pool::Postgres($e)) => $body,
            Target::Pool(Pool::Sqlite($e)) => $body,
            Target::Tx(TxInner::MySql(t)) => {
                let $e = &mut **t;
                $body
            }
            Target::Tx(TxInner::Postgres(t)) => {
                let $e = &mut **t;
                $body
            }
            Target::Tx(TxInner::Sqlite(t)) => {
                let $e = &mut **t;
                $body
            }
        }
    };
}

/// Keys per IN list (`fetch_map_in`).
pub const IN_CHUNK: usize = 500;

fn sql_for(backend: Backend, sql: &str, vals: &[Val]) -> String {
    if vals.is_empty() {
        sql.to_string()
    } else {
        placeholders(backend, sql)
    }
}

async fn execute(t: Target<'_>, sql: String, vals: Vec<Val>) -> Result<u64, sqlx::Error> {
    on!(t, e => bound!(sql, vals).execute(e).await.map(|r| r.rows_affected()))
}

async fn fetch_all(t: Target<'_>, sql: String, vals: Vec<Val>) -> Result<Vec<Row>, sqlx::Error> {
    on!(t, e => bound!(sql, vals).fetch_all(e).await.map(|rs| rs.into_iter().map(Row::from).collect()))
}

async fn fetch_optional(t: Target<'_>, sql: String, vals: Vec<Val>) -> Result<Option<Row>, sqlx::Error> {
    on!(t, e => bound!(sql, vals).fetch_optional(e).await.map(|r| r.map(Row::from)))
}

fn map_rows<T>(rows: Vec<Row>, f: impl FnMut(&Row) -> Result<T, sqlx::Error>) -> Result<Vec<T>, sqlx::Error> {
    rows.iter().map(f).collect()
}

fn first<T: Decodable>(row: Option<Row>) -> Result<T, sqlx::Error> {
    row.ok_or(sqlx::Error::RowNotFound)?.get(0)
}

impl Db {
    fn prepare(&self, sql: &str, vals: &[Val]) -> String {
        sql_for(self.backend(), sql, vals)
    }

    /// Executes one statement; returns the number of rows it affected.
    pub async fn execute(&self, sql: &str, vals: Vec<Val>) -> Result<u64, DbError> {
        let sql = self.prepare(sql, &vals);
        let bytes = statement_bytes(&sql, &vals);
        execute(Target::Pool(&self.pool), sql, vals).await.map_err(|e| self.statement_error(e, bytes))
    }

    /// Executes statements in order, each on its own (see `execute_in_transaction` for all or nothing).
    pub async fn execute_all(&self, stmts: Vec<Stmt>) -> Result<(), DbError> {
        for (sql, vals) in stmts {
            self.execute(&sql, vals).await?;
        }
        Ok(())
    }

    /// Executes statements in one transaction: all of them, or (on the first error) none.
    pub async fn execute_in_transaction(&self, stmts: Vec<Stmt>) -> Result<(), DbError> {
        let mut tx = self.begin().await?;
        tx.execute_all(stmts).await?;
        tx.commit().await
    }

    pub async fn fetch_all(&self, sql: &str, vals: Vec<Val>) -> Result<Vec<Row>, DbError> {
        let sql = self.prepare(sql, &vals);
        fetch_all(Target::Pool(&self.pool), sql, vals).await.map_err(|e| self.error(e))
    }

    /// All rows, each decoded by `f` (a decode error is reported like a query error).
    pub async fn fetch_map<T>(
        &self,
        sql: &str,
        vals: Vec<Val>,
        f: impl FnMut(&Row) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, DbError> {
        map_rows(self.fetch_all(sql, vals).await?, f).map_err(|e| self.error(e))
    }

    pub async fn fetch_optional(&self, sql: &str, vals: Vec<Val>) -> Result<Option<Row>, DbError> {
        let sql = self.prepare(sql, &vals);
        fetch_optional(Target::Pool(&self.pool), sql, vals).await.map_err(|e| self.error(e))
    }

    /// Like `fetch_map` for a long IN list: `sql(marks)` (marks being `(?, ?, ...)`) runs once per
    /// chunk of `IN_CHUNK` keys, each chunk's keys bound as text; the rows come back in chunk order.
    pub async fn fetch_map_in<T>(
        &self,
        keys: &[String],
        sql: impl Fn(&str) -> String,
        mut f: impl FnMut(&Row) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, DbError> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(IN_CHUNK) {
            out.extend(self.fetch_map(&sql(&marks(chunk.len())), texts(chunk), &mut f).await?);
        }
        Ok(out)
    }

    /// The first row (an error when there is none).
    pub async fn fetch_one(&self, sql: &str, vals: Vec<Val>) -> Result<Row, DbError> {
        self.fetch_optional(sql, vals).await?.ok_or_else(|| self.error(sqlx::Error::RowNotFound))
    }

    /// The first column of the first row (an error when there is no row).
    pub async fn fetch_scalar<T: Decodable>(&self, sql: &str, vals: Vec<Val>) -> Result<T, DbError> {
        first(self.fetch_optional(sql, vals).await?).map_err(|e| self.error(e))
    }

    /// The first column of every row.
    pub async fn fetch_column<T: Decodable>(&self, sql: &str, vals: Vec<Val>) -> Result<Vec<T>, DbError> {
        self.fetch_map(sql, vals, |r| r.get(0)).await
    }

    /// Streams the rows (one pass, nothing buffered beyond the driver's).
    pub fn fetch(&self, sql: &str, vals: Vec<Val>) -> BoxStream<'_, Result<Row, DbError>> {
        let sql = self.prepare(sql, &vals);
        let rows = match &self.pool {
            Pool::MySql(p) => bound!(sql, vals).fetch(p).map(|r| r.map(Row::from)).boxed(),
            Pool::Postgres(p) => bound!(sql, vals).fetch(p).map(|r| r.map(Row::from)).boxed(),
            Pool::Sqlite(p) => bound!(sql, vals).fetch(p).map(|r| r.map(Row::from)).boxed(),
        };
        rows.map(move |r| r.map_err(|e| self.error(e))).boxed()
    }

    /// Opens a transaction on one connection of the pool.
    pub async fn begin(&self) -> Result<Tx<'_>, DbError> {
        let inner = match &self.pool {
            Pool::MySql(p) => p.begin().await.map(TxInner::MySql),
            Pool::Postgres(p) => p.begin().await.map(TxInner::Postgres),
            Pool::Sqlite(p) => p.begin().await.map(TxInner::Sqlite),
        }
        .map_err(|e| self.error(e))?;
        Ok(Tx { db: self, inner })
    }

    /// After a write that failed: on SQLite, a write that failed for lack of space leaves the
    /// connection's pager in an error state with the rollback journal still hot (the file changed,
    /// and grown, until the next reader plays the journal back). One read on the connection plays it
    /// back now, so the file is as it was before the command ends. Nothing on the servers.
    pub async fn settle_after_failure(&self) {
        if let Pool::Sqlite(_) = &self.pool {
            if let Err(e) = self.fetch_optional("SELECT name FROM sqlite_master LIMIT 1", vec![]).await {
                tracing::warn!(error = %e, "after the failed load, SQLite could not read the file back");
            }
        }
    }

    /// Opens a transaction that will write, holding the database's write lock from its first
    /// statement on SQLite (`BEGIN IMMEDIATE`: another writer waits for it, up to the busy timeout,
    /// and what it reads stays true until it commits). On MySQL/MariaDB and PostgreSQL the rows it
    /// must keep are locked by the reads that need them (`FOR UPDATE`, see [`Tx::lock_suffix`]).
    pub async fn begin_write(&self) -> Result<Tx<'_>, DbError> {
        match &self.pool {
            Pool::Sqlite(p) => {
                let tx = p.begin_with("BEGIN IMMEDIATE").await.map_err(|e| self.error(e))?;
                Ok(Tx { db: self, inner: TxInner::Sqlite(tx) })
            }
            _ => self.begin().await,
        }
    }
}

impl Tx<'_> {
    /// How this backend spells what differs (casts, quoting, DDL types, ...).
    pub fn dialect(&self) -> Dialect {
        self.db.dialect()
    }

    /// What ends a SELECT whose rows this transaction must keep as read until it ends: ` FOR UPDATE`
    /// (a concurrent writer of those rows waits for us, and we for it, then read what it committed);
    /// nothing on SQLite, whose [`Db::begin_write`] holds the whole file's write lock already.
    pub fn lock_suffix(&self) -> &'static str {
        match self.inner {
            TxInner::Sqlite(_) => "",
            _ => " FOR UPDATE",
        }
    }

    /// Names of the tables, as the catalog spells them (seen from inside this transaction).
    pub async fn table_names(&mut self) -> Result<Vec<String>, DbError> {
        let sql = self.dialect().table_names_sql();
        self.fetch_map(sql, vec![], |r| r.get(0)).await
    }

    /// [`Tx::fetch_map`] for `WHERE x IN (...)` over many keys, in chunks the servers accept.
    pub async fn fetch_map_in<T>(
        &mut self,
        keys: &[String],
        sql: impl Fn(&str) -> String,
        mut f: impl FnMut(&Row) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, DbError> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(IN_CHUNK) {
            out.extend(self.fetch_map(&sql(&marks(chunk.len())), texts(chunk), &mut f).await?);
        }
        Ok(out)
    }

    fn prepare(&self, sql: &str, vals: &[Val]) -> String {
        sql_for(self.db.backend(), sql, vals)
    }

    pub async fn execute(&mut self, sql: &str, vals: Vec<Val>) -> Result<u64, DbError> {
        let sql = self.prepare(sql, &vals);
        let bytes = statement_bytes(&sql, &vals);
        execute(Target::Tx(&mut self.inner), sql, vals).await.map_err(|e| self.db.statement_error(e, bytes))
    }

    pub async fn execute_all(&mut self, stmts: Vec<Stmt>) -> Result<(), DbError> {
        for (sql, vals) in stmts {
            self.execute(&sql, vals).await?;
        }
        Ok(())
    }

    pub async fn fetch_all(&mut self, sql: &str, vals: Vec<Val>) -> Result<Vec<Row>, DbError> {
        let sql = self.prepare(sql, &vals);
        fetch_all(Target::Tx(&mut self.inner), sql, vals).await.map_err(|e| self.db.error(e))
    }

    pub async fn fetch_map<T>(
        &mut self,
        sql: &str,
        vals: Vec<Val>,
        f: impl FnMut(&Row) -> Result<T, sqlx::Error>,
    ) -> Result<Vec<T>, DbError> {
        let rows = self.fetch_all(sql, vals).await?;
        map_rows(rows, f).map_err(|e| self.db.error(e))
    }

    pub async fn fetch_optional(&mut self, sql: &str, vals: Vec<Val>) -> Result<Option<Row>, DbError> {
        let sql = self.prepare(sql, &vals);
        fetch_optional(Target::Tx(&mut self.inner), sql, vals).await.map_err(|e| self.db.error(e))
    }

    pub async fn fetch_one(&mut self, sql: &str, vals: Vec<Val>) -> Result<Row, DbError> {
        let row = self.fetch_optional(sql, vals).await?;
        row.ok_or_else(|| self.db.error(sqlx::Error::RowNotFound))
    }

    pub async fn fetch_scalar<T: Decodable>(&mut self, sql: &str, vals: Vec<Val>) -> Result<T, DbError> {
        let row = self.fetch_optional(sql, vals).await?;
        first(row).map_err(|e| self.db.error(e))
    }

    pub async fn fetch_column<T: Decodable>(&mut self, sql: &str, vals: Vec<Val>) -> Result<Vec<T>, DbError> {
        self.fetch_map(sql, vals, |r| r.get(0)).await
    }

    pub async fn commit(self) -> Result<(), DbError> {
        match self.inner {
            TxInner::MySql(t) => t.commit().await,
            TxInner::Postgres(t) => t.commit().await,
            TxInner::Sqlite(t) => t.commit().await,
        }
        .map_err(|e| self.db.error(e))
    }

    pub async fn rollback(self) -> Result<(), DbError> {
        match self.inner {
            TxInner::MySql(t) => t.rollback().await,
            TxInner::Postgres(t) => t.rollback().await,
            TxInner::Sqlite(t) => t.rollback().await,
        }
        .map_err(|e| self.db.error(e))
    }
}

#[cfg(test)]
mod tests {
    use futures::TryStreamExt;

    use super::*;
    use crate::core::db::pool::Access;
    use crate::core::db::url::DbUrl;

    async fn sqlite(dir: &tempfile::TempDir) -> Db {
        let url = DbUrl::parse(&format!("sqlite:///{}", dir.path().join("t.sqlite").display())).unwrap();
        let db = Db::connect(&url, Access::Create).await.unwrap();
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag BOOLEAN, at DATETIME)", vec![])
            .await
            .unwrap();
        db
    }

    #[test]
    fn placeholders_only_when_values_are_bound() {
        assert_eq!(sql_for(Backend::Postgres, "SELECT '?' FROM t", &[]), "SELECT '?' FROM t");
        assert_eq!(
            sql_for(Backend::Postgres, "SELECT a FROM t WHERE b = ?", &[Val::from(1)]),
            "SELECT a FROM t WHERE b = $1"
        );
        assert_eq!(
            sql_for(Backend::MySql, "SELECT a FROM t WHERE b = ?", &[Val::from(1)]),
            "SELECT a FROM t WHERE b = ?"
        );
    }

    #[tokio::test]
    async fn typed_getters_and_fetches() {
        let dir = tempfile::tempdir().unwrap();
        let db = sqlite(&dir).await;
        let at = chrono::NaiveDate::from_ymd_opt(2014, 5, 1).unwrap().and_hms_opt(10, 0, 0).unwrap();
        let n = db
            .execute("INSERT INTO t VALUES (?, ?, ?, ?), (?, ?, ?, ?)", {
                let mut v = vec![Val::from(1), Val::from("a"), Val::from(true), Val::from(at)];
                v.extend([Val::from(2), Val::Text(None), Val::Bool(None), Val::Time(None)]);
                v
            })
            .await
            .unwrap();
        assert_eq!(n, 2);
        let rows = db.fetch_all("SELECT id, name, flag, at FROM t ORDER BY id", vec![]).await.unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].i64("id").unwrap(), 1);
        assert_eq!(rows[0].string("name").unwrap(), "a");
        assert!(rows[0].bool("flag").unwrap());
        assert_eq!(rows[0].time("at").unwrap(), at);
        assert_eq!(rows[1].opt_string("name").unwrap(), None);
        assert_eq!(rows[1].opt_bool("flag").unwrap(), None);
        assert_eq!(rows[1].opt_time("at").unwrap(), None);
        assert!(rows[0].i64("name").is_err(), "text is not widened to an integer");
        assert!(rows[0].string("nope").is_err());

        let count: i64 = db.fetch_scalar("SELECT COUNT(*) FROM t", vec![]).await.unwrap();
        assert_eq!(count, 2);
        assert!(db.fetch_optional("SELECT id FROM t WHERE id = ?", vec![Val::from(9)]).await.unwrap().is_none());
        let names = db
            .fetch_map_in(
                &["1".to_string(), "2".to_string()],
                |m| format!("SELECT id FROM t WHERE CAST(id AS TEXT) IN {m} ORDER BY id"),
                |r| r.i64(0),
            )
            .await
            .unwrap();
        assert_eq!(names, vec![1, 2]);
        let streamed: Vec<Row> = db.fetch("SELECT id FROM t ORDER BY id", vec![]).try_collect().await.unwrap();
        assert_eq!(streamed.len(), 2);
        let e = db.fetch_all("SELECT * FROM missing", vec![]).await.err().unwrap();
        assert!(matches!(e, DbError::Other { .. }), "{e}");
        db.close().await;
    }

    #[tokio::test]
    async fn a_transaction_is_all_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = sqlite(&dir).await;
        let mut tx = db.begin().await.unwrap();
        tx.execute("INSERT INTO t (id) VALUES (?)", vec![Val::from(1)]).await.unwrap();
        assert_eq!(tx.fetch_scalar::<i64>("SELECT COUNT(*) FROM t", vec![]).await.unwrap(), 1);
        tx.rollback().await.unwrap();
        assert_eq!(db.fetch_scalar::<i64>("SELECT COUNT(*) FROM t", vec![]).await.unwrap(), 0);

        let bad = vec![
            ("INSERT INTO t (id) VALUES (?)".to_string(), vec![Val::from(1)]),
            ("INSERT INTO t (id) VALUES (?)".to_string(), vec![Val::from(1)]),
        ];
        assert!(db.execute_in_transaction(bad).await.is_err());
        assert_eq!(db.fetch_scalar::<i64>("SELECT COUNT(*) FROM t", vec![]).await.unwrap(), 0);
        db.execute_in_transaction(vec![("INSERT INTO t (id) VALUES (?)".into(), vec![Val::from(1)])]).await.unwrap();
        assert_eq!(db.fetch_scalar::<i64>("SELECT COUNT(*) FROM t", vec![]).await.unwrap(), 1);
        db.close().await;
    }
}
