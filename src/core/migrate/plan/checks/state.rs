//! What the row says of its life and its instance: `deleted-node`, the instance uuid and the task
//! state (`inconsistent-state`, `mid-deploy`, `failed-deploy`, `unknown-state`), `duplicate-instance`,
//! `instance-missing-in-nova` and `instance-in-ironic`. See docs/conflicts.md.

use std::ops::ControlFlow;

use super::Checks;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::{Fate, NodeAction};
use crate::core::migrate::plan::rows::nova_instance;
use crate::core::migrate::plan::uuids::uuid_form;
use crate::core::migrate::states::{BmState, StateFate};
use crate::core::source::model::{BmNode, InventoryNode};

impl Checks<'_> {
    /// `deleted-node`: a soft-deleted row; when skipped, its interfaces are `orphan-interface`s and
    /// the node is done (`Break`).
    pub(crate) fn deleted(&mut self, entry: &InventoryNode, f: &mut Fate) -> ControlFlow<()> {
        let n = &entry.node;
        if !n.deleted {
            return ControlFlow::Continue(());
        }
        let uuid_s = f.uuid.clone();
        let uuid_s = uuid_s.as_deref();
        let a = self.d.raise(
            ConflictCode::DeletedNode,
            Subject::Node { nova_bm_id: n.id },
            uuid_s,
            format!(
                "soft-deleted in nova_bm at {}",
                n.deleted_at.map(|t| t.to_string()).unwrap_or_else(|| "an unknown time".into())
            ),
        );
        f.apply(ConflictCode::DeletedNode, a);
        if f.action != NodeAction::Skip {
            return ControlFlow::Continue(());
        }
        for i in &entry.interfaces {
            self.d.raise(
                ConflictCode::OrphanInterface,
                Subject::Interface { nova_bm_id: n.id, interface_id: i.id },
                uuid_s,
                format!("interface {} of soft-deleted node {}", i.address.as_deref().unwrap_or("-"), n.id),
            );
        }
        ControlFlow::Break(())
    }

    /// `inconsistent-state`: the row holds an instance_uuid that is not a uuid.
    pub(crate) fn instance_uuid(&mut self, n: &BmNode, f: &mut Fate) {
        let inst_norm = n.instance_uuid.as_deref().and_then(uuid_form);
        if f.keep_instance && inst_norm.is_none() {
            let raw = n.instance_uuid.as_deref().unwrap_or("");
            let a = self.d.raise(
                ConflictCode::InconsistentState,
                Subject::Node { nova_bm_id: n.id },
                f.uuid.as_deref(),
                format!("instance_uuid '{raw}' is not a uuid"),
            );
            f.apply(ConflictCode::InconsistentState, a);
            if a == Some(Action::Maintenance) {
                f.keep_instance = false;
                f.maintenance_reasons.push(format!("nova_bm instance_uuid '{raw}' was not a uuid at migration"));
            }
        }
    }

    /// The task state must agree with the row: `mid-deploy`, `failed-deploy`, `inconsistent-state`
    /// (an instance beside a free state, or a busy state without one), `unknown-state`.
    pub(crate) fn task_state(&mut self, n: &BmNode, f: &mut Fate) {
        if n.deleted || f.action == NodeAction::Skip {
            return;
        }
        let state = BmState::parse(n.task_state.as_deref());
        let name = state.name().to_string();
        let inst = n.instance_uuid.as_deref().unwrap_or("");
        let found = match state.fate(f.keep_instance) {
            StateFate::Active | StateFate::Free => None,
            StateFate::MidDeploy => Some((
                ConflictCode::MidDeploy,
                format!("instance {inst} with task_state '{name}': the deploy never finished"),
                format!("nova_bm task_state was '{name}' (deploy not finished) at migration"),
            )),
            StateFate::FailedDeploy if f.keep_instance => Some((
                ConflictCode::FailedDeploy,
                format!("instance {inst} with task_state '{name}'"),
                format!("nova_bm task_state was '{name}' (failed deploy) at migration"),
            )),
            StateFate::FailedDeploy => Some((
                ConflictCode::FailedDeploy,
                format!("no instance, task_state '{name}': its last deploy failed"),
                format!("nova_bm task_state was '{name}' (failed deploy) at migration"),
            )),
            StateFate::Inconsistent if f.keep_instance => Some((
                ConflictCode::InconsistentState,
                format!("instance {inst} beside task_state '{name}', which means no instance"),
                format!("nova_bm held instance {inst} with task_state '{name}' at migration"),
            )),
            StateFate::Inconsistent => Some((
                ConflictCode::InconsistentState,
                format!("task_state '{name}' but no instance"),
                format!("nova_bm task_state was '{name}' without an instance at migration"),
            )),
            StateFate::Unknown => Some((
                ConflictCode::UnknownState,
                format!("task_state '{name}' is not a nova baremetal state"),
                format!("nova_bm task_state was '{name}' (unknown) at migration"),
            )),
        };
        if let Some((code, detail, reason)) = found {
            let a = self.d.raise(code, Subject::Node { nova_bm_id: n.id }, f.uuid.as_deref(), detail);
            f.apply(code, a);
            if a == Some(Action::Maintenance) {
                f.maintenance_reasons.push(reason);
            }
        }
    }

    /// Several live nova_bm nodes claim one instance. Only evidence decides which keeps it: with
    /// Nova's `instances.node` naming one, that one keeps it unflagged and every other claimant is
    /// `duplicate-instance` (`free` drops it from them); without, every claimant is
    /// `ambiguous-instance` and the operator decides each (`keep-instance` for one at most, `free`,
    /// `maintenance` (written without it, held) or `skip`).
    pub(crate) fn duplicate_instance(&mut self, n: &BmNode, f: &mut Fate) {
        if !f.keep_instance {
            return;
        }
        let inst_norm = n.instance_uuid.as_deref().and_then(uuid_form).unwrap_or_default();
        let inst: &str = &inst_norm;
        let Some(claimants) = self.instance_claimants.get(inst) else { return };
        let subject = Subject::Node { nova_bm_id: n.id };
        if let Some(holder) = self.instance_holder.get(inst) {
            if *holder == n.id {
                return; // Nova says this one runs it
            }
            let a = self.d.raise(
                ConflictCode::DuplicateInstance,
                subject,
                f.uuid.as_deref(),
                format!("instance {inst} is also held by nova_bm node {holder}, the one Nova's instances.node names"),
            );
            f.apply(ConflictCode::DuplicateInstance, a);
            if a == Some(Action::Free) {
                f.keep_instance = false;
            }
            return;
        }
        let code = ConflictCode::AmbiguousInstance;
        let others: Vec<String> = claimants.iter().filter(|id| **id != n.id).map(|id| id.to_string()).collect();
        let why = match self.nova {
            None => "without the Nova database nothing says which machine runs it (give --nova-db)",
            Some(_) => "Nova's instances.node names none of them",
        };
        let detail = format!("instance {inst} is also claimed by nova_bm node(s) {}: {why}", others.join(", "));
        let keepers: Vec<String> = claimants
            .iter()
            .filter(|id| self.d.decided(code, &Subject::Node { nova_bm_id: **id }) == Some(Action::KeepInstance))
            .map(|id| id.to_string())
            .collect();
        if keepers.len() > 1 && keepers.contains(&n.id.to_string()) {
            let detail = format!(
                "{detail}; keep-instance is decided for nova_bm nodes {}: one machine runs it, decide one",
                keepers.join(" and ")
            );
            self.d.raise_undecided(code, subject, f.uuid.as_deref(), detail);
            f.apply(code, None);
            return;
        }
        let a = self.d.raise(code, subject, f.uuid.as_deref(), detail);
        f.apply(code, a);
        match a {
            Some(Action::Free) => f.keep_instance = false,
            Some(Action::Maintenance) => {
                f.keep_instance = false;
                f.maintenance_reasons.push(format!("claimed instance {inst} with other nova_bm nodes: unproven"));
            }
            _ => {}
        }
    }

    /// `instance-missing-in-nova` (only with Nova's facts): the instance is not in Nova's instances
    /// table, or is deleted there.
    pub(crate) fn instance_missing_in_nova(&mut self, n: &BmNode, f: &mut Fate) {
        let Some(facts) = self.nova.filter(|_| f.keep_instance) else { return };
        let inst_norm = n.instance_uuid.as_deref().and_then(uuid_form).unwrap_or_default();
        let inst: &str = &inst_norm;
        let raw_inst = n.instance_uuid.as_deref().unwrap_or("").trim();
        let gone = match facts.instances.get(inst).or_else(|| facts.instances.get(raw_inst)) {
            None => Some("is not in Nova's instances table"),
            Some(i) if i.deleted => Some("is deleted in Nova"),
            Some(_) => None,
        };
        if let Some(why) = gone {
            let a = self.d.raise(
                ConflictCode::InstanceMissingInNova,
                Subject::Node { nova_bm_id: n.id },
                f.uuid.as_deref(),
                format!("instance {inst} {why}"),
            );
            f.apply(ConflictCode::InstanceMissingInNova, a);
            match a {
                Some(Action::Free) => f.keep_instance = false,
                Some(Action::Maintenance) => f.maintenance_reasons.push(format!("instance {inst} {why} at migration")),
                _ => {}
            }
        }
    }

    /// `instance-in-ironic`: another Ironic node (not the one this replaces) holds the instance.
    pub(crate) fn instance_in_ironic(&mut self, n: &BmNode, f: &mut Fate) {
        if !f.keep_instance {
            return;
        }
        let inst_norm = n.instance_uuid.as_deref().and_then(uuid_form).unwrap_or_default();
        let inst: &str = &inst_norm;
        if let Some(other) = self.by_instance.get(inst) {
            let other_uuid = other.uuid.as_deref().map(|u| u.trim().to_ascii_lowercase());
            if other_uuid.as_deref() != f.uuid.as_deref() && f.replaces != Some(other.id) {
                let a = self.d.raise(
                    ConflictCode::InstanceInIronic,
                    Subject::Node { nova_bm_id: n.id },
                    f.uuid.as_deref(),
                    format!("Ironic node {} already holds instance {inst}", other.uuid.as_deref().unwrap_or("?")),
                );
                f.apply(ConflictCode::InstanceInIronic, a);
            }
        }
    }

    /// `incomplete-instance-info` (Juno only): the node keeps its instance, but its `instance_info`
    /// would lack `image_source` (no Nova facts, or no image in Nova) or `root_gb` (neither Nova nor
    /// nova_bm gives one above 0). Juno's pxe deploy refuses a node without both, so that Ironic
    /// could never rebuild the instance or tear it down.
    pub(crate) fn juno_instance_info(&mut self, n: &BmNode, f: &mut Fate) {
        if self.kind != TargetKind::Juno || !f.keep_instance || f.action == NodeAction::Skip {
            return;
        }
        let inst = nova_instance(n, self.nova);
        let mut missing = Vec::new();
        if inst.and_then(|i| i.image_ref.as_deref()).is_none_or(str::is_empty) {
            missing.push(if self.nova.is_some() {
                "image_source (Nova names no image for the instance)"
            } else {
                "image_source (no Nova database given: --nova-db)"
            });
        }
        // as the rows take it: Nova's, else nova_bm's root_mb in whole gigabytes (not a negative one)
        let root_gb = inst.and_then(|i| i.root_gb).or(n.root_mb.filter(|mb| *mb >= 0).map(|mb| mb / 1024));
        if root_gb.unwrap_or(0) <= 0 {
            missing.push("root_gb");
        }
        if missing.is_empty() {
            return;
        }
        let what = missing.join(" and ");
        let a = self.d.raise(
            ConflictCode::IncompleteInstanceInfo,
            Subject::Node { nova_bm_id: n.id },
            f.uuid.as_deref(),
            format!(
                "instance {} would get no instance_info.{what}: Juno's deploy needs both image_source and root_gb",
                n.instance_uuid.as_deref().unwrap_or("-")
            ),
        );
        f.apply(ConflictCode::IncompleteInstanceInfo, a);
        if a == Some(Action::Maintenance) {
            f.maintenance_reasons.push(format!(
                "instance_info lacks {}: set it before Juno rebuilds or tears the instance down",
                missing.iter().map(|m| m.split(' ').next().unwrap_or(m)).collect::<Vec<_>>().join(" and ")
            ));
        }
    }
}
