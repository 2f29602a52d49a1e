//! Connections: one concrete sqlx pool per backend behind `Pool`, opened from a `DbUrl` (`Db::connect`,
//! with the `Access` it is for). Sources are opened read-only at the session level as a second guard
//! beside SELECT-only grants; targets wait a bounded time for locks.

use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlSslMode};
use sqlx::pool::PoolOptions;
use sqlx::postgres::{PgConnectOptions, PgPool, PgSslMode};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool};
use sqlx::{Connection, Database, Executor};

use crate::core::db::dialect::Dialect;
use crate::core::db::error::{classify, connect_error, no_answer, no_quorum, DbError};
use crate::core::db::galera::{self, Galera};
use crate::core::db::timeouts::{lock_timeout_s, CONNECT_TIMEOUT};
use crate::core::db::url::{Backend, DbUrl};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Sources: nova_bm and the Nova DB are only ever read.
    ReadOnly,
    /// Targets: an SQLite file that does not exist is an error, never created (a typo must not
    /// look like an empty Ironic).
    ReadWrite,
    /// Read-write, creating a missing SQLite file: only for databases we build (demo, tests).
    Create,
}

/// The concrete pool of each backend. Only `db/` matches on it: use the methods of `Db`.
#[derive(Clone, Debug)]
pub enum Pool {
    MySql(MySqlPool),
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// An open database: the pool, the URL it came from, and what the server said it is. Queries go
/// through its methods (`fetch_all`, `fetch_map`, `fetch_scalar`, `fetch`, `execute`, `begin`, ...).
#[derive(Clone, Debug)]
pub struct Db {
    pub(super) pool: Pool,
    pub url: DbUrl,
    pub server_version: String,
    /// Time to open the first connection and ask the server's version.
    pub latency: Duration,
    /// MySQL/MariaDB: the server's `max_allowed_packet` (read at connect), which no statement may pass.
    pub max_packet: Option<u64>,
    /// A MySQL target that is a Galera node (galera.rs): its cluster status and write-set limits.
    pub galera: Option<Galera>,
}

/// (major, minor) of a MariaDB server, from `server_version` ("MariaDB 10.11.6-MariaDB-0+deb12u1").
fn mariadb_version(server_version: &str) -> Option<(u32, u32)> {
    let v = server_version.strip_prefix("MariaDB ")?;
    // a MySQL-compatible prefix some builds report first: "5.5.5-10.11.6-MariaDB"
    let v = v.strip_prefix("5.5.5-").unwrap_or(v);
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// User, password and database of the URL onto a server backend's options.
fn with_login<O>(
    mut o: O,
    url: &DbUrl,
    user: fn(O, &str) -> O,
    password: fn(O, &str) -> O,
    database: fn(O, &str) -> O,
) -> O {
    if let Some(u) = &url.user {
        o = user(o, u);
    }
    if let Some(p) = &url.password {
        o = password(o, p.expose());
    }
    if let Some(d) = &url.database {
        o = database(o, d);
    }
    o
}

static MYSQL_LOCKS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
static PG_LOCKS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The session statement bounding lock waits (built once: the timeout is read once per process).
fn lock_setting(cell: &'static std::sync::OnceLock<String>, sql: fn(u64) -> String) -> &'static str {
    cell.get_or_init(|| sql(lock_timeout_s())).as_str()
}

/// What every backend's pool shares: a lazy pool running `session` on each new connection, after
/// one direct connection has proved the server answers (see `probe`).
async fn open_pool<DB: Database>(
    options: <DB::Connection as Connection>::Options,
    max_connections: u32,
    session: Vec<&'static str>,
    url: &DbUrl,
) -> Result<sqlx::Pool<DB>, DbError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    let local = url.backend == Backend::Sqlite;
    let pool = PoolOptions::<DB>::new()
        .max_connections(max_connections)
        .acquire_timeout(CONNECT_TIMEOUT)
        // a local file's connections need no reaping, and without idle timeout and lifetime sqlx
        // spawns no maintenance task: seen spinning for ever in a runtime's shutdown while a pool
        // handle was still alive (a test's runtime never finished dropping)
        .idle_timeout(if local { None } else { Some(Duration::from_secs(600)) })
        .max_lifetime(if local { None } else { Some(Duration::from_secs(1800)) })
        .after_connect(move |c, _| {
            let session = session.clone();
            Box::pin(async move {
                for s in session {
                    c.execute(s).await?;
                }
                Ok(())
            })
        })
        .connect_lazy_with(options.clone());
    probe::<DB::Connection>(&options, url).await?;
    Ok(pool)
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
        // UTC for every session; sources read-only, targets with a bounded wait for locks
        let session = |utc: &'static str, ro: &'static str, locks: &'static str| {
            if read_only {
                vec![utc, ro]
            } else {
                vec![utc, locks]
            }
        };
        let mut galera = None;
        let pool = match url.backend {
            Backend::MySql => {
                let mut o = MySqlConnectOptions::new().port(url.port);
                o = if url.host.starts_with('/') { o.socket(&url.host) } else { o.host(&url.host) };
                o = with_login(
                    o,
                    url,
                    MySqlConnectOptions::username,
                    MySqlConnectOptions::password,
                    MySqlConnectOptions::database,
                );
                if let Some(m) = url.param("ssl-mode") {
                    o = o.ssl_mode(MySqlSslMode::from_str(m).map_err(classify)?);
                }
                if let Some(ca) = url.param("ssl-ca") {
                    o = o.ssl_ca(ca);
                }
                let mut session = session(
                    "SET SESSION time_zone = '+00:00'",
                    "SET SESSION TRANSACTION READ ONLY",
                    lock_setting(&MYSQL_LOCKS, |s| {
                        format!("SET SESSION innodb_lock_wait_timeout = {s}, lock_wait_timeout = {s}")
                    }),
                );
                // a Galera node (it answers like any server, so this also proves it answers)
                galera = match tokio::time::timeout(CONNECT_TIMEOUT, galera::detect(&o, url)).await {
                    Ok(g) => g?,
                    Err(_) => return Err(no_answer(url)),
                };
                if let Some(g) = galera.as_ref().filter(|g| !g.is_primary()) {
                    return Err(no_quorum(url, format!("its wsrep_cluster_status is {}", g.cluster_status)));
                }
                if galera.is_some() && !read_only {
                    session.push(galera::CAUSAL_READS);
                }
                Pool::MySql(open_pool(o, max_connections, session, url).await?)
            }
            Backend::Postgres => {
                let mut o = PgConnectOptions::new_without_pgpass().port(url.port).host(&url.host);
                o = with_login(
                    o,
                    url,
                    PgConnectOptions::username,
                    PgConnectOptions::password,
                    PgConnectOptions::database,
                );
                if let Some(m) = url.param("sslmode") {
                    o = o.ssl_mode(PgSslMode::from_str(m).map_err(classify)?);
                }
                if let Some(ca) = url.param("sslrootcert") {
                    o = o.ssl_root_cert(ca);
                }
                o = o.application_name("bm2ironic");
                let session = session(
                    "SET TIME ZONE 'UTC'",
                    "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
                    lock_setting(&PG_LOCKS, |s| format!("SET lock_timeout = '{s}s'")),
                );
                Pool::Postgres(open_pool(o, max_connections, session, url).await?)
            }
            Backend::Sqlite => {
                let path = url.path.clone().unwrap_or_default();
                if access != Access::Create && !path.exists() {
                    return Err(DbError::NoSuchFile { what });
                }
                let o = SqliteConnectOptions::new()
                    .filename(&path)
                    .read_only(read_only)
                    .create_if_missing(access == Access::Create)
                    .busy_timeout(if read_only { CONNECT_TIMEOUT } else { Duration::from_secs(lock_timeout_s()) })
                    .foreign_keys(true);
                // one writer: SQLite locks the whole file
                let max = if read_only { max_connections } else { 1 };
                Pool::Sqlite(open_pool(o, max, vec![], url).await?)
            }
        };
        let version_sql = match url.backend {
            Backend::MySql => "SELECT CAST(VERSION() AS CHAR)",
            Backend::Postgres => "SELECT current_setting('server_version')",
            Backend::Sqlite => "SELECT sqlite_version()",
        };
        let mut db = Db {
            pool,
            url: url.clone(),
            server_version: String::new(),
            latency: Duration::ZERO,
            max_packet: None,
            galera,
        };
        let version: String = db.fetch_scalar(version_sql, vec![]).await?;
        if url.backend == Backend::MySql {
            let limit: i64 = db.fetch_scalar("SELECT CAST(@@max_allowed_packet AS SIGNED)", vec![]).await?;
            db.max_packet = u64::try_from(limit).ok();
        }
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

    /// How this backend spells what differs (casts, quoting, DDL types, ...).
    pub fn dialect(&self) -> Dialect {
        Dialect::of(self.backend())
    }

    /// Refuses (with `message`) a database that is not SQLite: for what only ever builds an embedded
    /// file (the demo's databases).
    pub fn require_sqlite(&self, message: &str) -> Result<(), DbError> {
        if self.backend() == Backend::Sqlite {
            return Ok(());
        }
        Err(DbError::Other { what: self.url.describe(), message: message.into() })
    }

    /// Whether `INSERT ... RETURNING` works here: PostgreSQL, SQLite, MariaDB from 10.5 (not MySQL).
    /// `BM2IRONIC_NO_RETURNING=1` makes a MariaDB behave as MySQL (the tests of MySQL's path).
    pub fn insert_returning(&self) -> bool {
        if self.backend() == Backend::MySql && std::env::var_os("BM2IRONIC_NO_RETURNING").is_some_and(|v| v == "1") {
            return false;
        }
        match self.backend() {
            Backend::Postgres | Backend::Sqlite => true,
            Backend::MySql => mariadb_version(&self.server_version).is_some_and(|v| v >= (10, 5)),
        }
    }

    /// Wraps a query error with what it was talking to (and scrubs the password, in case).
    pub fn error(&self, e: sqlx::Error) -> DbError {
        self.statement_error(e, 0)
    }

    /// Bytes one statement may have on this server: MySQL/MariaDB's `max_allowed_packet` less a
    /// margin for the protocol, else a bound of our own (PostgreSQL and SQLite have no such limit).
    pub fn max_statement_bytes(&self) -> usize {
        const OWN_BOUND: usize = 16 * 1024 * 1024;
        match self.max_packet {
            Some(p) => (p as usize).saturating_sub(64 * 1024).clamp(64 * 1024, OWN_BOUND),
            None => OWN_BOUND,
        }
    }

    /// Like `error`, for a statement of `bytes` bytes: a connection dropped while sending one larger
    /// than `max_allowed_packet` is reported as that, not as an unreachable server.
    pub(super) fn statement_error(&self, e: sqlx::Error, bytes: usize) -> DbError {
        match (classify(&self.url, e), self.max_packet) {
            (DbError::ConnectionLost { what, .. }, Some(limit)) if bytes as u64 > limit => {
                DbError::PacketTooLarge { what, bytes, limit }
            }
            (DbError::PacketTooLarge { what, limit, .. }, _) => DbError::PacketTooLarge { what, bytes, limit },
            (DbError::ConnectionLost { what, reason, .. }, Some(limit)) => DbError::ConnectionLost {
                what,
                reason,
                cause: format!(
                    "the server went away (restarted, ended the session, or its wait_timeout passed), or a statement was larger than its max_allowed_packet ({limit} bytes); what the open transaction wrote is rolled back"
                ),
            },
            (e, _) => e,
        }
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
        Err(_) => Err(no_answer(url)),
        Ok(Err(e)) => Err(connect_error(url, e)),
        Ok(Ok(c)) => {
            let _ = c.close().await;
            Ok(())
        }
    }
}

impl crate::core::closing::Closes for Db {
    async fn close_now(self) {
        self.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that closes the connection at once (before the handshake): "cannot reach", never
    /// "closed the connection during a statement ... rolled back" (nothing had connected).
    #[tokio::test]
    async fn a_connection_closed_before_the_login_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                drop(s);
            }
        });
        for scheme in ["mysql", "postgresql"] {
            let url = DbUrl::parse(&format!("{scheme}://ironic:pw1234@127.0.0.1:{port}/ironic")).unwrap();
            let e = Db::connect(&url, Access::ReadWrite).await.map(|_| ()).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, DbError::Unreachable { .. }), "{scheme}: {text}");
            assert!(text.starts_with("cannot reach") && !text.contains("rolled back"), "{scheme}: {text}");
        }
    }

    #[test]
    fn mariadb_versions() {
        assert_eq!(mariadb_version("MariaDB 10.11.6-MariaDB-0+deb12u1"), Some((10, 11)));
        assert_eq!(mariadb_version("MariaDB 5.5.5-10.4.32-MariaDB"), Some((10, 4)));
        assert_eq!(mariadb_version("MariaDB 11.4.2-MariaDB"), Some((11, 4)));
        assert_eq!(mariadb_version("MySQL 8.0.36"), None);
        assert_eq!(mariadb_version("MariaDB garbage"), None);
    }
}
