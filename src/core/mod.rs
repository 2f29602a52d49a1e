//! The engine: everything that reads, maps, writes and checks. No terminal code lives here; long
//! work reports through callbacks or channels that the CLI and the TUI render.

pub mod conf;
pub mod conflict;
pub mod db;
pub mod dburl;
pub mod fixture;
pub mod flavors;
pub mod ironic_api;
pub mod load;
pub mod logtail;
pub mod logwatch;
pub mod model;
pub mod nova;
pub mod plan;
pub mod prepare;
pub mod rollback;
pub mod sandbox;
pub mod secret;
pub mod source;
pub mod takeover;
pub mod sql;
pub mod target;
pub mod verify;
