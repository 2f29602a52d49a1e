//! Ctrl-C (SIGINT), SIGTERM and SIGHUP (a dropped SSH session) while a command writes: all three
//! cancel it through the same token, so the load is rolled back (or, through the API, stopped between
//! steps), said on stderr and in `--json`, and audited with the signal's name. Before this a SIGTERM or
//! SIGHUP killed the process mid-load with nothing printed and the audit log cut off (docs/faults.md).

use std::sync::{Arc, OnceLock};

use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

/// Which signal cancelled the work, once one did.
#[derive(Clone, Default)]
pub struct Interrupt(Arc<OnceLock<&'static str>>);

impl Interrupt {
    /// Cancels `cancel` on the first SIGINT, SIGTERM or SIGHUP, and remembers which.
    pub fn on_signals(cancel: &CancellationToken) -> Interrupt {
        let seen = Interrupt::default();
        for (kind, name) in [
            (SignalKind::interrupt(), "SIGINT (Ctrl-C)"),
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::hangup(), "SIGHUP"),
        ] {
            let Ok(mut stream) = signal(kind) else { continue };
            let (cancel, seen) = (cancel.clone(), seen.clone());
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    let _ = seen.0.set(name);
                    tracing::warn!(signal = name, "signal received: cancelling the work in progress");
                    cancel.cancel();
                }
            });
        }
        seen
    }

    /// The signal that cancelled the work, if one did.
    pub fn which(&self) -> Option<&'static str> {
        self.0.get().copied()
    }

    /// `message`, prefixed with the signal that caused it when one did.
    pub fn explain(&self, message: &str) -> String {
        match self.which() {
            Some(s) => format!("{s} received: {message}"),
            None => message.to_string(),
        }
    }
}
