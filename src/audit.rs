//! The audit log: every command, connection (redacted), query batch and decision goes through
//! `tracing` to a daily-rotating file, so a maintenance night can be reconstructed afterwards.
//! Nothing reaches the terminal unless `-v` asks for it on a CLI command (never while a TUI runs).

use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{fmt, layer::SubscriberExt, util::SubscriberInitExt, EnvFilter, Layer};

pub const ENV_LOG_DIR: &str = "BM2IRONIC_LOG_DIR";
pub const LOG_FILE_PREFIX: &str = "bm2ironic.log";

/// Keeps the non-blocking writer alive: drop it last (it flushes on drop).
pub struct AuditLog {
    _guard: Option<WorkerGuard>,
    pub dir: Option<PathBuf>,
    pub warning: Option<String>,
}

/// `~/.local/state/bm2ironic` (XDG state directory), or a fallback under the data directory.
pub fn default_dir() -> Option<PathBuf> {
    dirs::state_dir().or_else(dirs::data_local_dir).map(|d| d.join("bm2ironic"))
}

/// Starts the audit log. `to_stderr`: mirror to stderr (CLI with -v; never for the TUI).
pub fn init(dir: Option<&Path>, to_stderr: bool, verbosity: u8) -> AuditLog {
    let dir = dir.map(Path::to_path_buf).or_else(default_dir);
    let mut warning = None;
    let file = match &dir {
        Some(d) => match create_private_dir(d).and_then(|_| check_writable(d)) {
            Ok(()) => {
                let appender = tracing_appender::rolling::daily(d, LOG_FILE_PREFIX);
                Some(tracing_appender::non_blocking(appender))
            }
            Err(e) => {
                warning = Some(format!(
                    "warning: audit log disabled: cannot write to {}: {e} (choose another with --log-dir)",
                    d.display()
                ));
                None
            }
        },
        None => {
            warning = Some("warning: audit log disabled: no home or state directory (give --log-dir)".into());
            None
        }
    };
    let file_filter = EnvFilter::new("info,bm2ironic=debug,sqlx=warn");
    let stderr_filter = EnvFilter::new(match verbosity {
        0 | 1 => "warn,bm2ironic=info",
        2 => "info,bm2ironic=debug,sqlx=warn",
        _ => "debug,bm2ironic=trace",
    });
    let (file_layer, guard, dir) = match file {
        Some((writer, guard)) => (
            Some(fmt::layer().with_writer(writer).with_ansi(false).with_target(true).with_filter(file_filter)),
            Some(guard),
            dir,
        ),
        None => (None, None, None),
    };
    let stderr_layer =
        to_stderr.then(|| fmt::layer().with_writer(std::io::stderr).with_target(false).with_filter(stderr_filter));
    // try_init: tests may call this more than once in a process
    let _ = tracing_subscriber::registry().with(file_layer).with(stderr_layer).try_init();
    AuditLog { _guard: guard, dir, warning }
}

/// Creates the log directory readable by its owner only (the log names hosts, users and BMC
/// addresses, never passwords). An existing directory keeps the mode the operator gave it.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

fn check_writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(".bm2ironic-write-test");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(probe)
}
