//! Inventories made up for tests and for `demo`: the fixture builder and the SQLite sandbox.

pub mod fixture;
pub mod sandbox;
pub mod sandbox_dir;
