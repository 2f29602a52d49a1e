//! The scriptable face: argument parsing, exit codes, and one file per command (`cmd/`).
//!
//! - `entry`: the command list, `main` and the dispatch to the commands;
//! - `args`: the flags the commands share (connections, the plan flags) and small parsers;
//! - `failure`: the exit codes and `Failure`, into which every core error converts (`?`);
//! - `output`: tables, JSON lines, the confirmation prompt, the plan as text, the run report;
//! - `interrupt`: SIGINT, SIGTERM and SIGHUP cancel a load the same way;
//! - `progress`: a load's events and summary as `migrate` prints them;
//! - `cmd/<command>.rs`: one command each, using only `args`, `failure`, `output` and the core
//!   (`crate::core::migrate::steps` holds the sequences the wizard runs too).
//!
//! This file only declares the modules and re-exports. The exit codes are in `exit` and in
//! `bm2ironic --help`.

mod args;
mod cmd;
mod entry;
mod failure;
mod interrupt;
pub mod output;
mod progress;

pub use args::MigrateArgs;
pub use entry::main;
pub use failure::Failure;
