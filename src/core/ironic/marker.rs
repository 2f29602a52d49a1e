//! bm2ironic's marker in the `extra` of the nodes and ports it writes: which nova_bm row a node or
//! port came from, its nova-compute host, the run that wrote it (and on Juno the maintenance reason,
//! which has no column there). Two forms, one per target:
//!
//! - modern Ironic: one object, `extra.bm2ironic = {"nova_bm_id": 3, "service_host": ..., "run": ...}`;
//! - Juno: flat keys, `extra.bm2ironic_nova_bm_id = 3`, ... Juno's API takes only strings and
//!   integers as `extra` values: one nested object makes every list of nodes (or ports) answer 400.
//!   A key whose value is unknown (no service host) is left out rather than written as null.
//!
//! Everything that reads the marker reads either form ([`get`]).

use serde_json::{json, Map, Value};

/// Juno: the learned root partition uuid of an instance node (nova baremetal's `root=UUID=`), kept
/// where Juno's takeover does not overwrite it (it rewrites the PXE config to `default deploy`,
/// LP#1421370); `bm2ironic juno-boot` reads it here (`juno_boot.rs`).
pub const JUNO_ROOT_UUID: &str = "bm2ironic_root_uuid";

/// The object of the modern form, and the prefix of the flat form's keys (`bm2ironic_<name>`).
pub const KEY: &str = "bm2ironic";

/// A node's `extra`: flat (`flat`: a Juno target) or one object.
pub fn node_extra(flat: bool, nova_bm_id: i64, service_host: Option<&str>, maintenance_reason: Option<&str>) -> Value {
    if flat {
        let mut m = Map::new();
        m.insert(flat_key("nova_bm_id"), json!(nova_bm_id));
        if let Some(h) = service_host {
            m.insert(flat_key("service_host"), json!(h));
        }
        if let Some(r) = maintenance_reason {
            m.insert(flat_key("maintenance_reason"), json!(r));
        }
        return Value::Object(m);
    }
    json!({ KEY: {"nova_bm_id": nova_bm_id, "service_host": service_host} })
}

/// A port's `extra` marker (the caller adds `vif_port_id` on Juno).
pub fn port_extra(flat: bool, nova_bm_interface_id: i64) -> Value {
    if flat {
        json!({ flat_key("nova_bm_interface_id"): nova_bm_interface_id })
    } else {
        json!({ KEY: {"nova_bm_interface_id": nova_bm_interface_id} })
    }
}

/// Adds the run that writes the row to a marker made by [`node_extra`], in the same form.
pub fn set_run(extra: &mut Value, flat: bool, run_id: &str) {
    if flat {
        extra[flat_key("run")] = json!(run_id);
    } else {
        extra[KEY]["run"] = json!(run_id);
    }
}

fn flat_key(name: &str) -> String {
    format!("{KEY}_{name}")
}

/// The marker's `name` in `extra`, in either form (the object's first).
pub fn get<'a>(extra: &'a Value, name: &str) -> Option<&'a Value> {
    extra.get(KEY).and_then(|m| m.get(name)).or_else(|| extra.get(flat_key(name)))
}

/// The nova_bm id of a node's marker.
pub fn nova_bm_id(extra: &Value) -> Option<i64> {
    get(extra, "nova_bm_id").and_then(Value::as_i64)
}

/// The run named by a node's marker.
pub fn run(extra: &Value) -> Option<&str> {
    get(extra, "run").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_are_written_and_read() {
        let mut modern = node_extra(false, 3, Some("bm-compute-1"), Some("not written on modern"));
        set_run(&mut modern, false, "r1");
        assert_eq!(modern, json!({"bm2ironic": {"nova_bm_id": 3, "service_host": "bm-compute-1", "run": "r1"}}));
        let mut juno = node_extra(true, 3, None, Some("bm2ironic: why"));
        set_run(&mut juno, true, "r1");
        assert_eq!(
            juno,
            json!({"bm2ironic_nova_bm_id": 3, "bm2ironic_maintenance_reason": "bm2ironic: why", "bm2ironic_run": "r1"})
        );
        assert!(
            juno.as_object().unwrap().values().all(|v| v.is_string() || v.is_i64()),
            "Juno: strings and integers only"
        );
        for e in [&modern, &juno] {
            assert_eq!((nova_bm_id(e), run(e)), (Some(3), Some("r1")));
        }
        assert_eq!(port_extra(true, 7), json!({"bm2ironic_nova_bm_interface_id": 7}));
        assert_eq!(port_extra(false, 7), json!({"bm2ironic": {"nova_bm_interface_id": 7}}));
        assert_eq!(nova_bm_id(&json!({"other": 1})), None);
        assert_eq!(nova_bm_id(&Value::Null), None);
    }
}
