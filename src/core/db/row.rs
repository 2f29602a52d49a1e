//! A result row of any backend, with typed getters by column name (or position) so that callers
//! never match on the backend. The getters return sqlx's own decode error (the caller wraps it with
//! `Db::error`, or names the bad column itself, as the nova_bm reader does).

use chrono::NaiveDateTime;
use sqlx::mysql::{MySql, MySqlRow};
use sqlx::postgres::{PgRow, Postgres};
use sqlx::sqlite::{Sqlite, SqliteRow};
use sqlx::{ColumnIndex, Decode, Row as _, Type};

/// A Rust type every backend can decode a column into (i64, String, NaiveDateTime, bool, their
/// `Option`s, ...): the strict, backend-native decoding of [`Row::get`].
pub trait Decodable:
    for<'r> Decode<'r, MySql>
    + Type<MySql>
    + for<'r> Decode<'r, Postgres>
    + Type<Postgres>
    + for<'r> Decode<'r, Sqlite>
    + Type<Sqlite>
{
}

impl<T> Decodable for T where
    T: for<'r> Decode<'r, MySql>
        + Type<MySql>
        + for<'r> Decode<'r, Postgres>
        + Type<Postgres>
        + for<'r> Decode<'r, Sqlite>
        + Type<Sqlite>
{
}

/// A column name (`&str`) or position (`usize`).
pub trait ColumnRef: ColumnIndex<MySqlRow> + ColumnIndex<PgRow> + ColumnIndex<SqliteRow> + Copy {}

impl<I> ColumnRef for I where I: ColumnIndex<MySqlRow> + ColumnIndex<PgRow> + ColumnIndex<SqliteRow> + Copy {}

/// One row, whatever the backend.
pub struct Row(Inner);

enum Inner {
    MySql(MySqlRow),
    Postgres(PgRow),
    Sqlite(SqliteRow),
}

impl From<MySqlRow> for Row {
    fn from(r: MySqlRow) -> Row {
        Row(Inner::MySql(r))
    }
}

impl From<PgRow> for Row {
    fn from(r: PgRow) -> Row {
        Row(Inner::Postgres(r))
    }
}

impl From<SqliteRow> for Row {
    fn from(r: SqliteRow) -> Row {
        Row(Inner::Sqlite(r))
    }
}

type R<T> = Result<T, sqlx::Error>;

/// What a Rust type is to an operator: "an integer", "text", "a date and time".
fn expected<T>() -> &'static str {
    let t = std::any::type_name::<T>();
    if t.contains("NaiveDateTime") {
        "a date and time"
    } else if ["i64", "i32", "i16", "i8", "u64", "u32"].iter().any(|k| t.contains(k)) {
        "an integer"
    } else if t.contains("String") || t.contains("str") {
        "text"
    } else if t.contains("bool") {
        "a boolean"
    } else if t.contains("f64") || t.contains("f32") {
        "a number"
    } else {
        "another kind of value"
    }
}

impl Row {
    /// The column decoded as `T` exactly as the backend's driver decodes it (no widening). A value
    /// that does not decode is explained in the operator's words, never with Rust's type names
    /// (sqlx says "Rust type `core::option::Option<i64>` ... is not compatible with SQL type
    /// `TEXT`"): `ColumnDecode { index: <column name>, source: "holds the TEXT value 'eight',
    /// expected an integer" }`.
    pub fn get<T: Decodable, I: ColumnRef>(&self, col: I) -> R<T> {
        let r = match &self.0 {
            Inner::MySql(r) => r.try_get(col),
            Inner::Postgres(r) => r.try_get(col),
            Inner::Sqlite(r) => r.try_get(col),
        };
        r.map_err(|e| match e {
            sqlx::Error::ColumnDecode { index, .. } => {
                let (name, found) = self.describe(col).unwrap_or((index, "a value".into()));
                let why = format!("holds {found}, expected {}", expected::<T>());
                sqlx::Error::ColumnDecode { index: name, source: why.into() }
            }
            other => other,
        })
    }

    /// The column's name and what it holds, as an operator reads it: `NULL`, or the SQL type and
    /// the value (shown without control characters, at most 60 characters).
    fn describe<I: ColumnRef>(&self, col: I) -> Option<(String, String)> {
        use sqlx::{Column, TypeInfo, ValueRef};
        fn told<R: sqlx::Row>(r: &R, col: impl ColumnIndex<R>) -> Option<(String, String)>
        where
            usize: ColumnIndex<R>,
            i64: for<'a> Decode<'a, R::Database>,
            String: for<'a> Decode<'a, R::Database>,
        {
            let i = col.index(r).ok()?;
            let name = r.columns().get(i)?.name().to_string();
            let raw = r.try_get_raw(i).ok()?;
            if raw.is_null() {
                return Some((name, "NULL".into()));
            }
            let ty = raw.type_info().name().to_string();
            let integer = ["INT", "SERIAL"].iter().any(|k| ty.to_ascii_uppercase().contains(k));
            let value = if integer {
                r.try_get_unchecked::<i64, usize>(i).ok().map(|v| v.to_string())
            } else {
                r.try_get_unchecked::<String, usize>(i).ok()
            };
            let found = match value {
                Some(v) => {
                    let shown: String = crate::core::text::visible_line(&v).chars().take(60).collect();
                    format!("the {ty} value '{shown}'")
                }
                None => format!("a value of SQL type {ty}"),
            };
            Some((name, found))
        }
        match &self.0 {
            Inner::MySql(r) => told(r, col),
            Inner::Postgres(r) => told(r, col),
            Inner::Sqlite(r) => told(r, col),
        }
    }

    pub fn len(&self) -> usize {
        match &self.0 {
            Inner::MySql(r) => r.len(),
            Inner::Postgres(r) => r.len(),
            Inner::Sqlite(r) => r.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An integer column of any width (BIGINT, INT, SMALLINT: PostgreSQL's SERIAL is a 32-bit INT).
    pub fn opt_i64<I: ColumnRef>(&self, col: I) -> R<Option<i64>> {
        match self.get::<Option<i64>, I>(col) {
            Ok(v) => Ok(v),
            Err(first) => self
                .get::<Option<i32>, I>(col)
                .map(|v| v.map(i64::from))
                .or_else(|_| self.get::<Option<i16>, I>(col).map(|v| v.map(i64::from)))
                .map_err(|_| first),
        }
    }

    pub fn i64<I: ColumnRef>(&self, col: I) -> R<i64> {
        match self.get::<i64, I>(col) {
            Ok(v) => Ok(v),
            Err(first) => self
                .get::<i32, I>(col)
                .map(i64::from)
                .or_else(|_| self.get::<i16, I>(col).map(i64::from))
                .map_err(|_| first),
        }
    }

    /// A boolean column: MySQL TINYINT, PostgreSQL boolean, SQLite integer, or any integer (not 0 is true).
    pub fn opt_bool<I: ColumnRef>(&self, col: I) -> R<Option<bool>> {
        match self.opt_i64(col) {
            Ok(v) => Ok(v.map(|v| v != 0)),
            Err(first) => self.get::<Option<bool>, I>(col).map_err(|_| first),
        }
    }

    pub fn bool<I: ColumnRef>(&self, col: I) -> R<bool> {
        match self.i64(col) {
            Ok(v) => Ok(v != 0),
            Err(first) => self.get::<bool, I>(col).map_err(|_| first),
        }
    }

    pub fn string<I: ColumnRef>(&self, col: I) -> R<String> {
        self.get(col)
    }

    pub fn opt_string<I: ColumnRef>(&self, col: I) -> R<Option<String>> {
        self.get(col)
    }

    pub fn time<I: ColumnRef>(&self, col: I) -> R<NaiveDateTime> {
        self.get(col)
    }

    pub fn opt_time<I: ColumnRef>(&self, col: I) -> R<Option<NaiveDateTime>> {
        self.get(col)
    }
}
