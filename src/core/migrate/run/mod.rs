//! A migration run: what one `migrate` did, recorded so that `verify`, `rollback`, `watch` and a
//! resumed API load find it again. Here: its status and kind (`status.rs`: the strings existing run
//! rows and state files hold), its record and the run tables' SQL (`record.rs`), and the one place
//! runs are looked up, `RunStore` (`store.rs`: the Ironic database's run table, or run files in the
//! state directory when an API run was made without the database). See docs/architecture.md.

pub mod record;
pub mod status;
pub mod store;

pub use record::RunRecord;
pub use status::{RunKind, RunStatus};
pub use store::{RecordError, RunStore};
