//! The terminal the wizard owns: whether there is one, raw mode and the alternate screen given
//! back on every exit path (a Drop guard, a panic hook), the lock a frame is drawn under, and
//! SIGTERM/SIGHUP as a stream (the runtime handles them like `q`).

use std::io::IsTerminal;

use futures::StreamExt;
use ratatui::crossterm::{cursor, execute, terminal};

use super::error::WizardError;

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

/// Raw mode and the alternate screen, given back when it drops.
pub(crate) struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Raw mode, then the alternate screen (given back if that fails).
pub(crate) fn enter() -> Result<TerminalGuard, WizardError> {
    terminal::enable_raw_mode().map_err(WizardError::RawMode)?;
    let guard = TerminalGuard;
    execute!(std::io::stdout(), terminal::EnterAlternateScreen).map_err(WizardError::AlternateScreen)?;
    Ok(guard)
}

/// A panic anywhere (the render loop or any task) restores the terminal, says what happened, and
/// ends the process: a task's panic would otherwise leave a wizard that can no longer work.
pub(crate) fn set_panic_hook() {
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
}

/// SIGTERM and SIGHUP as a stream (handled like `q`).
pub(crate) fn signal_stream() -> futures::stream::BoxStream<'static, ()> {
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
