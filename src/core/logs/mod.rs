//! Logs of ironic-conductor and nova-compute: following files like `tail -F`, parsing oslo.log
//! records and classifying takeover trouble.

pub mod follow;
pub mod watch;
