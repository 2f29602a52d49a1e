//! What Nova's `os-baremetal-nodes` API answered, built from Ironic's answers (pure: no I/O).
//!
//! The bodies follow Nova's own proxy to Ironic (Juno to Newton, `baremetal_nodes.py`): a node is its
//! Ironic uuid, `host` is the constant `IRONIC MANAGED`, `task_state` is the provision state, and
//! `cpus`, `memory_mb` and `disk_gb` come from the node's `properties` (`disk_gb` from `local_gb`),
//! 0 when missing (Nova answered 500 there). The list has empty `interfaces`; the show adds
//! `instance_uuid`, one `{"address": MAC}` per port, and `uuid` (as Juno's `os-baremetal-ext-status`
//! did). A node asked for by its nova_bm id (`.../os-baremetal-nodes/12`, as scripts written against
//! nova baremetal do) answers with that integer as `id`, as nova baremetal did, and the Ironic
//! uuid as `uuid`. Errors are Nova's fault bodies (`{"itemNotFound": {"code": 404, "message": ...}}`).

use serde_json::{json, Map, Value};

/// What Nova puts in `host` for every node Ironic manages.
pub const HOST: &str = "IRONIC MANAGED";

/// The Ironic node fields the proxy asks for (`?fields=`, API 1.8 and newer).
pub const NODE_FIELDS: &str = "uuid,provision_state,properties,instance_uuid";
/// The same and `extra`, where bm2ironic's marker names the nova_bm id.
pub const NODE_FIELDS_EXTRA: &str = "uuid,provision_state,properties,instance_uuid,extra";

/// The nova_bm id in a node's `extra`, in either form the loaders write: the object
/// (`{"bm2ironic": {"nova_bm_id": 12}}`, modern Ironic) or the flat key (`{"bm2ironic_nova_bm_id":
/// 12}`, Juno, whose API takes no nested object there). An integer, or a string of digits.
pub fn nova_bm_id(extra: &Value) -> Option<i64> {
    // either form of the marker (core::ironic::marker); a digits-only string too (Juno's `extra` holds
    // strings and integers, and a hand-edited node may carry either)
    let v = crate::core::ironic::marker::get(extra, "nova_bm_id")?;
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) if !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    }
}

/// A node id that is a nova_bm id: digits only (at most 18, so it fits an i64).
pub fn integer_id(id: &str) -> Option<i64> {
    if id.is_empty() || id.len() > 18 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id.parse().ok()
}

/// A property as Nova showed it: the value Ironic holds, or 0 when it is missing or null.
fn property(node: &Value, key: &str) -> Value {
    match node.get("properties").and_then(|p| p.get(key)) {
        None | Some(Value::Null) => json!(0),
        Some(v) => v.clone(),
    }
}

fn base(node: &Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("id".into(), node.get("uuid").cloned().unwrap_or(Value::Null));
    m.insert("interfaces".into(), json!([]));
    m.insert("host".into(), json!(HOST));
    m.insert("task_state".into(), node.get("provision_state").cloned().unwrap_or(Value::Null));
    m.insert("cpus".into(), property(node, "cpus"));
    m.insert("memory_mb".into(), property(node, "memory_mb"));
    m.insert("disk_gb".into(), property(node, "local_gb"));
    m
}

/// `GET /os-baremetal-nodes`: `{"nodes": [...]}`.
pub fn list(nodes: &[Value]) -> Value {
    json!({ "nodes": nodes.iter().map(|n| Value::Object(base(n))).collect::<Vec<_>>() })
}

/// `GET /os-baremetal-nodes/{id}`: `{"node": {...}}` with the ports' MACs and the uuid; `id` is
/// `nova_bm_id` when the node was asked for by it, else the uuid.
pub fn show(node: &Value, port_addresses: &[String], nova_bm_id: Option<i64>) -> Value {
    let mut m = base(node);
    m.insert("uuid".into(), node.get("uuid").cloned().unwrap_or(Value::Null));
    if let Some(n) = nova_bm_id {
        m.insert("id".into(), json!(n));
    }
    m.insert("instance_uuid".into(), node.get("instance_uuid").cloned().unwrap_or(Value::Null));
    m.insert("interfaces".into(), port_addresses.iter().map(|a| json!({ "address": a })).collect::<Value>());
    json!({ "node": Value::Object(m) })
}

/// One API version document (`v2.0` or `v2.1`) as Nova showed it. v2.1 offers 2.1 to 2.35, the
/// microversions that have this API (it was removed in 2.36), so that a client negotiating the
/// newest version (novaclient's `2.latest`) lands on one that answers.
pub fn version(base: &str, id: &str) -> Value {
    let (status, v, min, path, updated) = match id {
        "v2.0" => ("SUPPORTED", "", "", "v2/", "2011-01-21T11:33:21Z"),
        _ => ("CURRENT", "2.35", "2.1", "v2.1/", "2013-07-23T11:33:21Z"),
    };
    json!({"id": id, "status": status, "version": v, "min_version": min, "updated": updated,
        "links": [{"rel": "self", "href": format!("{base}/{path}")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2"}]})
}

/// The root document: both versions.
pub fn versions(base: &str) -> Value {
    json!({ "versions": [version(base, "v2.0"), version(base, "v2.1")] })
}

/// Nova's name for a fault of `status` (`nova.api.openstack.wsgi`'s table).
pub fn fault_name(status: u16) -> &'static str {
    match status {
        400 => "badRequest",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "itemNotFound",
        405 => "badMethod",
        408 => "requestTimeout",
        409 => "conflictingRequest",
        413 | 429 => "overLimit",
        415 => "badMediaType",
        431 => "requestHeaderFieldsTooLarge",
        501 => "notImplemented",
        503 => "serviceUnavailable",
        _ => "computeFault",
    }
}

/// A Nova fault body: `{"<name>": {"code": status, "message": message}}`.
pub fn fault(status: u16, message: &str) -> Value {
    json!({ fault_name(status): { "code": status, "message": message } })
}

/// Keystone-middleware's 401 body, which Nova's clients expect for a missing or refused token.
pub fn unauthorized() -> Value {
    json!({"error": {"code": 401, "title": "Unauthorized",
        "message": "The request you have made requires authentication."}})
}

/// A mutation the proxy does not do, and the Ironic command to use instead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mutation {
    Create,
    Delete,
    AddInterface,
    RemoveInterface,
    /// an `action` body that is neither of the two
    OtherAction,
}

impl Mutation {
    pub fn ironic_command(self) -> &'static str {
        match self {
            Mutation::Create => "openstack baremetal node create",
            Mutation::Delete => "openstack baremetal node delete",
            Mutation::AddInterface => "openstack baremetal port create",
            Mutation::RemoveInterface => "openstack baremetal port delete",
            Mutation::OtherAction => "openstack baremetal port create / port delete",
        }
    }

    /// Which of the two actions a `POST .../action` body asks for.
    pub fn of_action(body: &[u8]) -> Mutation {
        let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if v.get("add_interface").is_some() {
            Mutation::AddInterface
        } else if v.get("remove_interface").is_some() {
            Mutation::RemoveInterface
        } else {
            Mutation::OtherAction
        }
    }

    /// The message of the refusal (Nova's later text, with the command of today's client).
    pub fn message(self) -> String {
        format!(
            "Command not supported: this os-baremetal-nodes API is a read-only proxy to Ironic. Please use the Ironic command `{}` to perform this action.",
            self.ironic_command()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_show_follow_novas_proxy() {
        let n = json!({"uuid": "u1", "provision_state": "active", "instance_uuid": "i1",
            "properties": {"cpus": 8, "memory_mb": 16384, "local_gb": 100, "cpu_arch": "x86_64"}});
        assert_eq!(
            list(std::slice::from_ref(&n)),
            json!({"nodes": [{"id": "u1", "interfaces": [], "host": "IRONIC MANAGED", "task_state": "active",
                "cpus": 8, "memory_mb": 16384, "disk_gb": 100}]})
        );
        assert_eq!(
            show(&n, &["52:54:00:00:00:01".into(), "52:54:00:00:00:02".into()], None),
            json!({"node": {"id": "u1", "uuid": "u1", "host": "IRONIC MANAGED", "task_state": "active", "cpus": 8,
                "memory_mb": 16384, "disk_gb": 100, "instance_uuid": "i1",
                "interfaces": [{"address": "52:54:00:00:00:01"}, {"address": "52:54:00:00:00:02"}]}})
        );
        // asked for by its nova_bm id: that id, and the uuid beside it
        let s = show(&n, &[], Some(12));
        assert_eq!((&s["node"]["id"], &s["node"]["uuid"]), (&json!(12), &json!("u1")));
    }

    #[test]
    fn nova_bm_id_in_either_form() {
        assert_eq!(nova_bm_id(&json!({"bm2ironic": {"nova_bm_id": 12, "run": "r"}})), Some(12));
        assert_eq!(nova_bm_id(&json!({"bm2ironic_nova_bm_id": 12, "bm2ironic_run": "r"})), Some(12));
        assert_eq!(nova_bm_id(&json!({"bm2ironic_nova_bm_id": "12"})), Some(12));
        for none in [
            json!(null),
            json!({}),
            json!({"bm2ironic": {}}),
            json!({"bm2ironic_nova_bm_id": "x"}),
            json!({"bm2ironic_nova_bm_id": 1.5}),
            json!({"nova_bm_id": 12}),
        ] {
            assert_eq!(nova_bm_id(&none), None, "{none}");
        }
        assert_eq!(integer_id("12"), Some(12));
        assert_eq!(integer_id("0012"), Some(12));
        for not in ["", "1a", "-1", "+1", "1234567890123456789", "bbbbbbbb-0000-4000-8000-000000000001"] {
            assert_eq!(integer_id(not), None, "{not}");
        }
    }

    #[test]
    fn missing_properties_are_zero_never_an_error() {
        for n in [
            json!({"uuid": "u", "provision_state": "manageable"}),
            json!({"uuid": "u", "provision_state": "manageable", "properties": null}),
            json!({"uuid": "u", "provision_state": "manageable", "properties": {"cpus": null}}),
            json!({"uuid": "u", "provision_state": "manageable", "properties": {}}),
        ] {
            let s = show(&n, &[], None);
            assert_eq!(
                (&s["node"]["cpus"], &s["node"]["memory_mb"], &s["node"]["disk_gb"]),
                (&json!(0), &json!(0), &json!(0))
            );
            assert_eq!(s["node"]["instance_uuid"], Value::Null);
            assert_eq!(s["node"]["interfaces"], json!([]));
        }
    }

    #[test]
    fn faults_and_mutations() {
        assert_eq!(fault(404, "x"), json!({"itemNotFound": {"code": 404, "message": "x"}}));
        assert_eq!(fault(403, "x")["forbidden"]["code"], 403);
        assert_eq!(fault(504, "x")["computeFault"]["code"], 504);
        assert_eq!(Mutation::of_action(br#"{"add_interface": {"address": "aa"}}"#), Mutation::AddInterface);
        assert_eq!(Mutation::of_action(br#"{"remove_interface": {}}"#), Mutation::RemoveInterface);
        assert_eq!(Mutation::of_action(b"not json"), Mutation::OtherAction);
        assert!(Mutation::Create.message().contains("`openstack baremetal node create`"));
    }
}
