//! Connections: one concrete sqlx pool per backend behind `Pool`, opened from a `DbUrl`, with
//! errors that name what to fix (host, port, user, database; never the password).
//! Sources are opened read-only at the session level as a second guard beside SELECT-only grants.

pub mod conf;
pub mod secret;
pub mod sql;
pub mod url;

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions, MySqlSslMode};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use sqlx::Executor;

use crate::core::db::url::{Backend, DbUrl};

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Sources: nova_bm and the Nova DB are only ever read.
    ReadOnly,
    ReadWrite,
}

#[derive(Clone, Debug)]
pub enum Pool {
    MySql(MySqlPool),
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// An open database: the pool, the URL it came from, and what the server said it is.
#[derive(Clone, Debug)]
pub struct Db {
    pub pool: Pool,
    pub url: DbUrl,
    pub server_version: String,
    /// Time to open the first connection and ask the server's version.
    pub latency: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot log in to {what}: access denied (check the user name and password)")]
    AccessDenied { what: String },
    #[error("cannot reach {what}: {reason} (is the server running, and are the host and port right?)")]
    Unreachable { what: String, reason: String },
    #[error("{what}: database '{database}' does not exist")]
    UnknownDatabase { what: String, database: String },
    #[error("{what}: the file does not exist (check the path; a relative sqlite:/// path is taken from the current directory)")]
    NoSuchFile { what: String },
    #[error("{what}: {message}")]
    Other { what: String, message: String },
}

impl Db {
    pub async fn connect(url: &DbUrl, access: Access) -> Result<Db, DbError> {
        Db::connect_with(url, access, 4).await
    }

    pub async fn connect_with(url: &DbUrl, access: Access, max_connections: u32) -> Result<Db, DbError> {
        let started = Instant::now();
        let what = url.describe();
        let classify = |e: sqlx::Error| classify(url, e);
        let read_only = access == Access::ReadOnly;
        let pool = match url.backend {
            Backend::MySql => {
                let mut o = MySqlConnectOptions::new().port(url.port);
                o = if url.host.starts_with('/') { o.socket(&url.host) } else { o.host(&url.host) };
                if let Some(u) = &url.user {
                    o = o.username(u);
                }
                if let Some(p) = &url.password {
                    o = o.password(p.expose());
                }
                if let Some(d) = &url.database {
                    o = o.database(d);
                }
                if let Some(m) = url.param("ssl-mode") {
                    o = o.ssl_mode(MySqlSslMode::from_str(m).map_err(classify)?);
                }
                if let Some(ca) = url.param("ssl-ca") {
                    o = o.ssl_ca(ca);
                }
                let p = MySqlPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .after_connect(move |c, _| {
                        Box::pin(async move {
                            // UTC and strict mode for every session; sources additionally read-only
                            c.execute("SET SESSION time_zone = '+00:00'").await?;
                            if read_only {
                                c.execute("SET SESSION TRANSACTION READ ONLY").await?;
                            }
                            Ok(())
                        })
                    })
                    .connect_lazy_with(o.clone());
                probe::<sqlx::MySqlConnection>(&o, url).await?;
                Pool::MySql(p)
            }
            Backend::Postgres => {
                let mut o = PgConnectOptions::new_without_pgpass().port(url.port).host(&url.host);
                if let Some(u) = &url.user {
                    o = o.username(u);
                }
                if let Some(p) = &url.password {
                    o = o.password(p.expose());
                }
                if let Some(d) = &url.database {
                    o = o.database(d);
                }
                if let Some(m) = url.param("sslmode") {
                    o = o.ssl_mode(PgSslMode::from_str(m).map_err(classify)?);
                }
                if let Some(ca) = url.param("sslrootcert") {
                    o = o.ssl_root_cert(ca);
                }
                o = o.application_name("bm2ironic");
                let p = PgPoolOptions::new()
                    .max_connections(max_connections)
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .after_connect(move |c, _| {
                        Box::pin(async move {
                            c.execute("SET TIME ZONE 'UTC'").await?;
                            if read_only {
                                c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY").await?;
                            }
                            Ok(())
                        })
                    })
                    .connect_lazy_with(o.clone());
                probe::<sqlx::PgConnection>(&o, url).await?;
                Pool::Postgres(p)
            }
            Backend::Sqlite => {
                let path = url.path.clone().unwrap_or_default();
                if read_only && !path.exists() {
                    return Err(DbError::NoSuchFile { what });
                }
                let o = SqliteConnectOptions::new()
                    .filename(&path)
                    .read_only(read_only)
                    .create_if_missing(!read_only)
                    .busy_timeout(CONNECT_TIMEOUT)
                    .foreign_keys(true);
                let p = SqlitePoolOptions::new()
                    .max_connections(if read_only { max_connections } else { 1 })
                    .acquire_timeout(CONNECT_TIMEOUT)
                    .connect_lazy_with(o.clone());
                probe::<sqlx::SqliteConnection>(&o, url).await?;
                Pool::Sqlite(p)
            }
        };
        let version_sql = match url.backend {
            Backend::MySql => "SELECT CAST(VERSION() AS CHAR)",
            Backend::Postgres => "SELECT current_setting('server_version')",
            Backend::Sqlite => "SELECT sqlite_version()",
        };
        let mut db = Db { pool, url: url.clone(), server_version: String::new(), latency: Duration::ZERO };
        let version: String = db.scalar_string(version_sql).await.map_err(classify)?;
        db.server_version = match url.backend {
            Backend::Postgres => format!("PostgreSQL {version}"),
            Backend::Sqlite => format!("SQLite {version}"),
            Backend::MySql if version.to_ascii_lowercase().contains("mariadb") => format!("MariaDB {version}"),
            Backend::MySql => format!("MySQL {version}"),
        };
        db.latency = started.elapsed();
        tracing::info!(url = %url.redacted(), server = %db.server_version, ?access, latency_ms = db.latency.as_millis() as u64, "connected");
        Ok(db)
    }

    pub fn backend(&self) -> Backend {
        self.url.backend
    }

    async fn scalar_string(&self, sql: &'static str) -> Result<String, sqlx::Error> {
        Ok(match &self.pool {
            Pool::MySql(p) => sqlx::query_scalar::<_, String>(sql).fetch_one(p).await?,
            Pool::Postgres(p) => sqlx::query_scalar::<_, String>(sql).fetch_one(p).await?,
            Pool::Sqlite(p) => sqlx::query_scalar::<_, String>(sql).fetch_one(p).await?,
        })
    }

    /// Names of the tables in the connected database (current schema on PostgreSQL).
    pub async fn table_names(&self) -> Result<Vec<String>, DbError> {
        let r =
            match &self.pool {
                Pool::MySql(p) => sqlx::query_scalar::<_, String>(
                    "SELECT CAST(table_name AS CHAR) FROM information_schema.tables WHERE table_schema = DATABASE()",
                )
                .fetch_all(p)
                .await,
                Pool::Postgres(p) => {
                    sqlx::query_scalar::<_, String>(
                        "SELECT tablename::text FROM pg_catalog.pg_tables WHERE schemaname = current_schema()",
                    )
                    .fetch_all(p)
                    .await
                }
                Pool::Sqlite(p) => {
                    sqlx::query_scalar::<_, String>("SELECT name FROM sqlite_master WHERE type = 'table'")
                        .fetch_all(p)
                        .await
                }
            };
        r.map_err(|e| self.error(e))
    }

    /// Wraps a query error with what it was talking to (and scrubs the password, in case).
    pub fn error(&self, e: sqlx::Error) -> DbError {
        classify(&self.url, e)
    }

    pub async fn close(&self) {
        match &self.pool {
            Pool::MySql(p) => p.close().await,
            Pool::Postgres(p) => p.close().await,
            Pool::Sqlite(p) => p.close().await,
        }
    }
}

/// Opens one connection directly: a pool retries until its timeout and then reports only "timed
/// out", hiding "connection refused" or "access denied" that the operator needs to see at once.
async fn probe<C: sqlx::Connection>(options: &<C as sqlx::Connection>::Options, url: &DbUrl) -> Result<(), DbError> {
    match tokio::time::timeout(CONNECT_TIMEOUT, C::connect_with(options)).await {
        Err(_) => Err(DbError::Unreachable {
            what: url.describe(),
            reason: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }),
        Ok(Err(e)) => Err(classify(url, e)),
        Ok(Ok(c)) => {
            let _ = c.close().await;
            Ok(())
        }
    }
}

fn classify(url: &DbUrl, e: sqlx::Error) -> DbError {
    let what = url.describe();
    let database = url.database.clone().unwrap_or_default();
    match &e {
        sqlx::Error::Database(dbe) => {
            if let Some(my) = dbe.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                match my.number() {
                    1045 | 1698 => return DbError::AccessDenied { what },
                    1044 => {
                        return DbError::Other {
                            what,
                            message: format!("this user may not use database '{database}' (ask for a grant)"),
                        }
                    }
                    1049 => return DbError::UnknownDatabase { what, database },
                    _ => {}
                }
            }
            match dbe.code().as_deref() {
                Some("28P01") | Some("28000") => return DbError::AccessDenied { what },
                Some("3D000") => return DbError::UnknownDatabase { what, database },
                _ => {}
            }
            DbError::Other { what, message: url.scrub(dbe.message()) }
        }
        sqlx::Error::Io(io) => DbError::Unreachable { what, reason: url.scrub(&io_reason(io)) },
        sqlx::Error::PoolTimedOut => {
            DbError::Unreachable { what, reason: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()) }
        }
        sqlx::Error::Tls(t) => DbError::Other { what, message: format!("TLS failed: {}", url.scrub(&t.to_string())) },
        other => {
            let msg = url.scrub(&other.to_string());
            // SQLite reports a missing or unreadable file this way
            if url.backend == Backend::Sqlite && msg.contains("unable to open database file") {
                return DbError::NoSuchFile { what };
            }
            DbError::Other { what, message: msg }
        }
    }
}

fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => "connection refused".into(),
        TimedOut => "connection timed out".into(),
        NotFound => format!("not found ({e})"),
        _ => e.to_string(),
    }
}
