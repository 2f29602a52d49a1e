//! The source side, read only: the nova_bm reader, its typed rows, and the facts the Nova DB adds
//! (instances, heartbeats, flavors tables).

pub mod model;
pub mod nova;
pub mod nova_bm;
