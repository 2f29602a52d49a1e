//! Which instances move to which compute host, pure. With the Ironic driver one nova-compute (Juno:
//! `ClusteredComputeManager`, every Ironic nova-compute sharing one `[DEFAULT] host`) runs every
//! node, and at start Juno's nova-compute **destroys** (tears down through Ironic) every instance
//! its driver reports whose `instances.host` is another host (`_destroy_evacuated_instances`). So
//! before it starts, each instance a migrated node holds must name the new host, and its
//! `instances.node` the node's uuid (the resource tracker looks instances up by host and node).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::core::source::model::BmNode;
use crate::core::source::nova::NovaFacts;

/// One instance's move.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostMove {
    pub instance_uuid: String,
    /// the nova_bm node's id
    pub nova_bm_id: i64,
    /// the nova_bm node's uuid, lower-cased: the Ironic node's uuid
    pub node_uuid: String,
    /// the nova_bm node's `service_host`
    pub nova_bm_host: Option<String>,
    /// Nova's `instances.host` and `instances.node` now
    pub old_host: Option<String>,
    pub old_node: Option<String>,
    pub new_host: String,
    pub new_node: String,
}

/// An instance left as it is, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostNote {
    pub instance_uuid: String,
    pub nova_bm_id: i64,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostPlan {
    pub to: String,
    pub moves: Vec<HostMove>,
    /// instances already on the new host with the right node
    pub unchanged: usize,
    pub notes: Vec<HostNote>,
    /// why nothing may be written (a baremetal nova-compute still running on an old host)
    pub refusals: Vec<String>,
}

impl HostPlan {
    /// Old hosts and how many instances move from each (None: `instances.host` NULL).
    pub fn from_hosts(&self) -> BTreeMap<Option<String>, usize> {
        let mut m = BTreeMap::new();
        for mv in &self.moves {
            *m.entry(mv.old_host.clone()).or_insert(0) += 1;
        }
        m
    }

    /// Leaves out the instances `given` names (an instance's uuid, or its node's), each kept as a
    /// note that says what staying behind means: an instance whose node was skipped is not moved
    /// to a host whose driver has no node for it. An uuid that names no move is the operator's
    /// mistake, said, never ignored.
    pub fn leave_out(&mut self, given: &[String]) -> Result<(), String> {
        for g in given {
            let g = g.trim().to_ascii_lowercase();
            let (out, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.moves)
                .into_iter()
                .partition(|m| m.instance_uuid.to_ascii_lowercase() == g || m.node_uuid == g);
            self.moves = kept;
            if out.is_empty() {
                return Err(format!(
                    "--leave-out {}: no instance to move has that uuid, nor a node holding one",
                    crate::core::text::visible_line(&g)
                ));
            }
            for m in out {
                let stays = m.old_host.as_deref().unwrap_or("(none)");
                self.notes.push(HostNote {
                    instance_uuid: m.instance_uuid,
                    nova_bm_id: m.nova_bm_id,
                    reason: format!(
                        "left out (--leave-out): it stays on host {} with the nova baremetal driver gone; Nova cannot reboot, rebuild or delete it until it is moved (migrate its node, then run hosts again)",
                        crate::core::text::visible_line(stays)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A host name bm2ironic writes: not blank, no blanks or control characters, at most 255 bytes
/// (Nova's column).
pub fn check_host_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the new host name is blank".into());
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("the new host name holds blanks or control characters: give the plain name nova-compute runs as ([DEFAULT] host)".into());
    }
    if name.len() > 255 {
        return Err("the new host name is longer than Nova's 255-byte column".into());
    }
    Ok(())
}

/// The plan: every live nova_bm node holding an instance, its instance in Nova, to `to`.
pub fn plan_hosts(nodes: &[BmNode], facts: &NovaFacts, to: &str) -> HostPlan {
    let mut plan =
        HostPlan { to: to.to_string(), moves: Vec::new(), unchanged: 0, notes: Vec::new(), refusals: Vec::new() };
    let mut claims: BTreeMap<String, usize> = BTreeMap::new();
    for n in nodes.iter().filter(|n| !n.deleted) {
        if let Some(i) = n.instance_uuid.as_deref().map(str::trim).filter(|i| !i.is_empty()) {
            *claims.entry(i.to_string()).or_insert(0) += 1;
        }
    }
    let note = |plan: &mut HostPlan, n: &BmNode, i: &str, reason: &str| {
        plan.notes.push(HostNote { instance_uuid: i.to_string(), nova_bm_id: n.id, reason: reason.into() })
    };
    for n in nodes.iter().filter(|n| !n.deleted) {
        let Some(iu) = n.instance_uuid.as_deref().map(str::trim).filter(|i| !i.is_empty()) else { continue };
        if claims.get(iu).copied().unwrap_or(0) > 1 {
            note(
                &mut plan,
                n,
                iu,
                "several nova_bm nodes claim this instance (duplicate-instance): decide it in the plan first",
            );
            continue;
        }
        let Some(node_uuid) =
            n.uuid.as_deref().map(|u| u.trim().to_ascii_lowercase()).filter(|u| uuid::Uuid::parse_str(u).is_ok())
        else {
            note(&mut plan, n, iu, "the nova_bm node has no valid uuid, so no Ironic node of that uuid (invalid-uuid)");
            continue;
        };
        let Some(inst) = facts.instances.get(iu).filter(|i| !i.deleted) else {
            note(&mut plan, n, iu, "Nova has no live instance of that uuid (missing or deleted): nothing to move");
            continue;
        };
        if inst.host.as_deref() == Some(to) && inst.node.as_deref() == Some(node_uuid.as_str()) {
            plan.unchanged += 1;
            continue;
        }
        plan.moves.push(HostMove {
            instance_uuid: iu.to_string(),
            nova_bm_id: n.id,
            node_uuid: node_uuid.clone(),
            nova_bm_host: n.service_host.clone(),
            old_host: inst.host.clone(),
            old_node: inst.node.clone(),
            new_host: to.to_string(),
            new_node: node_uuid,
        });
    }
    let old: BTreeSet<&str> = plan.moves.iter().filter_map(|m| m.old_host.as_deref()).filter(|h| *h != to).collect();
    for h in old {
        if let Some((_, why)) = facts.running_compute(h) {
            plan.refusals.push(format!(
                "the nova-compute on old host {} {why}: stop every baremetal nova-compute first (runbook step 3)",
                crate::core::text::visible_line(h),
            ));
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::source::nova::{NovaInstance, NovaService};

    fn node(id: i64, uuid: &str, host: &str, inst: Option<&str>) -> BmNode {
        BmNode {
            id,
            uuid: Some(uuid.into()),
            service_host: Some(host.into()),
            instance_uuid: inst.map(String::from),
            ..Default::default()
        }
    }

    fn inst(uuid: &str, host: &str, node: &str) -> NovaInstance {
        NovaInstance {
            uuid: uuid.into(),
            image_ref: None,
            root_gb: None,
            ephemeral_gb: None,
            node: Some(node.into()),
            host: Some(host.into()),
            vm_state: Some("active".into()),
            deleted: false,
            kernel_id: None,
            ramdisk_id: None,
        }
    }

    const U1: &str = "11111111-1111-1111-1111-111111111111";
    const U2: &str = "22222222-2222-2222-2222-222222222222";
    const U3: &str = "33333333-3333-3333-3333-333333333333";

    #[test]
    fn two_old_hosts_move_to_one() {
        let nodes = vec![
            node(1, &U1.to_uppercase(), "bm-1", Some("i-1")),
            node(2, U2, "bm-2", Some("i-2")),
            node(3, U3, "bm-2", None),
        ];
        let mut facts = NovaFacts::default();
        facts.instances.insert("i-1".into(), inst("i-1", "bm-1", U1));
        facts.instances.insert("i-2".into(), inst("i-2", "bm-2", U2));
        let p = plan_hosts(&nodes, &facts, "ironic-compute");
        assert_eq!(p.moves.len(), 2);
        assert_eq!(p.moves[0].new_node, U1, "the node uuid is lower-cased, as Ironic's");
        assert_eq!(p.from_hosts().len(), 2);
        assert!(p.refusals.is_empty());
        // applied: nothing left to move
        facts.instances.insert("i-1".into(), inst("i-1", "ironic-compute", U1));
        facts.instances.insert("i-2".into(), inst("i-2", "ironic-compute", U2));
        let p = plan_hosts(&nodes, &facts, "ironic-compute");
        assert!(p.moves.is_empty() && p.unchanged == 2);
    }

    #[test]
    fn running_old_host_refuses_and_oddities_are_noted() {
        let nodes = vec![
            node(1, U1, "bm-1", Some("i-1")),
            node(2, U2, "bm-2", Some("i-gone")),
            node(3, U3, "bm-2", Some("i-1")),
            node(4, "not-a-uuid", "bm-2", Some("i-4")),
        ];
        let mut facts = NovaFacts::default();
        facts.instances.insert("i-1".into(), inst("i-1", "bm-1", U1));
        facts.instances.insert("i-4".into(), inst("i-4", "bm-2", "x"));
        let now = chrono::Utc::now().naive_utc();
        facts.now = Some(now);
        facts.services.push(NovaService {
            host: "bm-1".into(),
            binary: "nova-compute".into(),
            updated_at: Some(now),
            created_at: None,
            disabled: false,
        });
        let p = plan_hosts(&nodes, &facts, "new");
        assert!(p.moves.is_empty(), "{:?}", p.moves);
        assert_eq!(p.notes.len(), 4, "{:?}", p.notes);
        assert!(p.refusals.is_empty(), "no move from bm-1, so its running service does not matter");
        let nodes = vec![node(1, U1, "bm-1", Some("i-1"))];
        let p = plan_hosts(&nodes, &facts, "new");
        assert_eq!(p.refusals.len(), 1, "{:?}", p.refusals);
        assert!(
            check_host_name("a b").is_err()
                && check_host_name("x\u{1b}[2J").is_err()
                && check_host_name("ok-1").is_ok()
        );
    }
}
