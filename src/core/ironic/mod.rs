//! Everything about the target Ironic: schema detection from its database, its REST API, and the
//! takeover check after Ironic starts (`verdict`: its words and the verdict on a node, `takeover`:
//! the loop, `tracker`: its bookkeeping).

pub mod api;
pub mod json;
pub mod juno_boot;
pub mod marker;
pub mod takeover;
pub mod target;
pub mod tracker;
pub mod verdict;
