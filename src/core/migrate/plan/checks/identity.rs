//! Which node this is: `missing-uuid`, `invalid-uuid`, `duplicate-uuid` (the uuid a node is written
//! with), then `already-migrated` and `uuid-in-ironic` (what Ironic already holds under it). See
//! docs/conflicts.md, and docs/mapping.md §2.3 for the uuids we generate.

use std::ops::ControlFlow;

use super::Checks;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::{Fate, NodeAction};
use crate::core::migrate::plan::uuids::BM2IRONIC_NS;
use crate::core::source::model::BmNode;

/// The uuid we give a node whose own is missing, invalid or taken (stable across runs).
fn generated_uuid(n: &BmNode) -> String {
    uuid::Uuid::new_v5(
        &BM2IRONIC_NS,
        format!("nova_bm-node:{}:{}", n.id, n.service_host.as_deref().unwrap_or("")).as_bytes(),
    )
    .to_string()
}

impl Checks<'_> {
    /// `missing-uuid` / `invalid-uuid` (no usable uuid), else `duplicate-uuid` (a lower nova_bm id
    /// has it); `generate` gives the node a stable uuid of ours.
    pub(crate) fn uuid(&mut self, n: &BmNode, f: &mut Fate) {
        let subject = Subject::Node { nova_bm_id: n.id };
        let raw_uuid = n.uuid.as_deref().map(str::trim).filter(|u| !u.is_empty());
        if f.uuid.is_none() {
            let (code, detail) = match raw_uuid {
                None => (
                    ConflictCode::MissingUuid,
                    format!("nova_bm node {} has no uuid, so no Nova instance can point at it", n.id),
                ),
                Some(r) => {
                    (ConflictCode::InvalidUuid, format!("nova_bm node {} has uuid '{r}', which is not a uuid", n.id))
                }
            };
            let a = self.d.raise(code, subject, None, detail);
            f.apply(code, a);
            if a == Some(Action::Generate) {
                f.uuid = Some(generated_uuid(n));
            }
        } else if let Some(first) = f.uuid.as_deref().and_then(|u| self.uuid_holder.get(u)).filter(|id| **id != n.id) {
            let a = self.d.raise(
                ConflictCode::DuplicateUuid,
                subject,
                f.uuid.as_deref(),
                format!("nova_bm node {first} has the same uuid"),
            );
            f.apply(ConflictCode::DuplicateUuid, a);
            if a == Some(Action::Generate) {
                f.uuid = Some(generated_uuid(n));
            }
        }
    }

    /// An Ironic node with this uuid: `already-migrated` when it is an earlier run's copy of this row
    /// (the node is done: `Break`), else `uuid-in-ironic` (`replace` deletes it first).
    pub(crate) fn uuid_in_ironic(&mut self, n: &BmNode, f: &mut Fate) -> ControlFlow<()> {
        let subject = Subject::Node { nova_bm_id: n.id };
        let uuid_s = f.uuid.clone();
        let uuid_s = uuid_s.as_deref();
        let Some(existing) = uuid_s.and_then(|u| self.by_uuid.get(u)) else {
            return ControlFlow::Continue(());
        };
        if existing.migrated_from() == Some(n.id) && existing.run_finished == Some(false) {
            // a node of a run not recorded here as finished: half-adopted, or kept in another state
            // directory; never taken for done (docs/runs.md)
            let run = existing.migrated_by_run().unwrap_or("?");
            let a = self.d.raise(
                ConflictCode::UnrecordedRun,
                subject,
                uuid_s,
                format!(
                    "Ironic node {} came from this nova_bm node, but its run {run} is not recorded as finished where runs are kept here (provision state {}): finish or roll it back with the --state-dir or Ironic database that holds it",
                    existing.id,
                    existing.provision_state.as_deref().unwrap_or("none")
                ),
            );
            f.apply(ConflictCode::UnrecordedRun, a);
            return ControlFlow::Break(());
        }
        if existing.migrated_from() == Some(n.id) {
            let a = self.d.raise(
                ConflictCode::AlreadyMigrated,
                subject,
                uuid_s,
                format!(
                    "Ironic node {} came from this nova_bm node (run {})",
                    existing.id,
                    existing.migrated_by_run().unwrap_or("?")
                ),
            );
            f.apply(ConflictCode::AlreadyMigrated, a);
            f.action = NodeAction::AlreadyMigrated;
            return ControlFlow::Break(());
        }
        let a = self.d.raise(
            ConflictCode::UuidInIronic,
            subject,
            uuid_s,
            format!(
                "Ironic node {} (provision state {}) already has this uuid",
                existing.id,
                existing.provision_state.as_deref().unwrap_or("none")
            ),
        );
        f.apply(ConflictCode::UuidInIronic, a);
        if a == Some(Action::Replace) {
            f.replaces = Some(existing.id);
        }
        ControlFlow::Continue(())
    }
}
