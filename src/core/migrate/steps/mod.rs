//! The sequences both faces run, written once: the migrate use case (`migrate.rs`: the Ironic
//! [`Target`] opened once from the mode and closed once, the plan, the checks before writing, the
//! face's confirmation, the load and the verification; it returns the [`Outcome`], how the run
//! ended, decided once in `outcome.rs`), verify a run of either path, follow Ironic's takeover, preview / apply / restore the flavor change. The CLI commands (`src/cli/cmd/`) and
//! the wizard's jobs (`src/tui/jobs.rs`) call these; they print nothing and know no terminal:
//! they return typed results, and report progress through a channel.

pub mod error;
pub mod flavors;
pub mod migrate;
pub mod outcome;
pub mod rollback;
pub mod takeover;
pub mod target;
pub mod verify;

pub use error::StepError;
pub use flavors::{
    apply_flavor_changes, apply_flavors, describe_flavor_target, flavor_target_for, open_flavors, preview_flavors,
    restore_flavor_changes, restore_flavors, FlavorPreview,
};
pub use migrate::{migrate, plan, MigrateFace, MigrateRequest};
pub use outcome::{Ended, NodeLeft, Outcome};
pub use takeover::{check_takeover, check_takeover_of, Follow, TAKEOVER_POLL};
pub use target::{Mode, PlanRequest, Planned, Target};
pub use verify::{run_store, scope_warning, verify, VerifiedRun};
