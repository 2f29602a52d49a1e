//! The plan's checksum: sha256 of what would be written (passwords excluded), as the JSON array
//! `[[uuid, action, node, ports], ...]` with every object's keys sorted. It is hashed node by node
//! as the plan is made, written straight from the rows (no `serde_json::Value` tree: at 100k nodes
//! building one per node was a large part of the plan's time). The bytes are those of the array
//! serialised through `Value` at once: `properties.rs` holds the plan to that.

use chrono::{Datelike, NaiveDateTime, Timelike};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::model::NodePlan;
use super::rows::{IronicNode, IronicPort, Rows};
use crate::core::ironic::target::TargetKind;

/// A value as JSON (scalars, options, dates, already-sorted `Value`s).
fn put<T: Serialize + ?Sized>(b: &mut Vec<u8>, v: &T) {
    // serialising these into a Vec cannot fail
    let _ = serde_json::to_writer(&mut *b, v);
}

/// A date and time as chrono serialises it (`"2014-03-01T12:00:00"`), written directly in the
/// usual case (a year of four digits, whole seconds; chrono's `Display` was a tenth of the plan's
/// time), else through chrono.
fn put_time(b: &mut Vec<u8>, t: &Option<NaiveDateTime>) {
    let Some(t) = t else {
        b.extend_from_slice(b"null");
        return;
    };
    let (y, nano) = (t.year(), t.nanosecond());
    if !(0..=9999).contains(&y) || nano != 0 {
        put(b, t);
        return;
    }
    let two = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&[b'0' + (v / 10) as u8, b'0' + (v % 10) as u8]);
    b.push(b'"');
    let y = y as u32;
    two(b, y / 100);
    two(b, y % 100);
    b.push(b'-');
    two(b, t.month());
    b.push(b'-');
    two(b, t.day());
    b.push(b'T');
    two(b, t.hour());
    b.push(b':');
    two(b, t.minute());
    b.push(b':');
    two(b, t.second());
    b.push(b'"');
}

/// `"key":`, after a comma unless it is the object's first.
fn key(b: &mut Vec<u8>, k: &str, first: bool) {
    if !first {
        b.push(b',');
    }
    put(b, k);
    b.push(b':');
}

pub(super) struct Checksum {
    h: Sha256,
    first: bool,
}

impl Checksum {
    pub(super) fn new() -> Checksum {
        let mut h = Sha256::new();
        h.update(b"[");
        Checksum { h, first: true }
    }

    /// The next nodes' elements, as `encode_node` wrote them (comma-separated), in plan order.
    pub(super) fn chunk(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if !self.first {
            self.h.update(b",");
        }
        self.first = false;
        self.h.update(bytes);
    }

    pub(super) fn finish(mut self) -> String {
        self.h.update(b"]");
        hex::encode(self.h.finalize())
    }
}

/// Appends one node's element, `[uuid, action, node, ports]`.
pub(super) fn encode_node(b: &mut Vec<u8>, n: &NodePlan, rows: Option<&Rows>) {
    b.push(b'[');
    put(b, &n.uuid);
    b.push(b',');
    put(b, &n.action);
    b.push(b',');
    match rows {
        None => b.extend_from_slice(b"null,[]"),
        Some(r) => {
            node(b, &r.node);
            b.push(b',');
            b.push(b'[');
            for (k, p) in r.ports.iter().enumerate() {
                if k > 0 {
                    b.push(b',');
                }
                port(b, p);
            }
            b.push(b']');
        }
    }
    b.push(b']');
}

/// An Ironic node row, keys in order (as `IronicNode`'s `Serialize` through a `Value`).
fn node(b: &mut Vec<u8>, n: &IronicNode) {
    b.push(b'{');
    // the interfaces only when set, as `IronicNode`'s `Serialize`
    if let Some(bi) = &n.boot_interface {
        key(b, "boot_interface", true);
        put(b, bi);
    }
    key(b, "created_at", n.boot_interface.is_none());
    put_time(b, &n.created_at);
    if let Some(d) = &n.deploy_interface {
        key(b, "deploy_interface", false);
        put(b, d);
    }
    key(b, "driver", false);
    put(b, &n.driver);
    key(b, "driver_info", false);
    b.push(b'{');
    for (k, (name, v)) in n.driver_info.sorted_redacted().into_iter().enumerate() {
        key(b, name, k == 0);
        match v {
            Some(v) => put(b, v),
            None => put(b, "***"),
        }
    }
    b.push(b'}');
    key(b, "extra", false);
    if n.kind == TargetKind::Juno {
        // flat keys (see `ironic::marker`), sorted as a `Value`'s
        put(b, &n.extra());
    } else {
        b.push(b'{');
        key(b, "bm2ironic", true);
        b.push(b'{');
        key(b, "nova_bm_id", true);
        put(b, &n.nova_bm_id);
        key(b, "service_host", false);
        put(b, &n.service_host);
        b.extend_from_slice(b"}}");
    }
    key(b, "instance_info", false);
    put(b, &n.instance_info);
    key(b, "instance_name", false);
    put(b, &n.instance_name);
    key(b, "instance_uuid", false);
    put(b, &n.instance_uuid);
    key(b, "maintenance", false);
    put(b, &n.maintenance);
    key(b, "maintenance_reason", false);
    put(b, &n.maintenance_reason);
    key(b, "power_state", false);
    put(b, &n.power_state);
    key(b, "properties", false);
    put(b, &n.properties);
    key(b, "provision_state", false);
    put(b, &n.provision_state);
    key(b, "resource_class", false);
    put(b, &n.resource_class);
    key(b, "updated_at", false);
    put_time(b, &n.updated_at);
    key(b, "uuid", false);
    put(b, &n.uuid);
    b.push(b'}');
}

/// An Ironic port row, keys in order (as `IronicPort`'s `Serialize` through a `Value`).
fn port(b: &mut Vec<u8>, p: &IronicPort) {
    b.push(b'{');
    key(b, "address", true);
    put(b, &p.address);
    key(b, "created_at", false);
    put_time(b, &p.created_at);
    key(b, "extra", false);
    if p.kind == TargetKind::Juno {
        // flat keys and the VIF (see `ironic::marker`), sorted as a `Value`'s
        put(b, &p.extra());
    } else {
        b.push(b'{');
        key(b, "bm2ironic", true);
        b.push(b'{');
        key(b, "nova_bm_interface_id", true);
        put(b, &p.nova_bm_interface_id);
        b.extend_from_slice(b"}}");
    }
    key(b, "internal_info", false);
    b.push(b'{');
    if let (Some(v), TargetKind::Modern) = (&p.vif, p.kind) {
        key(b, "tenant_vif_port_id", true);
        put(b, v);
    }
    b.push(b'}');
    key(b, "node_uuid", false);
    put(b, &p.node_uuid);
    key(b, "nova_bm_interface_id", false);
    put(b, &p.nova_bm_interface_id);
    key(b, "pxe_enabled", false);
    put(b, &p.pxe_enabled);
    key(b, "updated_at", false);
    put_time(b, &p.updated_at);
    key(b, "uuid", false);
    put(b, &p.uuid);
    b.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    #[test]
    fn times_are_written_as_chrono_writes_them() {
        let d = |y, mo, da, h, mi, s, nano| {
            NaiveDate::from_ymd_opt(y, mo, da).and_then(|d| d.and_hms_nano_opt(h, mi, s, nano))
        };
        for t in [
            None,
            d(2014, 3, 1, 12, 0, 0, 0),
            d(1, 1, 1, 0, 0, 0, 0),
            d(0, 12, 31, 23, 59, 59, 0),
            d(9999, 12, 31, 23, 59, 59, 0),
            d(10000, 1, 1, 0, 0, 0, 0),
            d(-1, 1, 1, 0, 0, 0, 0),
            d(2014, 6, 30, 23, 59, 59, 1_500_000_000), // a leap second
            d(2014, 1, 2, 3, 4, 5, 120_000_000),
            d(2014, 1, 2, 3, 4, 5, 7),
        ] {
            let mut ours = Vec::new();
            put_time(&mut ours, &t);
            assert_eq!(String::from_utf8(ours).unwrap(), serde_json::to_string(&t).unwrap(), "{t:?}");
        }
    }
}
