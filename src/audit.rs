//! The audit log: every command, connection (redacted), query batch and decision goes through
//! `tracing` to a daily-rotating file, so a maintenance night can be reconstructed afterwards.
//! Nothing reaches the terminal unless `-v` asks for it on a CLI command (never while a TUI runs).

use std::io::Write;
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{fmt, layer::SubscriberExt, util::SubscriberInitExt, EnvFilter, Layer};

pub const ENV_LOG_DIR: &str = "BM2IRONIC_LOG_DIR";
pub const LOG_FILE_PREFIX: &str = "bm2ironic.log";
/// One record at most this long in the file (a 50 MB log line from a conductor must not become a
/// 50 MB audit record); the rest is replaced by a marker.
pub const MAX_RECORD: usize = 64 * 1024;

/// Keeps the non-blocking writer alive: drop it last (it flushes on drop).
pub struct AuditLog {
    _guard: Option<WorkerGuard>,
    pub dir: Option<PathBuf>,
    pub warning: Option<String>,
    /// Why there is no audit file at all (a command that changes a database then refuses to run).
    pub disabled: Option<String>,
}

/// The first failure to write a record once the log was open (a disk that filled up during the
/// command): the records after it are lost, and the command says so when it ends.
static WRITE_FAILURE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// When and why the audit file stopped being written during this command, if it did.
pub fn write_failure() -> Option<&'static str> {
    WRITE_FAILURE.get().map(String::as_str)
}

/// `~/.local/state/bm2ironic` (XDG state directory), or a fallback under the data directory.
pub fn default_dir() -> Option<PathBuf> {
    dirs::state_dir().or_else(dirs::data_local_dir).map(|d| d.join("bm2ironic"))
}

/// Lines waiting for the audit log's writer thread at most.
const AUDIT_QUEUE_LINES: usize = 16_384;

/// Starts the audit log. `to_stderr`: mirror to stderr (CLI with -v; never for the TUI).
pub fn init(dir: Option<&Path>, to_stderr: bool, verbosity: u8) -> AuditLog {
    let dir = dir.map(Path::to_path_buf).or_else(default_dir);
    let warning;
    let mut disabled = None;
    let file = match &dir {
        Some(d) => match create_private_dir(d).and_then(|fixed| check_writable(d).map(|_| fixed)) {
            Ok(fixed) => {
                warning = fixed;
                // not lossy: an audit line is never dropped (a full queue makes the logging thread
                // wait for the writer instead); 16k lines queued (the default 128k slots took 4 MB
                // up front, a sixtieth of `plan`'s peak at 100,000 nodes)
                Some(
                    tracing_appender::non_blocking::NonBlockingBuilder::default()
                        .lossy(false)
                        .buffered_lines_limit(AUDIT_QUEUE_LINES)
                        .finish(DailyFile::new(d)),
                )
            }
            Err(e) => {
                let why = format!(
                    "cannot write to {}: {e} (free space there, or choose another with --log-dir)",
                    d.display()
                );
                warning = Some(format!("warning: audit log disabled: {why}"));
                disabled = Some(why);
                None
            }
        },
        None => {
            let why = "no home or state directory (give --log-dir)".to_string();
            warning = Some(format!("warning: audit log disabled: {why}"));
            disabled = Some(why);
            None
        }
    };
    let file_filter = EnvFilter::new("info,bm2ironic=debug,sqlx=warn");
    // the command's own outcome is shown once, by the face (`bm2ironic: ...`), never mirrored too;
    // without -v only the proxy mirrors: its access log and its start and stop, for the journal
    let stderr_filter = EnvFilter::new(match verbosity {
        0 => "warn,bm2ironic::proxy=info,bm2ironic::cli::cmd::proxy=info,bm2ironic::outcome=off",
        1 => "warn,bm2ironic=info,bm2ironic::outcome=off",
        2 => "info,bm2ironic=debug,sqlx=warn,bm2ironic::outcome=off",
        _ => "debug,bm2ironic=trace,bm2ironic::outcome=off",
    });
    let (file_layer, guard, dir) = match file {
        Some((writer, guard)) => (
            Some(fmt::layer().with_writer(writer).with_ansi(false).with_target(true).with_filter(file_filter)),
            Some(guard),
            dir,
        ),
        None => (None, None, None),
    };
    // the mirror gets what the file gets (redacted, controls shown visibly), so no colour codes either:
    // a record's values can hold anything, and its escapes would pass with ours
    let stderr_layer = to_stderr.then(|| {
        fmt::layer().with_writer(|| ShownStderr).with_ansi(false).with_target(false).with_filter(stderr_filter)
    });
    // try_init: tests may call this more than once in a process
    let _ = tracing_subscriber::registry().with(file_layer).with(stderr_layer).try_init();
    AuditLog { _guard: guard, dir, warning, disabled }
}

/// stderr for the `-v` mirror: each record (tracing writes an event in one call) through the text
/// discipline, as `DailyFile` writes it.
struct ShownStderr;

impl Write for ShownStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let mut err = std::io::stderr().lock();
        writeln!(err, "{}", crate::core::text::shown_line(body))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Creates the log directory readable by its owner only (the log names hosts, users and BMC
/// addresses, never passwords). An existing directory that others may write to (where they could
/// plant a symlink or read the log) is made 0700 when it is ours, with a warning, and refused when
/// it is not. Returns the warning, if any.
pub fn create_private_dir(dir: &Path) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(_) => {
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            return Ok(None);
        }
    };
    if !meta.is_dir() {
        return Err(std::io::Error::other("it is not a directory (a symlink or a file)"));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 == 0 {
        return Ok(None);
    }
    // SAFETY: geteuid has no preconditions
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(std::io::Error::other(format!(
            "it is writable by others (mode {mode:o}) and not yours: give a private directory"
        )));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(Some(format!(
        "warning: the audit log directory {} was writable by others (mode {mode:o}): it is now 0700",
        dir.display()
    )))
}

/// The daily audit file, `bm2ironic.log.YYYY-MM-DD`: opened 0600, append-only, never through a
/// symlink (`O_NOFOLLOW`), reopened when the day changes; records longer than [`MAX_RECORD`] cut.
pub struct DailyFile {
    dir: PathBuf,
    current: Option<(String, std::fs::File)>,
}

impl DailyFile {
    pub fn new(dir: &Path) -> DailyFile {
        DailyFile { dir: dir.to_path_buf(), current: None }
    }

    fn file(&mut self) -> std::io::Result<&mut std::fs::File> {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        if self.current.as_ref().map(|(d, _)| d != &day).unwrap_or(true) {
            let path = self.dir.join(format!("{LOG_FILE_PREFIX}.{day}"));
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            // a file an older version created 0644
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            self.current = Some((day, f));
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }
}

impl Write for DailyFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.write_record(buf);
        if let Err(e) = &r {
            let at = chrono::Utc::now().format("%H:%M:%S UTC");
            let _ = WRITE_FAILURE.set(format!("at {at} writing to {}: {e}", self.dir.display()));
        }
        r
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.current {
            Some((_, f)) => f.flush(),
            None => Ok(()),
        }
    }
}

impl DailyFile {
    /// One record (tracing writes an event whole, newline-terminated) as the file receives it: through
    /// the one redactor and the text discipline (core/text.rs `shown_line`), so a value holding `\n`,
    /// `\r`, NUL or U+2028 cannot forge a record of its own, nor a password reach the file.
    /// The record goes out in one `write(2)` on a file opened `O_APPEND`: commands run at once append
    /// to the same file, and a record written in two calls (its text, then its newline) could take
    /// another's between them.
    fn write_record(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let f = self.file()?;
        let text = String::from_utf8_lossy(buf);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        let line = crate::core::text::shown_line(body);
        let line = line.as_bytes();
        let mut record = Vec::with_capacity(line.len().min(MAX_RECORD) + 48);
        if line.len() > MAX_RECORD {
            let mut cut = MAX_RECORD;
            while cut > 0 && (line[cut] & 0xC0) == 0x80 {
                cut -= 1; // keep UTF-8 whole
            }
            record.extend_from_slice(&line[..cut]);
            record.extend_from_slice(format!(" [... {} bytes cut by bm2ironic]\n", line.len() - cut).as_bytes());
        } else {
            record.extend_from_slice(line);
            record.push(b'\n');
        }
        f.write_all(&record)?;
        Ok(buf.len())
    }
}

/// Proves `dir` takes a few records, down to the disk (a full disk still lets an empty file be
/// created), with a probe no other process can meet: an unnamed file (`O_TMPFILE`), or where the
/// filesystem has none, a name of this process's own created `O_EXCL` and removed. (A fixed name
/// failed commands started together: one removed the probe another had just created.)
fn check_writable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let unnamed = std::fs::OpenOptions::new().write(true).mode(0o600).custom_flags(libc::O_TMPFILE).open(dir);
    match unnamed {
        Ok(mut f) => fill(&mut f),
        // EOPNOTSUPP: a filesystem without O_TMPFILE; EISDIR: a kernel without it
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => check_writable_named(dir),
        Err(e) => Err(e),
    }
}

/// The probe under a name no other process uses (pid, time, a counter), never a link
/// (`O_CREAT|O_EXCL`), removed afterwards.
fn check_writable_named(dir: &Path) -> std::io::Result<()> {
    static PROBES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let probe = dir.join(format!(".bm2ironic-write-test.{}.{nanos}.{n}", std::process::id()));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&probe)?;
    let written = fill(&mut f);
    drop(f);
    std::fs::remove_file(&probe)?;
    written
}

/// A few records' worth of bytes, synced.
fn fill(f: &mut std::fs::File) -> std::io::Result<()> {
    f.write_all(&[b'\n'; 4096])?;
    f.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_audit_file_is_private_and_never_followed_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        std::os::unix::fs::symlink(&victim, dir.path().join(format!("{LOG_FILE_PREFIX}.{day}"))).unwrap();
        let mut f = DailyFile::new(dir.path());
        assert!(f.write(b"line\n").is_err(), "a planted symlink is not followed");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");

        let dir = tempfile::tempdir().unwrap();
        let mut f = DailyFile::new(dir.path());
        f.write_all(b"hello\n").unwrap();
        f.write_all(&vec![b'x'; MAX_RECORD * 3]).unwrap();
        let path = dir.path().join(format!("{LOG_FILE_PREFIX}.{day}"));
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert!(meta.len() < (MAX_RECORD + 200) as u64, "a huge record is cut: {}", meta.len());
        assert!(std::fs::read_to_string(&path).unwrap().contains("bytes cut by bm2ironic"));
    }

    #[test]
    fn a_record_cannot_forge_another_nor_carry_a_password() {
        let dir = tempfile::tempdir().unwrap();
        crate::core::redact::register_secret("Audit-S3cret");
        let mut f = DailyFile::new(dir.path());
        let forged = "2026-12-02T00:00:00Z DEBUG bm2ironic::x: task_state=\"a\\n2026 INFO bm2ironic::cli::entry: command finished code=0\" \
                      nul=\u{0} cr=\r rlo=\u{202e} ls=\u{2028} pw=Audit-S3cret url=http://u:pw9@h\n";
        let forged = forged.replace("\\n", "\n");
        f.write_all(forged.as_bytes()).unwrap();
        f.flush().unwrap();
        let day = chrono::Utc::now().format("%Y-%m-%d");
        let text = std::fs::read_to_string(dir.path().join(format!("{LOG_FILE_PREFIX}.{day}"))).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert!(text.ends_with('\n'));
        for raw in ['\u{0}', '\r', '\u{202e}', '\u{2028}'] {
            assert!(!text.contains(raw), "{raw:?} in {text:?}");
        }
        assert!(!text.contains("Audit-S3cret") && !text.contains(":pw9@"), "{text}");
        assert!(text.contains("\\x0a2026 INFO"), "{text}");
    }

    #[test]
    fn the_probe_leaves_nothing_and_any_number_can_run_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let probes: Vec<_> = (0..16)
            .map(|i| {
                let d = dir.path().to_path_buf();
                std::thread::spawn(move || if i % 2 == 0 { check_writable(&d) } else { check_writable_named(&d) })
            })
            .collect();
        for p in probes {
            p.join().unwrap().unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no probe left behind");
        assert!(check_writable(&dir.path().join("missing")).is_err());
    }

    #[test]
    fn records_appended_by_many_writers_at_once_stay_whole_lines() {
        // each thread a file of its own on one path, as each command opens it
        let dir = tempfile::tempdir().unwrap();
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let d = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let mut f = DailyFile::new(&d);
                    for i in 0..2000 {
                        f.write_all(format!("writer {w} record {i} {}\n", "x".repeat(i % 300)).as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let day = chrono::Utc::now().format("%Y-%m-%d");
        let text = std::fs::read_to_string(dir.path().join(format!("{LOG_FILE_PREFIX}.{day}"))).unwrap();
        assert_eq!(text.lines().count(), 8 * 2000);
        for l in text.lines() {
            assert!(l.starts_with("writer ") && l.matches("writer").count() == 1, "not a whole record: {l:?}");
        }
    }

    #[test]
    fn a_directory_others_can_write_is_made_private() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("logs");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let w = create_private_dir(&d).unwrap();
        assert!(w.unwrap().contains("now 0700"));
        assert_eq!(std::fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o700);
        let new = dir.path().join("new");
        assert!(create_private_dir(&new).unwrap().is_none());
        assert_eq!(std::fs::metadata(&new).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
