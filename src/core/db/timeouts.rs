//! How long bm2ironic waits for a server: to answer at all (`CONNECT_TIMEOUT`), and for a lock
//! another session holds (`lock_timeout_s`). The connections set them and the errors name them.

use std::time::Duration;

/// How long a server has to answer a connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a writing session waits for a lock another session holds (a row, a table's metadata)
/// before it gives up with `DbError::LockTimeout` (MySQL's own default for a table lock is a
/// year): 30 s, or `BM2IRONIC_LOCK_TIMEOUT` seconds (1-3600).
pub fn lock_timeout_s() -> u64 {
    std::env::var("BM2IRONIC_LOCK_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| (1..=3600).contains(s))
        .unwrap_or(30)
}
