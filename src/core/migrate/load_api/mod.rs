//! `migrate --via api`: the same plan as the SQL path, loaded through Ironic's REST API with the
//! adopt flow (`node.rs`), `--concurrency` nodes in flight. A node whose step fails is reported
//! with Ironic's error and the others go on; the run is recorded (`core/migrate/run/store.rs`) and a
//! rerun resumes it. `rollback` puts adopted nodes in maintenance and deletes them, never a power action. Here:
//! the driver (`load.rs`: `load_api`, in named steps); the load's options in `options.rs`, what it fails with in `error.rs`,
//! the shared watch of the nodes waiting on the conductor in `watch.rs`, how long a node polled by
//! itself waits between polls in `pace.rs`.

mod error;
mod load;
pub mod node;
mod options;
mod pace;
pub mod rollback;
pub mod verify;
mod watch;

pub use error::ApiLoadError;
pub use load::{load_api, ApiLoadRequest, UNANSWERED_STOP};
pub use options::{ApiLoadOptions, DEFAULT_CONCURRENCY};
