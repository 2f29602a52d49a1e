//! The migration itself: conflicts and resolutions, the pure plan, preparation, the loaders, verify,
//! rollback and the flavor change. See docs/mapping.md and docs/conflicts.md.

pub mod conflict;
pub mod consequences;
mod counters;
pub mod events;
pub mod flavors;
pub mod hosts;
pub mod load_api;
pub mod load_sql;
pub mod next_steps;
pub mod plan;
pub mod prepare;
pub mod recheck;
pub mod report;
pub mod rollback;
pub mod run_record;
pub mod run_status;
pub mod states;
pub mod steps;
pub mod timing;
pub mod verify;
