//! The migration itself: conflicts and resolutions (`conflict`, `consequences`), the pure plan
//! (`plan/`), reading before a plan (`prepare`, `recheck`), the loaders (`load_sql`, `load_api/`)
//! and their events (`events`), the runs they record (`run/`), verify, rollback, the flavor and
//! host changes (`flavors`, `hosts/`), the run report (`report/`) and what to do next
//! (`next_steps`). The use cases both faces drive are in `steps/` (start with `steps/migrate.rs`).
//! See docs/architecture.md, docs/mapping.md and docs/conflicts.md.

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
pub mod run;
pub mod states;
pub mod steps;
pub mod timing;
pub mod verify;
