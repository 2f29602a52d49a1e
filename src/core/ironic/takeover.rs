//! The takeover check: after Ironic starts on the migrated database, waits until every migrated node
//! has a power state read from its BMC, no `last_error`, no fault, is not stuck in a transitional
//! state, and has a conductor; reports each node, with the log records that name it.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::core::ironic::api::IronicApi;
use crate::core::logs::watch::Record;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TakeoverState {
    Ok,
    /// held in maintenance by the migration's own decision (not a failure)
    HeldInMaintenance,
    /// not decided yet (no power state read so far)
    Pending,
    Failed,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeTakeover {
    pub uuid: String,
    pub state: TakeoverState,
    pub power_state: Option<String>,
    pub provision_state: Option<String>,
    pub conductor: Option<String>,
    pub problems: Vec<String>,
    /// log records naming this node (ERROR/WARNING)
    pub log_errors: Vec<String>,
}

fn s(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).filter(|x| !x.is_empty()).map(String::from)
}

/// Judges one node from `GET /v1/nodes/{uuid}`.
pub fn judge(uuid: &str, v: &Value) -> NodeTakeover {
    let power = s(v, "power_state");
    let prov = s(v, "provision_state");
    let conductor = s(v, "conductor");
    let mut problems = Vec::new();
    let maintenance = v.get("maintenance").and_then(|m| m.as_bool()).unwrap_or(false);
    let reason = s(v, "maintenance_reason").unwrap_or_default();
    if let Some(fault) = s(v, "fault") {
        problems.push(format!("Ironic put it in maintenance ({fault}): {reason}"));
    }
    if let Some(e) = s(v, "last_error") {
        problems.push(format!("last_error: {e}"));
    }
    let p = prov.as_deref().unwrap_or("");
    if p.ends_with("failed") || p == "error" {
        problems.push(format!("provision state {p}"));
    }
    let state = if !problems.is_empty() {
        TakeoverState::Failed
    } else if maintenance && reason.starts_with("bm2ironic:") {
        TakeoverState::HeldInMaintenance
    } else if maintenance {
        problems.push(format!("in maintenance: {reason}"));
        TakeoverState::Failed
    } else if power.is_none() || conductor.is_none() || p.ends_with("ing") || p.contains("wait") {
        TakeoverState::Pending
    } else if power.as_deref() == Some("error") {
        problems.push("power state error".into());
        TakeoverState::Failed
    } else {
        TakeoverState::Ok
    };
    NodeTakeover {
        uuid: uuid.into(),
        state,
        power_state: power,
        provision_state: prov,
        conductor,
        problems,
        log_errors: Vec::new(),
    }
}

/// Polls until no node is pending or `timeout` passes (pending nodes then fail: "no power state").
pub async fn check(
    api: &IronicApi,
    uuids: &[String],
    timeout: Duration,
    poll: Duration,
    mut progress: impl FnMut(&[NodeTakeover]),
) -> Vec<NodeTakeover> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut out = Vec::with_capacity(uuids.len());
        for u in uuids {
            out.push(match api.node(u).await {
                Ok(v) => judge(u, &v),
                Err(e) => NodeTakeover {
                    uuid: u.clone(),
                    state: TakeoverState::Failed,
                    power_state: None,
                    provision_state: None,
                    conductor: None,
                    problems: vec![e.to_string()],
                    log_errors: vec![],
                },
            });
        }
        progress(&out);
        let pending = out.iter().any(|n| n.state == TakeoverState::Pending);
        if !pending || Instant::now() >= deadline {
            for n in out.iter_mut().filter(|n| n.state == TakeoverState::Pending) {
                n.state = TakeoverState::Failed;
                n.problems.push(format!(
                    "not taken over within {}s (power state {}, conductor {})",
                    timeout.as_secs(),
                    n.power_state.as_deref().unwrap_or("never read"),
                    n.conductor.as_deref().unwrap_or("none")
                ));
            }
            return out;
        }
        tokio::time::sleep(poll).await;
    }
}

/// Attaches the warning/error log records that name each node.
pub fn attach_logs(nodes: &mut [NodeTakeover], records: &[Record]) {
    for n in nodes.iter_mut() {
        for r in records
            .iter()
            .filter(|r| r.level >= crate::core::logs::follow::LogLevel::Warning && r.nodes.contains(&n.uuid))
        {
            n.log_errors.push(format!("{} {}: {}", r.source, r.category.as_deref().unwrap_or("-"), r.message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn judging_nodes() {
        let ok =
            json!({"power_state": "power off", "provision_state": "active", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &ok).state, TakeoverState::Ok);
        let pending =
            json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": false});
        assert_eq!(judge("u", &pending).state, TakeoverState::Pending);
        let fault = json!({"power_state": null, "provision_state": "available", "conductor": "c1", "maintenance": true, "fault": "power failure", "maintenance_reason": "During sync_power_state, max retries exceeded"});
        let j = judge("u", &fault);
        assert_eq!(j.state, TakeoverState::Failed);
        assert!(j.problems[0].contains("power failure"));
        let held = json!({"power_state": null, "provision_state": "active", "maintenance": true, "maintenance_reason": "bm2ironic: nova_bm task_state was 'building'"});
        assert_eq!(judge("u", &held).state, TakeoverState::HeldInMaintenance);
        let err = json!({"power_state": "power on", "provision_state": "active", "conductor": "c1", "last_error": "Failed to prepare to deploy", "maintenance": false});
        assert_eq!(judge("u", &err).state, TakeoverState::Failed);
    }
}
