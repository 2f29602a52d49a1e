//! `bm2ironic config`: nova.conf and ironic.conf for the new world, computed from the baremetal
//! nova-compute's nova.conf (docs/config.md). `compute.rs` is the driver; `nova.rs` and
//! `ironic.rs` the two files' rules; `keystone.rs` reads Keystone from nova.conf; `render.rs`
//! writes a whole file; `model.rs` holds the types.

pub mod compute;
pub mod ironic;
pub mod keystone;
pub mod model;
pub mod nova;
pub mod render;

pub use compute::{compute, file_text};
pub use model::{ConfChange, ConfFile, ConfGenError, ConfInputs, ConfPlan, ConfValue, ServiceUser};
