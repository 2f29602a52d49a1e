//! One node through Ironic's API, from wherever it stands: enroll it (driver, driver_info,
//! properties, resource class, instance_info, the marker in `extra`), create its ports (the VIF in
//! `extra.vif_port_id`: `internal_info` is Ironic's own; nova-compute attaches the VIF again through
//! Ironic's VIF API when it starts and plugs its instances' VIFs), `manage`, then
//! `adopt` (a node with an instance) or `provide` (a free one), and maintenance with its reason.
//! Every wait is a bounded poll. Run again, it continues from the node's state; nothing here asks
//! Ironic for a power action, a deploy or a clean of an adopted node.

use std::time::Instant;

use serde_json::{json, Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::options::ApiLoadOptions;
use super::pace::{Pace, MIN_WAIT};
use super::watch::Watch;
use crate::core::ironic::api::{nodes, ApiError, IronicApi};
use crate::core::ironic::marker;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::events::LoadEvent;
use crate::core::migrate::plan::{IronicNode, NodePlan, Rows};

/// Where a node ended this time.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// it reached its planned state (`created`: enrolled now; `ports`: ports created now;
    /// `changed`: anything was asked of Ironic this time)
    Done { state: String, created: bool, ports: usize, changed: bool },
    /// a step failed: Ironic's error; the node stays where it is
    Failed { state: String, error: String },
    /// cancelled between steps: a rerun continues
    Interrupted { state: String },
    /// Ironic did not answer (connection refused, reset, timed out): not the node's fault; it stays
    /// where it is and a rerun continues it
    Unreachable { state: String, error: String },
}

/// Why a step did not end: Ironic's error (`what`: the step, for the message), or a message of ours.
enum StepErr {
    Api(ApiError, String),
    Text(String),
}

impl StepErr {
    fn outcome(self, state: &str) -> Outcome {
        let state = state.to_string();
        match self {
            StepErr::Api(e @ ApiError::Unreachable { .. }, _) => Outcome::Unreachable { state, error: e.to_string() },
            StepErr::Api(e, what) if what.is_empty() => Outcome::Failed { state, error: e.message() },
            StepErr::Api(e, what) => Outcome::Failed { state, error: format!("{what}: {}", e.message()) },
            StepErr::Text(error) => Outcome::Failed { state, error },
        }
    }
}

/// An API call's error as the outcome of a node in `state`, `what` naming the step.
fn api_fail(state: &str, what: &str, e: ApiError) -> Outcome {
    StepErr::Api(e, what.to_string()).outcome(state)
}

pub(super) struct Cx<'a> {
    pub api: &'a IronicApi,
    pub run_id: &'a str,
    pub opts: &'a ApiLoadOptions,
    pub events: &'a UnboundedSender<LoadEvent>,
    pub cancel: &'a CancellationToken,
    /// how long each state usually lasts, learned from the nodes before (pace.rs)
    pub pace: &'a Pace,
    /// the shared watch of the nodes waiting on the conductor (watch.rs)
    pub watch: &'a Watch,
}

fn state(v: &Value) -> String {
    v["provision_state"].as_str().unwrap_or("").to_string()
}

fn last_error(v: &Value) -> String {
    v["last_error"].as_str().filter(|s| !s.is_empty()).unwrap_or("(Ironic gave no last_error)").to_string()
}

fn is_transitional(s: &str) -> bool {
    s.ends_with("ing") || s.contains("wait")
}

/// The body of `POST /v1/nodes`.
pub(super) fn create_body(n: &IronicNode, run_id: &str, version: Option<(u32, u32)>) -> Value {
    let mut extra = n.extra();
    marker::set_run(&mut extra, n.kind == TargetKind::Juno, run_id);
    let mut b = json!({
        "uuid": n.uuid,
        "driver": n.driver,
        "driver_info": n.driver_info.expose_json(),
        "properties": n.properties,
        "instance_info": n.instance_info,
        "extra": extra,
    });
    if let Some(rc) = &n.resource_class {
        b["resource_class"] = json!(rc);
    }
    // an instance whose next boot was learned: the ramdisk deploy netboots it (docs/mapping.md)
    if let Some(d) = &n.deploy_interface {
        b["deploy_interface"] = json!(d);
    }
    if let Some(bi) = &n.boot_interface {
        b["boot_interface"] = json!(bi);
    }
    if let Some(i) = &n.instance_uuid {
        b["instance_uuid"] = json!(i);
    }
    if let (Some(name), true) = (&n.instance_name, version.is_some_and(|v| v >= (1, 104))) {
        b["instance_name"] = json!(name);
    }
    b
}

/// The fields of the plan that differ from what Ironic holds (passwords, which Ironic shows masked,
/// are compared by presence): what a rerun patches before the next step.
pub(super) fn drifted(cur: &Value, n: &IronicNode) -> Map<String, Value> {
    let mut out = Map::new();
    let di = n.driver_info.expose_json();
    let di_ok = di.as_object().is_some_and(|m| {
        m.iter().all(|(k, v)| {
            let found = &cur["driver_info"][k];
            if n.driver_info.has_secret(k) {
                found.as_str().is_some_and(|s| !s.is_empty())
            } else {
                found == v
            }
        })
    });
    if !di_ok {
        out.insert("driver_info".into(), di);
    }
    // Ironic adds keys of its own (`vendor` while verifying): ours must be there
    let props_ok = n.properties.as_object().is_none_or(|m| m.iter().all(|(k, v)| &cur["properties"][k] == v));
    if !props_ok {
        let mut merged = cur["properties"].as_object().cloned().unwrap_or_default();
        merged.extend(n.properties.as_object().cloned().unwrap_or_default());
        out.insert("properties".into(), Value::Object(merged));
    }
    let ii_ok = n.instance_info.as_object().is_none_or(|m| m.iter().all(|(k, v)| &cur["instance_info"][k] == v));
    if !ii_ok {
        out.insert("instance_info".into(), n.instance_info.clone());
    }
    if let Some(i) = &n.instance_uuid {
        if cur["instance_uuid"].as_str() != Some(i.as_str()) {
            out.insert("instance_uuid".into(), json!(i));
        }
    }
    for (k, want) in [("deploy_interface", &n.deploy_interface), ("boot_interface", &n.boot_interface)] {
        if let Some(w) = want.as_deref().filter(|w| cur[k].as_str() != Some(*w)) {
            out.insert(k.into(), json!(w));
        }
    }
    out
}

impl Cx<'_> {
    fn emit(&self, np: &NodePlan, uuid: &str, state: &str) {
        let _ = self.events.send(LoadEvent::NodeState {
            nova_bm_id: np.nova_bm_id,
            uuid: uuid.to_string(),
            state: state.to_string(),
        });
    }

    /// Waits until the node leaves the transitional states (bounded by the step timeout). With
    /// `expect` (the state its action just put it in) it first waits on the shared watch
    /// (`watch.rs`) for the node to leave that state, without a request of its own; then, and for
    /// every state after, it reads the node. A node the watch cannot see (its state unchanged after
    /// a wake) is polled by itself from there on, with the waits `pace.rs` learned. The reads ask
    /// for the fields the load decides on only (cheaper for Ironic), and the last one is the
    /// answer: what a rerun must compare in full, `drive` reads itself.
    async fn settle(&self, np: &NodePlan, uuid: &str, expect: Option<&str>) -> Result<Value, StepErr> {
        let started = Instant::now();
        let mut wait = MIN_WAIT;
        let mut shown = String::new();
        if let Some(e) = expect {
            self.emit(np, uuid, e);
            shown = e.to_string();
        }
        // the state the node was first polled in: how long it lasted teaches the next nodes (pace.rs)
        let mut first: Option<String> = None;
        let mut watching = expect.map(String::from);
        let mut watched: Option<String> = None;
        let mut blind = false;
        let poll =
            format!("/v1/nodes/{uuid}?fields=uuid,provision_state,target_provision_state,last_error,maintenance");
        loop {
            if let Some(st) = watching.take() {
                let left = self.opts.step_timeout.saturating_sub(started.elapsed());
                let _ = tokio::time::timeout(left, self.watch.until_left(&st, uuid)).await;
                watched = Some(st);
            }
            let v = self.api.get(&poll).await.map_err(|e| StepErr::Api(e, String::new()))?;
            let s = state(&v);
            if s != shown {
                self.emit(np, uuid, &s);
                shown = s.clone();
            }
            // a failed state keeps its target (`adopt failed` still aims at `active`)
            let failed = s.ends_with("failed") || s == "error";
            if failed || (!is_transitional(&s) && v["target_provision_state"].is_null()) {
                if let (Some(f), false) = (&first, failed) {
                    self.pace.learn(f, started.elapsed());
                }
                self.api.timings().add(format!("wait → {s}"), started.elapsed());
                return Ok(v);
            }
            if started.elapsed() > self.opts.step_timeout {
                return Err(StepErr::Text(format!(
                    "still {s} after {}s (Ironic's last_error: {})",
                    self.opts.step_timeout.as_secs(),
                    last_error(&v)
                )));
            }
            if !blind {
                if watched.as_deref() != Some(s.as_str()) {
                    watching = Some(s);
                    continue;
                }
                // woken, yet still in the state: the watch's list does not show this node
                tracing::debug!(%uuid, state = %s, "not seen by the state list: polled by itself");
                blind = true;
            }
            if first.is_none() {
                let left = self.opts.step_timeout.saturating_sub(started.elapsed());
                if let Some((long, then)) = self.pace.first_wait(&s, started.elapsed(), left) {
                    tokio::time::sleep(long).await;
                    wait = then.min(self.opts.poll);
                    first = Some(s);
                    continue;
                }
                first = Some(s);
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 3 / 2).min(self.opts.poll);
        }
    }

    /// A provision action, then the wait for its end.
    async fn act(&self, np: &NodePlan, uuid: &str, target: &str) -> Result<Value, StepErr> {
        tracing::info!(run = %self.run_id, %uuid, target, "provision action");
        nodes::provision(self.api, uuid, target).await.map_err(|e| StepErr::Api(e, target.to_string()))?;
        // the state each action puts a node in at once (Ironic's state machine)
        let expect = match target {
            "manage" => Some("verifying"),
            "adopt" => Some("adopting"),
            "provide" => Some("cleaning"),
            _ => None,
        };
        self.settle(np, uuid, expect).await
    }

    /// The node's ports that Ironic does not have yet (a node enrolled just now has none).
    async fn ensure_ports(&self, rows: &Rows, uuid: &str, created: bool) -> Result<usize, ApiError> {
        let existing = if created { Vec::new() } else { nodes::ports(self.api, uuid).await? };
        let mut created = 0;
        for p in &rows.ports {
            if existing.iter().any(|e| e["address"].as_str() == Some(p.address.as_str())) {
                continue;
            }
            let mut extra = p.extra();
            if let Some(vif) = &p.vif {
                extra["vif_port_id"] = json!(vif);
            }
            let body = json!({"uuid": p.uuid, "address": p.address, "node_uuid": uuid,
                "pxe_enabled": p.pxe_enabled, "extra": extra});
            nodes::create_port(self.api, &body).await?;
            created += 1;
        }
        Ok(created)
    }

    /// Drives one node to its planned state.
    pub async fn drive(&self, np: &NodePlan, rows: &Rows) -> Outcome {
        let n = &rows.node;
        let fail = |state: &str, error: String| Outcome::Failed { state: state.to_string(), error };
        let uuid = n.uuid.as_str();
        let mut created = false;
        // enrolled first and looked up only when Ironic already has the uuid (a rerun): a fresh
        // node costs Ironic one request here, not two
        let mut cur = match nodes::create(self.api, &create_body(n, self.run_id, self.api.version())).await {
            Ok(v) => {
                created = true;
                tracing::info!(run = %self.run_id, %uuid, nova_bm_id = np.nova_bm_id, "node enrolled");
                v
            }
            Err(e) if e.status() == Some(409) => match nodes::find(self.api, uuid).await {
                Err(e) => return api_fail("", "", e),
                Ok(None) => return api_fail("", "enroll", e),
                Ok(Some(v)) => {
                    if marker::nova_bm_id(&v["extra"]) != Some(np.nova_bm_id) {
                        return fail(
                            &state(&v),
                            format!("Ironic node {uuid} exists and did not come from nova_bm node {}", np.nova_bm_id),
                        );
                    }
                    v
                }
            },
            Err(e) => return api_fail("", "enroll", e),
        };
        self.emit(np, uuid, &state(&cur));
        let ports = match self.ensure_ports(rows, uuid, created).await {
            Ok(k) => k,
            Err(e) => return api_fail(&state(&cur), "ports", e),
        };
        let target = n.provision_state.as_deref().unwrap_or("available");
        let adopt = n.instance_uuid.is_some();
        let mut changed = created || ports > 0;
        for _ in 0..8 {
            if self.cancel.is_cancelled() {
                return Outcome::Interrupted { state: state(&cur) };
            }
            let s = state(&cur);
            if s == target {
                break;
            }
            let step = match s.as_str() {
                s if is_transitional(s) => self.settle(np, uuid, None).await,
                "enroll" | "manageable" | "adopt failed" => {
                    // a node enrolled by this very run holds the plan already; one found (a rerun)
                    // is read whole and its differences patched before the next action
                    let drift = if created {
                        Map::new()
                    } else {
                        match nodes::find(self.api, uuid).await {
                            Ok(Some(full)) => drifted(&full, n),
                            Ok(None) => return fail(&s, format!("Ironic node {uuid} is gone")),
                            Err(e) => return api_fail(&s, "", e),
                        }
                    };
                    changed = true;
                    if let Err(e) = nodes::replace_fields(self.api, uuid, &drift).await {
                        let what = format!("update {}", drift.keys().cloned().collect::<Vec<_>>().join(", "));
                        return api_fail(&s, &what, e);
                    }
                    let action = match (s.as_str(), adopt, target) {
                        ("enroll", ..) => "manage",
                        (_, true, _) => "adopt",
                        ("manageable", false, "available") => "provide",
                        (_, false, _) => {
                            return fail(&s, format!("a free node in {s} cannot be brought back to {target}"))
                        }
                    };
                    match self.act(np, uuid, action).await {
                        Ok(v) if state(&v) == s || state(&v).ends_with("failed") => {
                            return fail(&state(&v), format!("{action} failed: {}", last_error(&v)))
                        }
                        other => other,
                    }
                }
                other => {
                    return fail(other, format!("provision state {other}, planned {target}: {}", last_error(&cur)))
                }
            };
            cur = match step {
                Ok(v) => v,
                Err(e) => return e.outcome(&s),
            };
        }
        let s = state(&cur);
        if s != target {
            return fail(&s, format!("did not reach {target}"));
        }
        if n.maintenance && cur["maintenance"].as_bool() != Some(true) {
            let reason = n.maintenance_reason.clone().unwrap_or_else(|| "bm2ironic".into());
            if let Err(e) = nodes::maintenance_on(self.api, uuid, &reason).await {
                return api_fail(&s, "maintenance", e);
            }
            changed = true;
        }
        tracing::info!(run = %self.run_id, %uuid, state = %s, created, ports, "node done");
        Outcome::Done { state: s, created, ports, changed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitional_states() {
        for s in ["verifying", "adopting", "cleaning", "clean wait", "deploying", "wait call-back"] {
            assert!(is_transitional(s), "{s}");
        }
        for s in ["enroll", "manageable", "active", "available", "adopt failed"] {
            assert!(!is_transitional(s), "{s}");
        }
    }
}
