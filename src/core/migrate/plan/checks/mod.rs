//! The conflict rules, one function per rule and named after it, over `Checks` (the Decider that
//! raises conflicts and the lookup maps built once from the target and the inventory) and a node's
//! `Fate` (`fate.rs`). Each code is described in docs/conflicts.md.

mod bmc;
mod boot;
mod engine;
mod flavor;
mod hardware;
mod identity;
mod ports;
mod run_wide;
mod state;

pub(super) use engine::{Checks, Lookups};
