//! The sequences both faces run, written once: the migrate use case (`migrate.rs`: where the load
//! writes, opened and closed once as a `LoadPath`; the plan, the checks before writing, the face's
//! confirmation, the load and the verification for the report), the load itself (into the
//! database, or through the API with its run store and resume-aware plan), verify a run of either
//! path, follow Ironic's takeover, preview / apply / restore the flavor change. The CLI commands (`src/cli/cmd/`) and
//! the wizard's jobs (`src/tui/jobs.rs`) call these; they print nothing and know no terminal:
//! they return typed results, and report progress through a channel.

pub mod error;
pub mod flavors;
pub mod load;
pub mod migrate;
pub mod rollback;
pub mod takeover;
pub mod verify;

pub use error::StepError;
pub use flavors::{
    apply_flavor_changes, apply_flavors, describe_flavor_target, flavor_target_for, open_flavors, preview_flavors,
    restore_flavor_changes, restore_flavors, FlavorPreview,
};
pub use load::{load, ApiLoadTarget};
pub use migrate::{
    migrate, plan, Ending, LoadPath, MigrateFace, MigrateRequest, Migrated, PlanRequest, Planned, Reviewed, Via,
};
pub use takeover::{check_takeover, check_takeover_of, Follow, TAKEOVER_POLL};
pub use verify::{run_store, scope_warning, verify, VerifiedRun};
