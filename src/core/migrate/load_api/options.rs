//! How an API load goes: nodes in flight (`--concurrency`), how often a node is polled and how
//! long one step may take.

use std::time::Duration;

/// Nodes in flight unless `--concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 4;

#[derive(Debug, Clone)]
pub struct ApiLoadOptions {
    pub concurrency: usize,
    /// the longest wait between two polls of a node
    pub poll: Duration,
    /// how long one step (manage, adopt, provide) may take
    pub step_timeout: Duration,
}

impl Default for ApiLoadOptions {
    fn default() -> Self {
        ApiLoadOptions {
            concurrency: DEFAULT_CONCURRENCY,
            poll: Duration::from_secs(2),
            step_timeout: Duration::from_secs(600),
        }
    }
}
