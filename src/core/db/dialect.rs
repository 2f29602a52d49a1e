//! How each backend spells the SQL that differs between them, as a small vocabulary: callers write
//! their statements with a `Dialect` (from `Db::dialect` or `Tx::dialect`) and never ask which
//! backend they talk to. Casts that make every backend send the same Rust types, quoted identifiers,
//! the server's clock, DDL column types, the catalog's queries, the id counter after explicit ids.
//! The tests below pin the exact SQL each helper gives each backend.

use crate::core::db::url::Backend;

/// What a selected value is decoded as (`Row`'s getters), whatever type the column has here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cast {
    /// An integer, as a BIGINT (`i64`).
    Int,
    /// A boolean (TINYINT(1), BOOLEAN, INTEGER), as a 0/1 BIGINT (`i64`).
    Flag,
    /// A string column (`String`): PostgreSQL casts it to text; MySQL and SQLite send it as it is.
    Text,
    /// A string the server may otherwise send as bytes (catalog names, `migrate_version`): cast to
    /// text on MySQL as well.
    Char,
    /// A timestamp without time zone (`NaiveDateTime`).
    Time,
    /// A timestamp as text (`String`), `YYYY-MM-DD HH:MM:SS[.ffffff]` whatever the session's date
    /// style, for a reader that must survive values sqlx cannot decode (MariaDB's zero dates come
    /// as `0000-00-00 00:00:00`, PostgreSQL's `infinity` as `infinity`).
    TimeText,
}

/// One value per backend, for what cannot be composed from the vocabulary (a schema file written
/// for each backend); `Dialect::pick` chooses.
#[derive(Debug, Clone, Copy)]
pub struct PerBackend<T> {
    pub mysql: T,
    pub postgres: T,
    pub sqlite: T,
}

/// The SQL of one backend. Cheap to copy; get it from `Db::dialect()` or `Tx::dialect()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect(Backend);

impl Dialect {
    pub fn of(backend: Backend) -> Dialect {
        Dialect(backend)
    }

    /// Every dialect, for tests that check a statement on each.
    pub fn all() -> [Dialect; 3] {
        [Dialect(Backend::MySql), Dialect(Backend::Postgres), Dialect(Backend::Sqlite)]
    }

    /// `expr` cast so that it decodes `as_` here (the bare `expr` where nothing is needed).
    pub fn cast(self, as_: Cast, expr: &str) -> String {
        match (self.0, as_) {
            (Backend::MySql, Cast::Int | Cast::Flag) => format!("CAST({expr} AS SIGNED)"),
            (Backend::MySql, Cast::Char) => format!("CAST({expr} AS CHAR)"),
            (Backend::Postgres, Cast::Int) => format!("{expr}::bigint"),
            (Backend::Postgres, Cast::Flag) => format!("{expr}::int::bigint"),
            (Backend::Postgres, Cast::Text | Cast::Char) => format!("{expr}::text"),
            (Backend::Postgres, Cast::Time) => format!("{expr}::timestamp"),
            (Backend::MySql, Cast::TimeText) => format!("CAST({expr} AS CHAR)"),
            // the text output of a timestamp follows the session's DateStyle: to_char does not
            // (and gives no text for infinity, which ::text names)
            (Backend::Postgres, Cast::TimeText) => format!(
                "CASE WHEN isfinite({expr}::timestamp) THEN to_char({expr}::timestamp, 'YYYY-MM-DD HH24:MI:SS.US') ELSE {expr}::text END"
            ),
            _ => expr.to_string(),
        }
    }

    /// Column `name` cast as `as_` for a select list, still called `name` (`AS name` only where the
    /// cast changed it).
    pub fn column(self, name: &str, as_: Cast) -> String {
        named(self.cast(as_, name), name)
    }

    /// A nullable boolean column `name` as a 0/1 BIGINT, NULL read as 0, called `name`.
    pub fn flag_or_false(self, name: &str) -> String {
        let no = if self.0 == Backend::Postgres { "false" } else { "0" };
        format!("{} AS {name}", self.cast(Cast::Flag, &format!("COALESCE({name}, {no})")))
    }

    /// An identifier quoted (a column called `key` or `binary`).
    pub fn quote(self, ident: &str) -> String {
        match self.0 {
            Backend::MySql => format!("`{ident}`"),
            Backend::Postgres | Backend::Sqlite => format!("\"{ident}\""),
        }
    }

    /// The server's clock in UTC, as a timestamp without time zone.
    pub fn utc_now(self) -> &'static str {
        match self.0 {
            Backend::MySql => "UTC_TIMESTAMP()",
            Backend::Postgres => "(now() AT TIME ZONE 'UTC')::timestamp",
            Backend::Sqlite => "datetime('now')",
        }
    }

    /// The column type of a timestamp without time zone, for CREATE TABLE.
    pub fn timestamp_type(self) -> &'static str {
        match self.0 {
            Backend::Postgres => "TIMESTAMP",
            Backend::MySql | Backend::Sqlite => "DATETIME",
        }
    }

    /// A timestamp to the microsecond (MySQL's DATETIME keeps whole seconds: two runs started in
    /// one second could not be told apart by their start, and "the newest run" was either of them).
    pub fn precise_timestamp_type(self) -> &'static str {
        match self.0 {
            Backend::MySql => "DATETIME(6)",
            _ => self.timestamp_type(),
        }
    }

    /// The column type of text of any length (a JSON record), for CREATE TABLE.
    pub fn long_text_type(self) -> &'static str {
        match self.0 {
            Backend::MySql => "LONGTEXT",
            Backend::Postgres | Backend::Sqlite => "TEXT",
        }
    }

    /// An `id` column's type and key whose values the database assigns, for CREATE TABLE.
    pub fn serial_primary_key(self) -> &'static str {
        match self.0 {
            Backend::MySql => "INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY",
            Backend::Postgres => "SERIAL PRIMARY KEY",
            Backend::Sqlite => "INTEGER PRIMARY KEY",
        }
    }

    /// Whether DDL commits the open transaction (MySQL/MariaDB), so a CREATE TABLE cannot be part of
    /// an all-or-nothing load and goes before it.
    pub fn ddl_commits(self) -> bool {
        self.0 == Backend::MySql
    }

    /// After rows were inserted with their `id`s given, the statement that moves `table`'s id
    /// counter past them: PostgreSQL's sequence does not follow explicit ids (None elsewhere:
    /// AUTO_INCREMENT and SQLite's rowid do).
    pub fn counter_past_ids(self, table: &str) -> Option<String> {
        (self.0 == Backend::Postgres).then(|| {
            format!(
                "SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
            )
        })
    }

    /// The names of the tables of the connected database (its current schema on PostgreSQL).
    pub fn table_names_sql(self) -> &'static str {
        match self.0 {
            Backend::MySql => {
                "SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = DATABASE()"
            }
            Backend::Postgres => "SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
            Backend::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table'",
        }
    }

    /// The names of the columns of the table bound as the one `?`.
    pub fn column_names_sql(self) -> &'static str {
        match self.0 {
            Backend::MySql => "SELECT CAST(column_name AS CHAR) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?",
            Backend::Postgres => "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
            Backend::Sqlite => "SELECT name FROM pragma_table_info(?)",
        }
    }

    /// This backend's value of `per`.
    pub fn pick<T>(self, per: PerBackend<T>) -> T {
        match self.0 {
            Backend::MySql => per.mysql,
            Backend::Postgres => per.postgres,
            Backend::Sqlite => per.sqlite,
        }
    }
}

/// `expr AS name`, or `name` alone when `expr` is it.
fn named(expr: String, name: &str) -> String {
    if expr == name {
        expr
    } else {
        format!("{expr} AS {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MY: Dialect = Dialect(Backend::MySql);
    const PG: Dialect = Dialect(Backend::Postgres);
    const LITE: Dialect = Dialect(Backend::Sqlite);

    /// The three backends' answers, in the order MySQL, PostgreSQL, SQLite.
    fn each<T>(f: impl Fn(Dialect) -> T) -> [T; 3] {
        [f(MY), f(PG), f(LITE)]
    }

    #[test]
    fn casts() {
        assert_eq!(each(|d| d.cast(Cast::Int, "f.id")), ["CAST(f.id AS SIGNED)", "f.id::bigint", "f.id"]);
        assert_eq!(
            each(|d| d.cast(Cast::Flag, "deleted")),
            ["CAST(deleted AS SIGNED)", "deleted::int::bigint", "deleted"]
        );
        assert_eq!(each(|d| d.cast(Cast::Text, "p.uuid")), ["p.uuid", "p.uuid::text", "p.uuid"]);
        assert_eq!(
            each(|d| d.cast(Cast::Char, "repository_id")),
            ["CAST(repository_id AS CHAR)", "repository_id::text", "repository_id"]
        );
        assert_eq!(each(|d| d.cast(Cast::Time, "updated_at")), ["updated_at", "updated_at::timestamp", "updated_at"]);
        assert_eq!(
            each(|d| d.cast(Cast::TimeText, "t")),
            [
                "CAST(t AS CHAR)",
                "CASE WHEN isfinite(t::timestamp) THEN to_char(t::timestamp, 'YYYY-MM-DD HH24:MI:SS.US') ELSE t::text END",
                "t"
            ]
        );
    }

    #[test]
    fn columns_keep_their_name() {
        assert_eq!(each(|d| d.column("id", Cast::Int)), ["CAST(id AS SIGNED) AS id", "id::bigint AS id", "id"]);
        assert_eq!(
            each(|d| d.column("deleted", Cast::Flag)),
            ["CAST(deleted AS SIGNED) AS deleted", "deleted::int::bigint AS deleted", "deleted"]
        );
        assert_eq!(each(|d| d.column("status", Cast::Text)), ["status", "status::text AS status", "status"]);
        assert_eq!(
            each(|d| d.column("updated_at", Cast::Time)),
            ["updated_at", "updated_at::timestamp AS updated_at", "updated_at"]
        );
        assert_eq!(
            each(|d| d.flag_or_false("maintenance")),
            [
                "CAST(COALESCE(maintenance, 0) AS SIGNED) AS maintenance",
                "COALESCE(maintenance, false)::int::bigint AS maintenance",
                "COALESCE(maintenance, 0) AS maintenance",
            ]
        );
    }

    #[test]
    fn identifiers_and_the_clock() {
        assert_eq!(each(|d| d.quote("key")), ["`key`", "\"key\"", "\"key\""]);
        assert_eq!(
            each(|d| d.utc_now()),
            ["UTC_TIMESTAMP()", "(now() AT TIME ZONE 'UTC')::timestamp", "datetime('now')"]
        );
    }

    #[test]
    fn ddl() {
        assert_eq!(each(|d| d.timestamp_type()), ["DATETIME", "TIMESTAMP", "DATETIME"]);
        assert_eq!(each(|d| d.long_text_type()), ["LONGTEXT", "TEXT", "TEXT"]);
        assert_eq!(
            each(|d| d.serial_primary_key()),
            ["INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY", "SERIAL PRIMARY KEY", "INTEGER PRIMARY KEY"]
        );
        assert_eq!(each(|d| d.ddl_commits()), [true, false, false]);
        assert_eq!(
            each(|d| d.counter_past_ids("bm_nodes")),
            [
                None,
                Some("SELECT setval(pg_get_serial_sequence('bm_nodes', 'id'), COALESCE((SELECT MAX(id) FROM bm_nodes), 0) + 1, false)".into()),
                None,
            ]
        );
    }

    #[test]
    fn catalog() {
        assert_eq!(
            each(|d| d.table_names_sql()),
            [
                "SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = DATABASE()",
                "SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                "SELECT name FROM sqlite_master WHERE type = 'table'",
            ]
        );
        assert_eq!(
            each(|d| d.column_names_sql()),
            [
                "SELECT CAST(column_name AS CHAR) FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?",
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
                "SELECT name FROM pragma_table_info(?)",
            ]
        );
    }

    #[test]
    fn pick_and_all() {
        let per = PerBackend { mysql: "my", postgres: "pg", sqlite: "lite" };
        assert_eq!(each(|d| d.pick(per)), ["my", "pg", "lite"]);
        assert_eq!(Dialect::all(), [MY, PG, LITE]);
        assert_eq!(Dialect::of(Backend::Postgres), PG);
    }
}
