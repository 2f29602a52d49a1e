//! bm2ironic: move a nova baremetal (nova_bm) inventory to Ironic without losing a running instance.
//!
//! `core` is the engine (no terminal code); `cli`, `tui` and `proxy` (Nova's old baremetal API,
//! read-only) are its faces; `audit` is the log. The lint wall (docs/architecture.md, "Lints"):
//! the command line is private to the crate (`cli_main` is its one way in), so rustc reports its
//! dead code; the core, the wizard and the proxy stay public because the integration tests drive
//! them as a library (the headless wizard, the proxy's router, the core's steps). Outside tests,
//! `unwrap()` is refused: a failure is an error that names what to fix, never a panic.

#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod audit;
mod cli;
pub mod core;
pub mod proxy;
pub mod tui;

/// The binary's entry: the command line (`src/cli/entry.rs`).
pub fn cli_main() -> std::process::ExitCode {
    cli::main()
}
