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

impl Row {
    /// The column decoded as `T` exactly as the backend's driver decodes it (no widening).
    pub fn get<T: Decodable, I: ColumnRef>(&self, col: I) -> R<T> {
        match &self.0 {
            Inner::MySql(r) => r.try_get(col),
            Inner::Postgres(r) => r.try_get(col),
            Inner::Sqlite(r) => r.try_get(col),
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
