//! What a test finds on the machine: the servers scripts/test.sh started (named by environment
//! variables), a loud skip when one is missing (a failure in CI), the repository's own files, and a
//! small tmpfs for a disk that fills up.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Names the file where each skip is noted, one line a test, for scripts/test.sh to list after the
/// run: libtest shows nothing a passing test prints with `eprintln!`, and a note written past its
/// capture is lost among hundreds of lines.
pub const SKIPS_FILE: &str = "BM2IRONIC_TEST_SKIPS";

/// A CI run (CI=true or CI=1): there every server is started, and no test may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A test that cannot run here (`why`: what is missing, and what provides it) says so, then
/// returns: a note on stderr, written past libtest's capture, and a line `<test>: <why>` appended to
/// the file named by BM2IRONIC_TEST_SKIPS (scripts/test.sh sets it). In CI it fails instead.
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().filter(|n| *n != "main").unwrap_or("(a test off its own thread)");
    if let Some(file) = std::env::var_os(SKIPS_FILE).filter(|f| !f.is_empty()) {
        let line = format!("{test}: {why}\n");
        // one write of one short line to a file opened for appending: lines of parallel tests do not mix
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            panic!("cannot note the skip in {} ({SKIPS_FILE}): {e}", Path::new(&file).display());
        }
    }
    if in_ci() {
        panic!("{why}; in CI no test may skip");
    }
    let _ = writeln!(std::io::stderr(), "\n*** SKIPPED: {why} ***");
}

/// The URL of a test server, or None with a loud message (written past libtest's capture, and noted
/// for scripts/test.sh) when the server is not configured. In CI a missing server is a failure,
/// never a skip.
pub fn server_env(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            skip(&format!(
                "{var} is not set, so this test cannot reach its server: scripts/test.sh starts the servers and sets it"
            ));
            None
        }
    }
}

/// A file of the repository (scripts/, assets/).
pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A tmpfs of `size` mounted on a temp dir (root only), unmounted when dropped: a disk that fills up.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    pub fn mount(size: &str) -> Option<Tmpfs> {
        let d = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip("cannot mount a tmpfs (a disk-full test needs root)");
            return None;
        }
        Some(Tmpfs(d))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0.path()).status();
    }
}
