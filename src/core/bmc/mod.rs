//! The BMC check (issue #51): every live node's BMC read once, read only, before the window
//! (`plan --check-bmc`, the wizard's Inventory key `b`). What it reads becomes plan facts and
//! conflicts (docs/conflicts.md: `bmc-no-answer`, `bmc-refused`, `power-mismatch`, `duplicate-bmc`);
//! how and why: docs/commands.md ("plan --check-bmc").

pub mod check;
pub mod facts;
pub mod ipmitool;

pub use check::{check, CheckOptions, Progress};
pub use facts::{BmcFacts, BmcReading, Failure, Power};
