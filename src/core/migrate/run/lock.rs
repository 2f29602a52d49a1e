//! One load or rollback through Ironic's API at a time per target: an exclusive `flock` on
//! `bm2ironic-<target>.lock` in the state directory (`<target>`: a digest of the API's endpoint), held from the moment the target is opened until it is
//! closed (the kernel lets go of it when the process ends, however it ends: a killed run leaves no
//! stale lock). The file names its holder (process, host, command, since when) for the refusal's
//! message. A load into the Ironic database needs none: its transaction holds the target's rows.
//! See docs/runs.md ("One run at a time").

use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use super::dir::checked_dir;
use super::error::RecordError;

/// The lock, held while this value lives.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

impl RunLock {
    /// Takes the lock of the Ironic API at `endpoint` in `state_dir` for `what` (e.g. "migrate --via
    /// api"), or says who holds it.
    pub fn acquire(state_dir: &Path, endpoint: &str, what: &str) -> Result<RunLock, RecordError> {
        use sha2::Digest;
        checked_dir(state_dir, true)?;
        let target = sha2::Sha256::digest(endpoint.trim_end_matches('/').as_bytes());
        let target: String = target.iter().take(6).map(|b| format!("{b:02x}")).collect();
        let path = state_dir.join(format!("bm2ironic-{target}.lock"));
        let err = |e: std::io::Error| RecordError::File { path: path.display().to_string(), reason: e.to_string() };
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(err)?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed
        let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(err(e));
            }
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            let holder = crate::core::text::visible_line(holder.trim()).to_string();
            return Err(RecordError::Locked {
                path: path.display().to_string(),
                holder: if holder.is_empty() { "another bm2ironic process".into() } else { holder },
            });
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let me = format!(
            "bm2ironic {what} (process {} on {}, since {})",
            std::process::id(),
            host.trim(),
            chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
        );
        f.set_len(0).and_then(|_| f.rewind()).and_then(|_| f.write_all(me.as_bytes())).map_err(err)?;
        tracing::info!(lock = %path.display(), "{me}: lock taken");
        Ok(RunLock { _file: f })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_named_until_the_first_lets_go() {
        let d = tempfile::tempdir().unwrap();
        let first = RunLock::acquire(d.path(), "http://127.0.0.1:6385", "migrate --via api").unwrap();
        let e = RunLock::acquire(d.path(), "http://127.0.0.1:6385/", "rollback").unwrap_err().to_string();
        assert!(e.contains("migrate --via api") && e.contains(&std::process::id().to_string()), "{e}");
        // another Ironic is another target
        let other = RunLock::acquire(d.path(), "http://127.0.0.2:6385", "rollback").unwrap();
        drop((first, other));
        RunLock::acquire(d.path(), "http://127.0.0.1:6385", "rollback").unwrap();
    }
}
