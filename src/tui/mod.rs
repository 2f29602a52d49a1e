//! The wizard (full-screen TUI). It renders the core's inventory, plan and progress events; it adds
//! no migration logic of its own. `app` routes between the `screens` (one file each: state, keys,
//! draw, tests) and holds the `session` they share; `keys` is the binding tables' machinery,
//! `chrome` and `theme` what every screen shares, `view` composes a frame; `jobs` is the background
//! work and `run` the runtime that spawns it; this module owns the terminal: raw mode, alternate screen, and restoring it on every exit
//! path (Drop guard, panic hook, SIGTERM/SIGHUP).

pub mod app;
pub mod chrome;
pub mod demo;
pub mod error;
pub mod globals;
pub mod jobs;
pub mod keys;
pub mod msg;
pub mod report;
pub mod runtime;
pub mod screens;
pub mod session;
pub mod theme;
pub mod view;
#[cfg(test)]
mod walk;

use std::io::IsTerminal;

use futures::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, event::EventStream, execute, terminal};
use ratatui::Terminal;

pub use app::{App, Mode, Prefill};
pub use error::{JobError, WizardError};
pub use runtime::{Context, Runner};

/// True when both stdin and stdout are terminals (a TUI needs both: keys in, screen out).
pub fn have_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Whether the wizard runs inside tmux or screen (`$TMUX` or `$STY` set), where a dropped SSH
/// session does not end it.
pub fn in_multiplexer() -> bool {
    in_multiplexer_of(&|k| std::env::var(k).ok())
}

/// [`in_multiplexer`] with `env` as the environment.
pub fn in_multiplexer_of(env: &dyn Fn(&str) -> Option<String>) -> bool {
    ["TMUX", "STY"].iter().any(|k| env(k).is_some_and(|v| !v.is_empty()))
}

/// Held while a frame is written, and by the panic hook while it restores the terminal: a panic in a
/// task must not race a frame being drawn on another thread.
pub(crate) static TERMINAL_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// Set once the terminal has been given back: no frame is drawn after it.
pub(crate) static RESTORED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
}

struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Runs the wizard until the operator quits. Must be called inside a tokio runtime.
pub async fn run_wizard(app: App, ctx: impl Into<Context>) -> Result<(), WizardError> {
    // A panic anywhere (the render loop or any task) restores the terminal, says what happened, and
    // ends the process: a task's panic would otherwise leave a wizard that can no longer work.
    let default_hook = std::panic::take_hook();
    RESTORED.store(false, std::sync::atomic::Ordering::SeqCst);
    std::panic::set_hook(Box::new(move |info| {
        // take the terminal from a frame in progress (not forever: the panic may be in the drawing thread)
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let _guard = loop {
            match TERMINAL_LOCK.try_lock() {
                Ok(g) => break Some(g),
                Err(std::sync::TryLockError::Poisoned(p)) => break Some(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                Err(std::sync::TryLockError::WouldBlock) => break None,
            }
        };
        RESTORED.store(true, std::sync::atomic::Ordering::SeqCst);
        restore_terminal();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        tracing::error!("wizard panicked: {msg}{place}");
        eprintln!("bm2ironic: internal error: {msg}{place}. The terminal was restored; nothing was committed unless the summary said so. See the audit log.");
        let _ = &default_hook;
        std::process::exit(70);
    }));
    terminal::enable_raw_mode().map_err(WizardError::RawMode)?;
    let guard = TerminalGuard;
    execute!(std::io::stdout(), terminal::EnterAlternateScreen).map_err(WizardError::AlternateScreen)?;
    let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(WizardError::Start)?;
    let mut runner = Runner::new(app, terminal, view::Theme::from_env(), ctx);
    let signals = signal_stream();
    let r = runner.run(EventStream::new(), signals).await;
    drop(guard);
    let _ = std::panic::take_hook();
    r.map_err(WizardError::Terminal)
}

/// SIGTERM and SIGHUP as a stream (handled like `q`).
fn signal_stream() -> futures::stream::BoxStream<'static, ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    for kind in [SignalKind::terminate(), SignalKind::hangup()] {
        if let Ok(mut s) = signal(kind) {
            let tx = tx.clone();
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    if tx.send(()).is_err() {
                        return;
                    }
                }
            });
        }
    }
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) }).boxed()
}
