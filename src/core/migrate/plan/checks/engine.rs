//! What every rule works with: `Checks` (the `Decider` that raises conflicts and applies the
//! operator's decisions as they are found, and the `Lookups` built once from the target and the
//! inventory). The rules themselves are the other files of `checks/`.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap as HashMap;

use crate::core::ironic::target::{ExistingNode, TargetKind, TargetState};
use crate::core::migrate::conflict::{Action, Conflict, ConflictCode, Resolutions, Subject};
use crate::core::migrate::plan::fate::has_instance;
use crate::core::migrate::plan::options::PlanOptions;
use crate::core::migrate::plan::rows::PowerManager;
use crate::core::migrate::plan::uuids::uuid_form;
use crate::core::source::model::{BmNode, Inventory};
use crate::core::source::nova::NovaFacts;

/// Collects conflicts and applies the operator's decisions as they are found.
pub(crate) struct Decider<'a> {
    pub(crate) resolutions: &'a Resolutions,
    pub(crate) conflicts: Vec<Conflict>,
}

impl Decider<'_> {
    /// The operator's decision for a conflict of `code` about `subject`, without raising one.
    pub(crate) fn decided(&self, code: ConflictCode, subject: &Subject) -> Option<Action> {
        self.resolutions.decide(code, subject).map(|(a, _)| a)
    }

    /// A conflict that stays undecided whatever was decided for it (the decisions contradict each
    /// other): blocking, with `detail` saying why.
    pub(crate) fn raise_undecided(
        &mut self,
        code: ConflictCode,
        subject: Subject,
        node_uuid: Option<&str>,
        detail: String,
    ) {
        self.push(code, subject, node_uuid, detail, (None, None));
    }

    pub(crate) fn push(
        &mut self,
        code: ConflictCode,
        subject: Subject,
        node_uuid: Option<&str>,
        detail: String,
        (action, decided_by): (Option<Action>, Option<&'static str>),
    ) {
        let node_uuid = node_uuid.map(str::to_string);
        self.conflicts.push(Conflict {
            code,
            blocking: code.blocking(),
            subject,
            node_uuid,
            detail,
            action,
            decided_by,
        });
    }

    pub(crate) fn raise(
        &mut self,
        code: ConflictCode,
        subject: Subject,
        node_uuid: Option<&str>,
        detail: String,
    ) -> Option<Action> {
        let (action, decided_by) = match self.resolutions.decide(code, &subject) {
            Some((a, by)) => (Some(a), Some(by)),
            None => match code.default_action() {
                Some(a) => (Some(a), Some("default")),
                None => (None, None),
            },
        };
        self.push(code, subject, node_uuid, detail, (action, decided_by));
        action
    }
}

/// What every rule consults: the Decider, the options, Nova's facts and the lookup maps (shared,
/// read only: several `Checks` over one `Lookups` can check pieces of the inventory at once).
pub(crate) struct Checks<'a> {
    pub(crate) d: Decider<'a>,
    pub(crate) opts: &'a PlanOptions,
    pub(crate) nova: Option<&'a NovaFacts>,
    pub(crate) kind: TargetKind,
    pub(crate) power: PowerManager,
    pub(crate) by_uuid: &'a HashMap<String, &'a ExistingNode>,
    pub(crate) by_instance: &'a HashMap<String, &'a ExistingNode>,
    pub(crate) node_id_to_uuid: &'a HashMap<i64, Option<String>>,
    pub(crate) port_macs: &'a HashMap<String, Option<i64>>,
    pub(crate) first_holder: &'a HashMap<&'a str, (i64, i64)>,
    pub(crate) uuid_holder: &'a HashMap<Cow<'a, str>, i64>,
    pub(crate) instance_holder: &'a HashMap<Cow<'a, str>, i64>,
    pub(crate) instance_claimants: &'a HashMap<Cow<'a, str>, Vec<i64>>,
    /// the entries the MAC checks examined (map lookups, and earlier interfaces compared): the
    /// work of `interfaces`, counted so that a test can hold it to linear
    pub(crate) mac_probes: u64,
}

/// The lookup maps, built once from the target and the whole inventory.
pub(crate) struct Lookups<'a> {
    pub(crate) kind: TargetKind,
    pub(crate) power: PowerManager,
    /// Ironic's nodes by uuid, compared the way we write ours: lower-case
    pub(crate) by_uuid: HashMap<String, &'a ExistingNode>,
    /// Ironic's nodes by instance uuid (lower-case)
    pub(crate) by_instance: HashMap<String, &'a ExistingNode>,
    /// Ironic's node ids to their uuids (lower-case)
    pub(crate) node_id_to_uuid: HashMap<i64, Option<String>>,
    /// Ironic's ports by MAC, to the id of their node
    pub(crate) port_macs: HashMap<String, Option<i64>>,
    /// Who is first to hold each MAC among the nodes that may be migrated: (nova_bm id, interface id)
    pub(crate) first_holder: HashMap<&'a str, (i64, i64)>,
    /// Who holds each node uuid among the nodes that may be migrated (lowest nova_bm id first)
    pub(crate) uuid_holder: HashMap<Cow<'a, str>, i64>,
    /// Which node holds each instance: its one claimant, or among several the one Nova's
    /// `instances.node` names (none: no evidence says which, see `instance_claimants`)
    pub(crate) instance_holder: HashMap<Cow<'a, str>, i64>,
    /// Every claimant (nova_bm ids, ascending) of an instance that several live nodes claim
    pub(crate) instance_claimants: HashMap<Cow<'a, str>, Vec<i64>>,
}

impl<'a> Lookups<'a> {
    pub(crate) fn new(
        inv: &'a Inventory,
        target: &'a TargetState,
        nova: Option<&'a NovaFacts>,
        opts: &'a PlanOptions,
        resolutions: &'a Resolutions,
        parallel: bool,
    ) -> Lookups<'a> {
        let by_uuid: HashMap<String, &ExistingNode> =
            target.nodes.iter().filter_map(|n| n.uuid.as_deref().map(|u| (u.trim().to_ascii_lowercase(), n))).collect();
        let by_instance: HashMap<String, &ExistingNode> = target
            .nodes
            .iter()
            .filter_map(|n| n.instance_uuid.as_deref().map(|u| (u.trim().to_ascii_lowercase(), n)))
            .collect();
        let node_id_to_uuid: HashMap<i64, Option<String>> =
            target.nodes.iter().map(|n| (n.id, n.uuid.as_deref().map(|u| u.trim().to_ascii_lowercase()))).collect();
        let port_macs: HashMap<String, Option<i64>> = target
            .ports
            .iter()
            .filter_map(|p| p.address.as_deref().map(|a| (a.to_ascii_lowercase(), p.node_id)))
            .collect();

        // the nodes that may be migrated: live ones, and deleted ones the operator migrates
        let candidate = |n: &BmNode| {
            !n.deleted
                || resolutions
                    .decide(ConflictCode::DeletedNode, &Subject::Node { nova_bm_id: n.id })
                    .is_some_and(|(a, _)| a == Action::Migrate)
        };
        let macs = || {
            let mut first_holder: HashMap<&'a str, (i64, i64)> = HashMap::default();
            first_holder.reserve(inv.nodes.iter().map(|n| n.interfaces.len()).sum());
            for n in inv.nodes.iter().filter(|n| candidate(&n.node)) {
                for i in n.interfaces.iter().filter(|i| !i.deleted) {
                    if let Some(mac) = &i.address_normalized {
                        first_holder.entry(mac.as_str()).or_insert((n.node.id, i.id));
                    }
                }
            }
            first_holder
        };
        // keys borrowed from the inventory (uuids nearly always come in Ironic's form already)
        let ids = || {
            let live = inv.nodes.iter().map(|e| &e.node).filter(|n| candidate(n));
            let mut uuid_holder: HashMap<Cow<'a, str>, i64> = HashMap::default();
            uuid_holder.reserve(inv.nodes.len());
            // each instance's first claimant, and the others (rare) by instance
            let mut instance_first: HashMap<Cow<'a, str>, &'a BmNode> = HashMap::default();
            let mut instance_more: HashMap<Cow<'a, str>, Vec<&'a BmNode>> = HashMap::default();
            for n in live {
                if let Some(u) = n.uuid.as_deref().and_then(uuid_form) {
                    uuid_holder.entry(u).or_insert(n.id);
                }
                if has_instance(n) && !n.deleted {
                    if let Some(i) = n.instance_uuid.as_deref().and_then(uuid_form) {
                        match instance_first.entry(i) {
                            Entry::Vacant(v) => {
                                v.insert(n);
                            }
                            Entry::Occupied(o) => instance_more.entry(o.key().clone()).or_default().push(n),
                        }
                    }
                }
            }
            // several claim it: only evidence decides (the one Nova's `instances.node` names); no
            // claimant is preferred on a guess (the lowest id was: a wrong guess hands the instance,
            // and a later `nova delete`, to the wrong machine)
            let mut instance_claimants: HashMap<Cow<'a, str>, Vec<i64>> = HashMap::default();
            let instance_holder: HashMap<Cow<'a, str>, i64> = instance_first
                .into_iter()
                .filter_map(|(inst, first)| {
                    let Some(more) = instance_more.get(inst.as_ref()) else { return Some((inst, first.id)) };
                    let nova_node = nova
                        .and_then(|f| f.instances.get(inst.as_ref()))
                        .and_then(|i| i.node.as_deref())
                        .and_then(uuid_form);
                    let by_nova = std::iter::once(&first)
                        .chain(more)
                        .find(|n| nova_node.is_some() && n.uuid.as_deref().and_then(uuid_form) == nova_node);
                    let mut all: Vec<i64> = std::iter::once(first.id).chain(more.iter().map(|n| n.id)).collect();
                    all.sort_unstable();
                    instance_claimants.insert(inst.clone(), all);
                    by_nova.map(|n| (inst, n.id))
                })
                .collect();
            (uuid_holder, (instance_holder, instance_claimants))
        };
        // two passes over the inventory, on two threads for a large one
        let (first_holder, (uuid_holder, (instance_holder, instance_claimants))) = if parallel {
            std::thread::scope(|s| {
                let macs = s.spawn(macs);
                let ids = ids();
                (macs.join().unwrap_or_else(|e| std::panic::resume_unwind(e)), ids)
            })
        } else {
            (macs(), ids())
        };

        Lookups {
            kind: target.schema.kind,
            power: PowerManager::from_class(opts.baremetal.power_manager()),
            by_uuid,
            by_instance,
            node_id_to_uuid,
            port_macs,
            first_holder,
            uuid_holder,
            instance_holder,
            instance_claimants,
        }
    }

    /// Rules over these maps, raising conflicts into a Decider of their own.
    pub(crate) fn checks<'b>(
        &'b self,
        opts: &'b PlanOptions,
        nova: Option<&'b NovaFacts>,
        resolutions: &'b Resolutions,
    ) -> Checks<'b> {
        Checks {
            d: Decider { resolutions, conflicts: Vec::new() },
            opts,
            nova,
            kind: self.kind,
            power: self.power.clone(),
            by_uuid: &self.by_uuid,
            by_instance: &self.by_instance,
            node_id_to_uuid: &self.node_id_to_uuid,
            port_macs: &self.port_macs,
            first_holder: &self.first_holder,
            uuid_holder: &self.uuid_holder,
            instance_holder: &self.instance_holder,
            instance_claimants: &self.instance_claimants,
            mac_probes: 0,
        }
    }
}

impl Checks<'_> {
    /// The conflicts raised, in the order they were raised.
    pub(crate) fn into_conflicts(self) -> Vec<Conflict> {
        self.d.conflicts
    }
    /// Conflicts raised by other `Checks` (pieces of the inventory), after these.
    pub(crate) fn extend_conflicts(&mut self, more: Vec<Conflict>) {
        self.d.conflicts.extend(more);
    }
}
