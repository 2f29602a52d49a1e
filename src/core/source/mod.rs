//! The source side, read only: the nova_bm reader, its typed rows, and the facts the Nova DB adds
//! (instances, heartbeats, flavors tables), and nova baremetal's PXE configs from copies of the
//! compute hosts' TFTP trees (`tftp.rs` reads them safely, `pxe.rs` parses one).

pub mod mac;
pub mod model;
pub mod nova;
pub mod nova_bm;
pub mod pxe;
pub mod tftp;
