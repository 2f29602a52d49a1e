//! The engine: everything that reads, maps, writes and checks. No terminal code lives here; long
//! work reports through callbacks or channels that the CLI and the TUI render.

pub mod conf;
pub mod db;
pub mod dburl;
pub mod fixture;
pub mod model;
pub mod secret;
pub mod source;
