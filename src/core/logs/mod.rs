//! Logs of ironic-conductor and nova-compute: `oslo` parses an oslo.log line (the one parser and
//! level table), `follow` follows files like `tail -F` (and feeds the wizard's log pane), `watch`
//! joins lines into records and classifies takeover trouble (`bm2ironic watch`, `verify --takeover`),
//! `collapse` counts repeated records once.

pub mod collapse;
pub mod follow;
pub mod oslo;
pub mod watch;
