//! Everything about the target Ironic: schema detection from its database, its REST API, and the
//! takeover check after Ironic starts.

pub mod api;
pub mod json;
pub mod takeover;
pub mod target;
