//! `DbError`: what went wrong with a database, in words an operator can act on (host, port, user,
//! database; never the password), and `classify`, which turns sqlx's errors into it.

use crate::core::db::timeouts::{lock_timeout_s, CONNECT_TIMEOUT};
use crate::core::db::url::{Backend, DbUrl};

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
    #[error("{what}: another session held a lock we waited for more than {seconds} s, so the statement was abandoned and its transaction rolled back: nothing of it was written (is Ironic, or another bm2ironic, using this database? MySQL: SHOW PROCESSLIST; PostgreSQL: SELECT * FROM pg_stat_activity; stop it, then run again)")]
    LockTimeout { what: String, seconds: u64 },
    /// The server closed a connection that was working, in the middle of a statement.
    #[error("{what} closed the connection during a statement ({reason}): {cause}")]
    ConnectionLost { what: String, reason: String, cause: String },
    /// MySQL/MariaDB refused (or dropped the connection on) a statement larger than its limit.
    #[error("{what}: a statement of {bytes} bytes is larger than the server's max_allowed_packet ({limit} bytes); raise it on the server (bm2ironic sizes its statements below it, so please report this)")]
    PacketTooLarge { what: String, bytes: usize, limit: u64 },
    #[error("{what}: the Galera node at {endpoint} is not part of a primary component (no quorum; {state}): connect to a node of the primary component, or restore quorum")]
    NoQuorum { what: String, endpoint: String, state: String },
    #[error("{what}: the transaction was rolled back by a write conflict (ERROR 1213: a deadlock, or on Galera a certification failure: another session wrote the same rows at the same time)")]
    Conflict { what: String },
    #[error("{what}: the load is one transaction, so one Galera write set, and it is too large for this cluster ({detail}); nothing was written. Raise wsrep_max_ws_rows / wsrep_max_ws_size on every node (SET GLOBAL, and in the configuration), then run again")]
    WriteSetTooLarge { what: String, detail: String },
    #[error("{what}: the disk holding the database is full ({detail}); the statement failed and its transaction was rolled back: nothing of it was written (free space on the server, then run again)")]
    DiskFull { what: String, detail: String },
    #[error("{what}: {message}")]
    Other { what: String, message: String },
}

pub(super) fn no_answer(url: &DbUrl) -> DbError {
    DbError::Unreachable { what: url.describe(), reason: format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()) }
}

pub(super) fn no_quorum(url: &DbUrl, state: String) -> DbError {
    DbError::NoQuorum { what: url.describe(), endpoint: url.endpoint(), state }
}

/// What a failed connect means: as [`classify`], but a connection closed before the login finished
/// is "cannot reach" (nothing had connected, no statement ran, nothing was rolled back).
pub(super) fn connect_error(url: &DbUrl, e: sqlx::Error) -> DbError {
    match classify(url, e) {
        DbError::ConnectionLost { what, reason, .. } => DbError::Unreachable {
            what,
            reason: format!(
                "{reason}: the server closed the connection before the login finished (the wrong port or protocol, TLS, a proxy, or the server's max_connections)"
            ),
        },
        other => other,
    }
}

/// What a failed sqlx call means, for an operator.
pub(super) fn classify(url: &DbUrl, e: sqlx::Error) -> DbError {
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
                    1205 => return DbError::LockTimeout { what, seconds: lock_timeout_s() },
                    // ER_NET_PACKET_TOO_LARGE (the size is filled in by `statement_error`)
                    1153 => return DbError::PacketTooLarge { what, bytes: 0, limit: 0 },
                    1213 => return DbError::Conflict { what },
                    // ER_RECORD_FILE_FULL, ER_DISK_FULL
                    1114 | 1021 => return DbError::DiskFull { what, detail: url.scrub(my.message()) },
                    // WSREP has not yet prepared node for application use
                    1047 if my.message().contains("WSREP") => {
                        return no_quorum(url, "ERROR 1047: WSREP has not yet prepared node for application use".into())
                    }
                    _ => {}
                }
            }
            match dbe.code().as_deref() {
                Some("28P01") | Some("28000") => return DbError::AccessDenied { what },
                Some("3D000") => return DbError::UnknownDatabase { what, database },
                Some("55P03") => return DbError::LockTimeout { what, seconds: lock_timeout_s() },
                Some("53100") => return DbError::DiskFull { what, detail: url.scrub(dbe.message()) },
                // SQLITE_FULL
                Some("13") if url.backend == Backend::Sqlite => {
                    return DbError::DiskFull { what, detail: url.scrub(dbe.message()) }
                }
                // SQLITE_BUSY after the busy timeout
                Some("5") if url.backend == Backend::Sqlite => {
                    return DbError::LockTimeout { what, seconds: lock_timeout_s() }
                }
                _ => {}
            }
            DbError::Other { what, message: url.scrub(dbe.message()) }
        }
        // a connection that worked, then broke: the server dropped it (not "cannot reach")
        sqlx::Error::Io(io) if dropped(io) => DbError::ConnectionLost {
            what,
            reason: url.scrub(&io_reason(io)),
            cause: "the server went away (restarted, ended the session, or its idle timeout passed); what the open transaction wrote is rolled back".into(),
        },
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

/// An I/O error that means an open connection was closed by the other side.
fn dropped(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof)
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
