//! One file per command; each depends only on `cli::args`, `cli::failure` (`Failure`, exit codes),
//! `cli::output` and the core (`cli/entry.rs` dispatches to them).

pub mod completions;
pub mod config;
pub mod demo;
pub mod flavors;
pub mod hosts;
pub mod inventory;
pub mod juno_boot;
pub mod migrate;
pub mod plan;
pub mod proxy;
pub mod rollback;
pub mod verify;
pub mod watch;
pub mod wizard;
