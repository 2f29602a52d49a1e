//! A migration run: what one `migrate` did, recorded so that `verify`, `rollback`, `watch` and a
//! resumed API load find it again. Here: its id (`id.rs`, made once), its status and kind
//! (`status.rs`: the strings existing run rows and state files hold), its record and the run
//! tables' SQL (`record.rs`: one row per node for both kinds, an unreadable row named, never
//! dropped), the state directory's files (`dir.rs`: checked before they are trusted), the one lock
//! an API load or rollback holds (`lock.rs`), and the one place runs are looked up, `RunStore`
//! (`store.rs`). A record is a list to check against Ironic's own markers, not the truth: see
//! docs/runs.md.

mod dir;
mod error;
pub mod id;
pub mod lock;
pub mod record;
pub mod status;
pub mod store;

pub use id::RunId;
pub use record::RunRecord;
pub use status::{RunKind, RunStatus};
pub use store::{RecordError, RunStore};
