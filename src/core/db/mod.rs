//! Databases: the one place that knows there are three backends (MySQL/MariaDB, PostgreSQL, SQLite).
//! Connections are opened in pool.rs, queries run through `Db` and `Tx` (exec.rs) and come back as
//! `Row`s (row.rs), errors are `DbError`s (error.rs); the SQL that differs per backend is written with
//! a `Dialect` (dialect.rs) and the catalog is asked through catalog.rs: no module outside `db/`
//! matches on the backend.
//! This file only declares the modules and re-exports what callers name as `crate::core::db::X`.

mod catalog;
mod dialect;
mod error;
mod exec;
pub mod galera;
mod pool;
pub mod row;
pub mod secret;
pub mod sql;
mod timeouts;
pub mod url;

pub use crate::core::db::catalog::IdCounter;
pub use crate::core::db::dialect::{Cast, Dialect, PerBackend};
pub use crate::core::db::error::DbError;
pub use crate::core::db::exec::Tx;
pub use crate::core::db::galera::Galera;
pub use crate::core::db::pool::{Access, Db, Pool};
pub use crate::core::db::row::Row;
pub use crate::core::db::sql::{Stmt, Val};
pub use crate::core::db::timeouts::{lock_timeout_s, CONNECT_TIMEOUT};
