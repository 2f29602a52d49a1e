//! The engine: everything that reads, maps, writes and checks. No terminal code lives here; long
//! work reports through callbacks or channels that the CLI and the TUI render.
//! The rooms are described in docs/architecture.md.

pub mod auth;
pub mod db;
pub mod demo;
pub mod ironic;
pub mod logs;
pub mod migrate;
pub mod source;
pub mod text;
