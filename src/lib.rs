//! bm2ironic: move a nova baremetal (nova_bm) inventory to Ironic without losing a running instance.
//!
//! `core` is the engine (no terminal code); `cli`, `tui` and `proxy` (Nova's old baremetal API,
//! read-only) are its faces; `audit` is the log.

pub mod audit;
pub mod cli;
pub mod core;
pub mod proxy;
pub mod tui;
