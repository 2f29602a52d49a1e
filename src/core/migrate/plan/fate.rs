//! A node's fate: what becomes of it (`NodeAction`) and what the rules decided for it (`Fate`),
//! which the checks fill in and its rows are built from.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use super::boot::NextBoot;
use super::uuids::normalize_uuid;
use crate::core::migrate::conflict::{Action, ConflictCode};
use crate::core::source::model::BmNode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeAction {
    Create,
    /// delete the Ironic node holding this uuid, then create ours
    Replace,
    Skip,
    AlreadyMigrated,
    /// an unresolved blocking conflict
    Blocked,
}

impl NodeAction {
    /// The name it has on the wire (its JSON string).
    pub fn as_str(self) -> &'static str {
        match self {
            NodeAction::Create => "create",
            NodeAction::Replace => "replace",
            NodeAction::Skip => "skip",
            NodeAction::AlreadyMigrated => "already-migrated",
            NodeAction::Blocked => "blocked",
        }
    }
}

pub(super) fn has_instance(n: &BmNode) -> bool {
    n.instance_uuid.as_deref().is_some_and(|s| !s.is_empty())
}

/// The per-node outcome of the rules, before rows are built.
pub(super) struct Fate {
    pub(super) action: NodeAction,
    pub(super) uuid: Option<String>,
    pub(super) keep_instance: bool,
    pub(super) maintenance_reasons: Vec<String>,
    pub(super) unsupported_power: bool,
    pub(super) skipped_interfaces: HashSet<i64>,
    pub(super) codes: Vec<ConflictCode>,
    pub(super) replaces: Option<i64>,
    /// impossible sizes are left out of the rows (`invalid-size`)
    pub(super) cleaned: bool,
    /// the instance's next boot (learned, or the operator's `unknown-boot` decision)
    pub(super) boot: Option<Arc<NextBoot>>,
}

impl Fate {
    /// A row's fate before any rule: created with its own uuid, keeping its instance.
    pub(super) fn new(n: &BmNode) -> Fate {
        Fate {
            action: NodeAction::Create,
            uuid: n.uuid.as_deref().and_then(normalize_uuid),
            keep_instance: has_instance(n) && !n.deleted,
            maintenance_reasons: Vec::new(),
            unsupported_power: false,
            skipped_interfaces: HashSet::new(),
            codes: Vec::new(),
            replaces: None,
            cleaned: false,
            boot: None,
        }
    }

    pub(super) fn apply(&mut self, code: ConflictCode, action: Option<Action>) {
        self.codes.push(code);
        match action {
            None if self.action != NodeAction::Skip => self.action = NodeAction::Blocked,
            None => {}
            Some(Action::Skip) => self.action = NodeAction::Skip,
            _ => {}
        }
    }
}
