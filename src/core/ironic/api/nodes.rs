//! The node and port calls: find, enroll, patch, provision actions, maintenance, ports, delete,
//! and the target's state read through the API (what the plan checks against when there is no
//! Ironic database to read).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::error::ApiError;
use super::http::IronicApi;
use crate::core::ironic::target::{ExistingNode, ExistingPort, TargetKind, TargetSchema, TargetState};

/// `adopt` came with API 1.17.
pub const ADOPT_VERSION: (u32, u32) = (1, 17);
/// Items per page when listing.
pub const PAGE: usize = 1000;

/// The node, or None when Ironic answers 404.
pub async fn find(api: &IronicApi, uuid: &str) -> Result<Option<Value>, ApiError> {
    match api.node(uuid).await {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

pub async fn create(api: &IronicApi, body: &Value) -> Result<Value, ApiError> {
    api.post("/v1/nodes", body).await
}

/// `PUT /v1/nodes/{uuid}/states/provision` with `target` (manage, adopt, provide, ...).
pub async fn provision(api: &IronicApi, uuid: &str, target: &str) -> Result<(), ApiError> {
    api.put(&format!("/v1/nodes/{uuid}/states/provision"), &json!({ "target": target })).await
}

/// Maintenance on, with `reason`.
pub async fn maintenance_on(api: &IronicApi, uuid: &str, reason: &str) -> Result<(), ApiError> {
    api.put(&format!("/v1/nodes/{uuid}/maintenance"), &json!({ "reason": reason })).await
}

/// Replaces top-level fields of a node (`{"instance_info": {...}}` -> `replace /instance_info`).
pub async fn replace_fields(
    api: &IronicApi,
    uuid: &str,
    fields: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    if fields.is_empty() {
        return Ok(());
    }
    let ops: Vec<Value> =
        fields.iter().map(|(k, v)| json!({"op": "add", "path": format!("/{k}"), "value": v})).collect();
    api.patch(&format!("/v1/nodes/{uuid}"), &Value::Array(ops)).await.map(|_| ())
}

pub async fn delete(api: &IronicApi, uuid: &str) -> Result<(), ApiError> {
    api.delete(&format!("/v1/nodes/{uuid}")).await
}

/// The node's ports with every field.
pub async fn ports(api: &IronicApi, uuid: &str) -> Result<Vec<Value>, ApiError> {
    api.list_all(&format!("/v1/ports/detail?node_uuid={uuid}"), "ports", PAGE).await
}

pub async fn create_port(api: &IronicApi, body: &Value) -> Result<Value, ApiError> {
    api.post("/v1/ports", body).await
}

/// What the plan needs to know of the target, read through the API: every node and port. Ironic's
/// API shows no database ids, so each node gets a stable stand-in id (its position) that the
/// ports refer to; `replace` is resolved back to a uuid through [`StateIds`].
pub async fn read_state(api: &IronicApi) -> Result<(TargetState, StateIds), ApiError> {
    let nodes = api
        .list_all("/v1/nodes?fields=uuid,instance_uuid,provision_state,maintenance,reservation,extra", "nodes", PAGE)
        .await?;
    let ports = api.list_all("/v1/ports?fields=uuid,address,node_uuid", "ports", PAGE).await?;
    Ok(state_from(&nodes, &ports))
}

/// The nodes whose marker names run `run_id` (Ironic's own word on what the run wrote), each as
/// Ironic answers it (uuid, provision state, maintenance, instance, extra).
pub async fn marked_by(api: &IronicApi, run_id: &str) -> Result<Vec<Value>, ApiError> {
    let all =
        api.list_all("/v1/nodes?fields=uuid,instance_uuid,provision_state,maintenance,extra", "nodes", PAGE).await?;
    Ok(all.into_iter().filter(|n| crate::core::ironic::marker::run(&n["extra"]) == Some(run_id)).collect())
}

/// The stand-in node ids of [`read_state`] and the uuids they stand for.
#[derive(Debug, Clone, Default)]
pub struct StateIds(pub HashMap<i64, String>);

impl StateIds {
    pub fn uuid(&self, id: i64) -> Option<&str> {
        self.0.get(&id).map(String::as_str)
    }
}

fn state_from(nodes: &[Value], ports: &[Value]) -> (TargetState, StateIds) {
    let s = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(String::from);
    let mut ids = StateIds::default();
    let mut by_uuid = HashMap::new();
    let existing: Vec<ExistingNode> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let id = i as i64 + 1;
            let uuid = s(&n["uuid"]);
            if let Some(u) = &uuid {
                ids.0.insert(id, u.clone());
                by_uuid.insert(u.clone(), id);
            }
            ExistingNode {
                id,
                uuid,
                instance_uuid: s(&n["instance_uuid"]),
                provision_state: s(&n["provision_state"]),
                maintenance: n["maintenance"].as_bool().unwrap_or(false),
                reservation: s(&n["reservation"]),
                extra: n["extra"].clone(),
                updated_at: n["updated_at"]
                    .as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.naive_utc()),
                run_finished: None,
            }
        })
        .collect();
    let existing_ports = ports
        .iter()
        .enumerate()
        .map(|(i, p)| ExistingPort {
            id: i as i64 + 1,
            uuid: s(&p["uuid"]),
            address: s(&p["address"]),
            node_id: s(&p["node_uuid"]).and_then(|u| by_uuid.get(&u).copied()),
        })
        .collect();
    let state = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: existing, ports: existing_ports };
    (state, ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_from_the_api_links_ports_to_nodes() {
        let nodes = vec![
            json!({"uuid": "n1", "provision_state": "active", "maintenance": false, "extra": {"bm2ironic": {"nova_bm_id": 3}}}),
            json!({"uuid": "n2", "provision_state": "enroll", "maintenance": true, "extra": {}}),
        ];
        let ports = vec![json!({"uuid": "p1", "address": "52:54:00:00:00:01", "node_uuid": "n2"})];
        let (st, ids) = state_from(&nodes, &ports);
        assert_eq!(st.nodes.len(), 2);
        assert_eq!(st.nodes[0].migrated_from(), Some(3));
        assert_eq!(st.ports[0].node_id, Some(2));
        assert_eq!(ids.uuid(2), Some("n2"));
        assert!(st.nodes[1].maintenance);
    }
}
