//! The sequences both faces run, written once: load a plan (into the database, or through the
//! API with its run store and resume-aware plan), verify a run of either path, follow Ironic's
//! takeover, preview / apply / restore the flavor change. The CLI commands (`src/cli/cmd/`) and
//! the wizard's jobs (`src/tui/jobs.rs`) call these; they print nothing and know no terminal:
//! they return typed results, and report progress through a channel.

pub mod error;
pub mod flavors;
pub mod load;
pub mod takeover;
pub mod verify;

pub use error::StepError;
pub use flavors::{
    apply_flavor_changes, apply_flavors, describe_flavor_target, flavor_target_for, open_flavors, preview_flavors,
    restore_flavor_changes, restore_flavors, FlavorPreview,
};
pub use load::{load, ApiLoadTarget};
pub use takeover::{check_takeover, check_takeover_of, Follow, TAKEOVER_POLL};
pub use verify::{find_run, pick_run, run_store, scope_warning, verify, FoundRun, VerifiedRun};
