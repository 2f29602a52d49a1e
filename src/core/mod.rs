//! The engine: everything that reads, maps, writes and checks. No terminal code lives here; long
//! work reports through callbacks or channels that the CLI and the TUI render.
//! The rooms are described in docs/architecture.md.

pub mod auth;
pub mod bmc;
mod closing;
pub mod config_gen;
pub mod db;
pub mod demo;
pub mod ironic;
pub mod kind;
pub mod logs;
pub mod migrate;
pub mod redact;
pub mod settings;
pub mod source;
pub mod text;

pub use closing::{using, Closes};

/// A spawned task that is stopped when whoever waits for it stops waiting (an error elsewhere ends
/// the wait, or the wait itself is dropped): nothing reads on for no one.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> AbortOnDrop<T> {
    /// Its result; a panic in it is resumed here. `Err` only when the runtime stopped it.
    pub(crate) async fn join(&mut self) -> Result<T, tokio::task::JoinError> {
        match (&mut self.0).await {
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            other => other,
        }
    }
}
