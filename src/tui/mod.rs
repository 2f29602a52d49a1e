//! The wizard (full-screen TUI). It renders the core's inventory, plan and progress events; it adds
//! no migration logic of its own. `app` routes between the `screens` (one file each: state, keys,
//! draw, tests) and holds the `session` they share; `keys` is the binding tables' machinery,
//! `chrome` and `theme` what every screen shares, `view` composes a frame; `msg` holds the
//! messages and effects, `field` the connection form's fields, `work` the state the background
//! work feeds (progress, logs, flavors); `jobs` is the background work and `runtime` the runtime that
//! spawns it and runs the wizard; `terminal` owns the terminal: raw mode, alternate screen, and
//! restoring it on every exit path (Drop guard, panic hook, SIGTERM/SIGHUP). `keep` the lines printed on quit, `facts` what the summary's next
//! steps are built from, `decisions_file` an existing decisions file (offered, never replaced unasked), `demo` is the demo's simulated takeover, `report` the wizard's run report, `error` what ends the wizard or a job,
//! `globals` the keys every screen shares, `bmc` what the BMC check (`b`) brings back, `keymap_tests` the one key map's tests, `narrow_tests` the 80x24 console's, `walk` the test that the help lists every key a screen
//! handles. This file only declares the modules and re-exports what the CLI uses.

pub mod app;
mod bmc;
pub mod chrome;
pub mod decisions_file;
pub mod demo;
pub mod error;
pub mod facts;
pub mod field;
pub mod globals;
pub mod jobs;
pub mod keep;
#[cfg(test)]
mod keymap_tests;
pub mod keys;
pub mod msg;
#[cfg(test)]
mod narrow_tests;
pub mod report;
pub mod runtime;
pub mod screens;
pub mod session;
pub mod terminal;
pub mod theme;
pub mod view;
#[cfg(test)]
mod walk;
pub mod work;

pub use app::{App, Prefill};
pub use error::{JobError, WizardError};
pub use runtime::{run_wizard, Context, Ending, Runner};
pub use session::Mode;
pub use terminal::{have_terminal, in_multiplexer, in_multiplexer_of};
