//! The plan: a pure function from (nova_bm inventory, target state, Nova facts, options,
//! resolutions) to every node's fate, every conflict with its code, and every row to write. No I/O.
//! The mapping rules are described in docs/mapping.md and the conflicts in docs/conflicts.md; what the
//! 2014 tool got wrong is tested in tests/upstream_2014_mistakes.rs, the plan's invariants in
//! properties.rs; the rows written are built in rows.rs.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::core::db::conf::BaremetalConf;
use crate::core::ironic::target::{ExistingNode, TargetKind, TargetState};
use crate::core::migrate::conflict::{Action, Conflict, ConflictCode, Resolutions, Subject};
use crate::core::migrate::states::{BmState, StateFate};
use crate::core::source::model::{BmNode, Inventory};
use crate::core::source::nova::NovaFacts;
use rows::{build_node, build_port};
pub use rows::{DriverInfo, IronicNode, IronicPort, PowerManager};

/// Namespace of the uuids we generate (stable, so a rehearsal and the real run agree).
const BM2IRONIC_NS: uuid::Uuid = uuid::Uuid::from_u128(0x6b6d_3269_726f_4e69_8c00_6e6f_7661_626d);

/// A uuid as Ironic stores it (lower-case, hyphenated), or None when the text is not a uuid.
pub fn normalize_uuid(raw: &str) -> Option<String> {
    let t = raw.trim();
    // the hyphenated form only: Nova and Ironic never store the simple or braced forms
    if t.len() != 36 {
        return None;
    }
    uuid::Uuid::parse_str(t).ok().map(|u| u.hyphenated().to_string())
}

/// The uuid we give a node whose own is missing, invalid or taken (stable across runs).
fn generated_uuid(n: &BmNode) -> String {
    uuid::Uuid::new_v5(
        &BM2IRONIC_NS,
        format!("nova_bm-node:{}:{}", n.id, n.service_host.as_deref().unwrap_or("")).as_bytes(),
    )
    .to_string()
}

/// How free nodes arrive in modern Ironic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FreeState {
    #[default]
    Available,
    Manageable,
    Enroll,
}

impl std::str::FromStr for FreeState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "available" => Ok(FreeState::Available),
            "manageable" => Ok(FreeState::Manageable),
            "enroll" => Ok(FreeState::Enroll),
            _ => Err(format!("'{s}' is not a free state (available, manageable, enroll)")),
        }
    }
}

impl FreeState {
    fn as_str(self) -> &'static str {
        match self {
            FreeState::Available => "available",
            FreeState::Manageable => "manageable",
            FreeState::Enroll => "enroll",
        }
    }
}

/// Everything the operator tells the plan besides resolutions.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    pub default_arch: Option<String>,
    pub arch_by_host: BTreeMap<String, String>,
    pub resource_class: Option<String>,
    pub free_state: FreeState,
    /// nova.conf `[baremetal]` (power manager and its settings; cpu_arch of `conf_host`)
    pub baremetal: BaremetalConf,
    /// nova.conf `[DEFAULT] host`: the host whose `flavor_extra_specs` cpu_arch the conf gives
    pub conf_host: Option<String>,
}

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

#[derive(Debug, Clone, Serialize)]
pub struct NodePlan {
    pub nova_bm_id: i64,
    pub uuid: Option<String>,
    pub service_host: Option<String>,
    pub action: NodeAction,
    pub conflicts: Vec<ConflictCode>,
    pub node: Option<IronicNode>,
    pub ports: Vec<IronicPort>,
    /// Ironic id of the node a `replace` deletes.
    pub replaces: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct PlanSummary {
    pub create: usize,
    pub skip: usize,
    pub already_migrated: usize,
    pub blocked: usize,
    pub maintenance: usize,
    pub active: usize,
    pub ports: usize,
    pub blocking: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SourceCounts {
    pub nodes: usize,
    pub live: usize,
    pub soft_deleted: usize,
    pub interfaces: usize,
    pub orphan_interfaces: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetInfo {
    pub kind: TargetKind,
    pub schema: String,
    pub existing_nodes: usize,
    pub existing_ports: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub source: SourceCounts,
    pub target: TargetInfo,
    pub nodes: Vec<NodePlan>,
    pub conflicts: Vec<Conflict>,
    pub warnings: Vec<String>,
    pub summary: PlanSummary,
    /// sha256 of what would be written (passwords excluded): the same plan, the same checksum.
    pub checksum: String,
}

impl Plan {
    pub fn blocking(&self) -> usize {
        self.summary.blocking
    }
    pub fn to_write(&self) -> impl Iterator<Item = &NodePlan> {
        self.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace))
    }
}

/// Collects conflicts and applies the operator's decisions as they are found.
struct Decider<'a> {
    resolutions: &'a Resolutions,
    conflicts: Vec<Conflict>,
}

impl Decider<'_> {
    fn raise(
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
        self.conflicts.push(Conflict {
            code,
            blocking: code.blocking(),
            subject,
            node_uuid: node_uuid.map(str::to_string),
            detail,
            action,
            decided_by,
        });
        action
    }
}

fn has_instance(n: &BmNode) -> bool {
    n.instance_uuid.as_deref().is_some_and(|s| !s.is_empty())
}

fn incomplete(n: &BmNode) -> Vec<&'static str> {
    let mut missing = Vec::new();
    for (name, v) in [("cpus", n.cpus), ("memory_mb", n.memory_mb), ("local_gb", n.local_gb)] {
        if v.unwrap_or(0) == 0 {
            missing.push(name);
        }
    }
    missing
}

/// Values no machine has: negative sizes, a terminal port outside 1..=65535.
fn invalid_sizes(n: &BmNode) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, v) in [
        ("cpus", n.cpus),
        ("memory_mb", n.memory_mb),
        ("local_gb", n.local_gb),
        ("root_mb", n.root_mb),
        ("swap_mb", n.swap_mb),
        ("ephemeral_mb", n.ephemeral_mb),
    ] {
        if let Some(v) = v.filter(|v| *v < 0) {
            bad.push(format!("{name}={v}"));
        }
    }
    if let Some(p) = n.terminal_port.filter(|p| *p < 0 || *p > 65535) {
        bad.push(format!("terminal_port={p}"));
    }
    bad
}

/// The row without the values `invalid_sizes` names (what a node in maintenance is written with).
fn without_invalid_sizes(n: &BmNode) -> BmNode {
    let mut c = n.clone();
    for v in [&mut c.cpus, &mut c.memory_mb, &mut c.local_gb, &mut c.root_mb, &mut c.swap_mb, &mut c.ephemeral_mb] {
        if v.is_some_and(|x| x < 0) {
            *v = None;
        }
    }
    if c.terminal_port.is_some_and(|p| !(0..=65535).contains(&p)) {
        c.terminal_port = None;
    }
    c
}

fn arch_for(opts: &PlanOptions, host: Option<&str>) -> Option<String> {
    if let Some(a) = host.and_then(|h| opts.arch_by_host.get(h)) {
        return Some(a.clone());
    }
    if let Some(a) = opts.baremetal.cpu_arch() {
        // a nova.conf names its own host's arch; without [DEFAULT] host it is taken for every host
        if opts.conf_host.is_none() || opts.conf_host.as_deref() == host {
            return Some(a.to_string());
        }
    }
    opts.default_arch.clone()
}

/// The per-node outcome of the rules, before rows are built.
struct Fate {
    action: NodeAction,
    uuid: Option<String>,
    keep_instance: bool,
    maintenance_reasons: Vec<String>,
    unsupported_power: bool,
    skipped_interfaces: HashSet<i64>,
    codes: Vec<ConflictCode>,
    replaces: Option<i64>,
}

impl Fate {
    fn apply(&mut self, code: ConflictCode, action: Option<Action>) {
        self.codes.push(code);
        match action {
            None if self.action != NodeAction::Skip => self.action = NodeAction::Blocked,
            None => {}
            Some(Action::Skip) => self.action = NodeAction::Skip,
            _ => {}
        }
    }
}

/// Builds the plan. Pure: the same inputs give the same plan (and checksum).
pub fn plan(
    inv: &Inventory,
    target: &TargetState,
    nova: Option<&NovaFacts>,
    opts: &PlanOptions,
    resolutions: &Resolutions,
) -> Plan {
    let kind = target.schema.kind;
    let power = PowerManager::from_class(opts.baremetal.power_manager());
    let mut d = Decider { resolutions, conflicts: Vec::new() };
    let mut warnings = Vec::new();

    // Ironic's uuids compared the way we write ours: lower-case
    let by_uuid: HashMap<String, &ExistingNode> =
        target.nodes.iter().filter_map(|n| n.uuid.as_deref().map(|u| (u.trim().to_ascii_lowercase(), n))).collect();
    let by_instance: HashMap<String, &ExistingNode> = target
        .nodes
        .iter()
        .filter_map(|n| n.instance_uuid.as_deref().map(|u| (u.trim().to_ascii_lowercase(), n)))
        .collect();
    let node_id_to_uuid: HashMap<i64, Option<String>> =
        target.nodes.iter().map(|n| (n.id, n.uuid.as_deref().map(|u| u.trim().to_ascii_lowercase()))).collect();
    let port_macs: HashMap<String, Option<i64>> =
        target.ports.iter().filter_map(|p| p.address.as_deref().map(|a| (a.to_ascii_lowercase(), p.node_id))).collect();

    // nova-compute services still heartbeating on the baremetal hosts
    if let Some(facts) = nova {
        let hosts: std::collections::BTreeSet<&str> =
            inv.nodes.iter().filter(|n| !n.node.deleted).filter_map(|n| n.node.service_host.as_deref()).collect();
        for h in hosts {
            if let Some(s) = facts.running_compute(h) {
                d.raise(
                    ConflictCode::NovaComputeRunning,
                    Subject::Host { host: h.to_string() },
                    None,
                    format!(
                        "nova-compute on {h} sent a heartbeat at {} (stop it before the load)",
                        s.updated_at.map(|t| t.to_string()).unwrap_or_default()
                    ),
                );
            }
        }
    }

    // Who is first to hold each MAC among the nodes that may be migrated (lowest nova_bm id first).
    let candidate = |n: &BmNode| {
        !n.deleted
            || resolutions
                .decide(ConflictCode::DeletedNode, &Subject::Node { nova_bm_id: n.id })
                .is_some_and(|(a, _)| a == Action::Migrate)
    };
    let mut first_holder: HashMap<String, (i64, i64)> = HashMap::new();
    for n in inv.nodes.iter().filter(|n| candidate(&n.node)) {
        for i in n.interfaces.iter().filter(|i| !i.deleted) {
            if let Some(mac) = &i.address_normalized {
                first_holder.entry(mac.clone()).or_insert((n.node.id, i.id));
            }
        }
    }

    // Who holds each node uuid among the nodes that may be migrated (lowest nova_bm id first), and
    // which node holds each instance (the one Nova's `instances.node` names, else the lowest id).
    let mut uuid_holder: HashMap<String, i64> = HashMap::new();
    let mut instance_claims: HashMap<String, Vec<&BmNode>> = HashMap::new();
    for n in inv.nodes.iter().map(|e| &e.node).filter(|n| candidate(n)) {
        if let Some(u) = n.uuid.as_deref().and_then(normalize_uuid) {
            uuid_holder.entry(u).or_insert(n.id);
        }
        if has_instance(n) && !n.deleted {
            if let Some(i) = n.instance_uuid.as_deref().and_then(normalize_uuid) {
                instance_claims.entry(i).or_default().push(n);
            }
        }
    }
    let instance_holder: HashMap<&str, i64> = instance_claims
        .iter()
        .map(|(inst, claimants)| {
            let nova_node = nova
                .and_then(|f| f.instances.get(inst.as_str()))
                .and_then(|i| i.node.as_deref())
                .and_then(normalize_uuid);
            let by_nova = claimants
                .iter()
                .find(|n| nova_node.is_some() && n.uuid.as_deref().and_then(normalize_uuid) == nova_node);
            (inst.as_str(), by_nova.unwrap_or(&claimants[0]).id)
        })
        .collect();

    let mut nodes = Vec::with_capacity(inv.nodes.len());
    for entry in &inv.nodes {
        let n = &entry.node;
        let subject = Subject::Node { nova_bm_id: n.id };
        let mut f = Fate {
            action: NodeAction::Create,
            uuid: n.uuid.as_deref().and_then(normalize_uuid),
            keep_instance: has_instance(n) && !n.deleted,
            maintenance_reasons: Vec::new(),
            unsupported_power: false,
            skipped_interfaces: HashSet::new(),
            codes: Vec::new(),
            replaces: None,
        };
        let uuid_ref = f.uuid.clone();
        let uuid_s = uuid_ref.as_deref();

        if n.deleted {
            let a = d.raise(
                ConflictCode::DeletedNode,
                subject.clone(),
                uuid_s,
                format!(
                    "soft-deleted in nova_bm at {}",
                    n.deleted_at.map(|t| t.to_string()).unwrap_or_else(|| "an unknown time".into())
                ),
            );
            f.apply(ConflictCode::DeletedNode, a);
            if f.action == NodeAction::Skip {
                for i in &entry.interfaces {
                    let a = d.raise(
                        ConflictCode::OrphanInterface,
                        Subject::Interface { nova_bm_id: n.id, interface_id: i.id },
                        uuid_s,
                        format!("interface {} of soft-deleted node {}", i.address.as_deref().unwrap_or("-"), n.id),
                    );
                    let _ = a;
                }
                nodes.push(finish(n, f, None, Vec::new()));
                continue;
            }
        }

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
            let a = d.raise(code, subject.clone(), None, detail);
            f.apply(code, a);
            if a == Some(Action::Generate) {
                f.uuid = Some(generated_uuid(n));
            }
        } else if let Some(first) = f.uuid.as_deref().and_then(|u| uuid_holder.get(u)).filter(|id| **id != n.id) {
            let a = d.raise(
                ConflictCode::DuplicateUuid,
                subject.clone(),
                f.uuid.as_deref(),
                format!("nova_bm node {first} has the same uuid"),
            );
            f.apply(ConflictCode::DuplicateUuid, a);
            if a == Some(Action::Generate) {
                f.uuid = Some(generated_uuid(n));
            }
        }
        let uuid_s = f.uuid.clone();
        let uuid_s = uuid_s.as_deref();
        // an earlier run of ours, or somebody else's node with this uuid
        if let Some(existing) = uuid_s.and_then(|u| by_uuid.get(u)) {
            if existing.migrated_from() == Some(n.id) {
                let a = d.raise(
                    ConflictCode::AlreadyMigrated,
                    subject.clone(),
                    uuid_s,
                    format!(
                        "Ironic node {} came from this nova_bm node (run {})",
                        existing.id,
                        existing.migrated_by_run().unwrap_or("?")
                    ),
                );
                f.apply(ConflictCode::AlreadyMigrated, a);
                f.action = NodeAction::AlreadyMigrated;
                nodes.push(finish(n, f, None, Vec::new()));
                continue;
            }
            let a = d.raise(
                ConflictCode::UuidInIronic,
                subject.clone(),
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
        }

        // the instance uuid must be one, and the task state must agree with the row
        let inst_norm = n.instance_uuid.as_deref().and_then(normalize_uuid);
        if f.keep_instance && inst_norm.is_none() {
            let raw = n.instance_uuid.as_deref().unwrap_or("");
            let a = d.raise(
                ConflictCode::InconsistentState,
                subject.clone(),
                uuid_s,
                format!("instance_uuid '{raw}' is not a uuid"),
            );
            f.apply(ConflictCode::InconsistentState, a);
            if a == Some(Action::Maintenance) {
                f.keep_instance = false;
                f.maintenance_reasons.push(format!("nova_bm instance_uuid '{raw}' was not a uuid at migration"));
            }
        }
        if !n.deleted && f.action != NodeAction::Skip {
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
                let a = d.raise(code, subject.clone(), uuid_s, detail);
                f.apply(code, a);
                if a == Some(Action::Maintenance) {
                    f.maintenance_reasons.push(reason);
                }
            }
        }
        if f.keep_instance {
            let inst_norm = inst_norm.clone().unwrap_or_default();
            let inst = inst_norm.as_str();
            if let Some(holder) = instance_holder.get(inst).filter(|id| **id != n.id) {
                let a = d.raise(
                    ConflictCode::DuplicateInstance,
                    subject.clone(),
                    uuid_s,
                    format!("instance {inst} is also held by nova_bm node {holder}"),
                );
                f.apply(ConflictCode::DuplicateInstance, a);
                if a == Some(Action::Free) {
                    f.keep_instance = false;
                }
            }
        }
        if f.keep_instance {
            let inst_norm = inst_norm.clone().unwrap_or_default();
            let inst = inst_norm.as_str();
            if let Some(facts) = nova {
                let raw_inst = n.instance_uuid.as_deref().unwrap_or("").trim();
                let gone = match facts.instances.get(inst).or_else(|| facts.instances.get(raw_inst)) {
                    None => Some("is not in Nova's instances table"),
                    Some(i) if i.deleted => Some("is deleted in Nova"),
                    Some(_) => None,
                };
                if let Some(why) = gone {
                    let a = d.raise(
                        ConflictCode::InstanceMissingInNova,
                        subject.clone(),
                        uuid_s,
                        format!("instance {inst} {why}"),
                    );
                    f.apply(ConflictCode::InstanceMissingInNova, a);
                    match a {
                        Some(Action::Free) => f.keep_instance = false,
                        Some(Action::Maintenance) => {
                            f.maintenance_reasons.push(format!("instance {inst} {why} at migration"))
                        }
                        _ => {}
                    }
                }
            }
            if f.keep_instance {
                if let Some(other) = by_instance.get(inst) {
                    let other_uuid = other.uuid.as_deref().map(|u| u.trim().to_ascii_lowercase());
                    if other_uuid.as_deref() != uuid_s && f.replaces != Some(other.id) {
                        let a = d.raise(
                            ConflictCode::InstanceInIronic,
                            subject.clone(),
                            uuid_s,
                            format!(
                                "Ironic node {} already holds instance {inst}",
                                other.uuid.as_deref().unwrap_or("?")
                            ),
                        );
                        f.apply(ConflictCode::InstanceInIronic, a);
                    }
                }
            }
        }

        match power.driver(kind) {
            None => {
                let class = opts.baremetal.power_manager();
                let a = d.raise(
                    ConflictCode::UnsupportedPower,
                    subject.clone(),
                    uuid_s,
                    format!("power manager {class} has no equivalent in a {} Ironic", kind_name(kind)),
                );
                f.apply(ConflictCode::UnsupportedPower, a);
                if a == Some(Action::Maintenance) {
                    f.unsupported_power = true;
                    f.maintenance_reasons.push(format!(
                        "nova baremetal power manager {class} has no Ironic equivalent: no power control"
                    ));
                }
            }
            Some(_) => {
                let missing = match power {
                    PowerManager::Ipmi | PowerManager::IBoot => {
                        n.pm_address.as_deref().is_none_or(|a| a.trim().is_empty())
                    }
                    PowerManager::VirtualPower => opts.baremetal.virtual_power_ssh_host.is_none(),
                    PowerManager::Unsupported(_) => false,
                };
                if missing {
                    let a = d.raise(
                        ConflictCode::MissingBmc,
                        subject.clone(),
                        uuid_s,
                        "no BMC address (pm_address) to drive its power".into(),
                    );
                    f.apply(ConflictCode::MissingBmc, a);
                    if a == Some(Action::Maintenance) {
                        f.maintenance_reasons
                            .push("no BMC address in nova_bm: add driver_info before leaving maintenance".into());
                    }
                }
            }
        }

        let arch = arch_for(opts, n.service_host.as_deref());
        if arch.is_none() {
            let a = d.raise(
                ConflictCode::MissingArch,
                subject.clone(),
                uuid_s,
                format!(
                    "no cpu_arch known for host {} (give --arch HOST=ARCH or --default-arch)",
                    n.service_host.as_deref().unwrap_or("-")
                ),
            );
            f.apply(ConflictCode::MissingArch, a);
        }

        // negative sizes and impossible ports: never written; in maintenance the node goes without them
        let bad_sizes = invalid_sizes(n);
        let cleaned;
        let n_write: &BmNode = if bad_sizes.is_empty() {
            n
        } else {
            let a = d.raise(
                ConflictCode::InvalidSize,
                subject.clone(),
                uuid_s,
                format!("impossible values: {}", bad_sizes.join(", ")),
            );
            f.apply(ConflictCode::InvalidSize, a);
            if a == Some(Action::Maintenance) {
                f.maintenance_reasons.push(format!(
                    "impossible values in nova_bm left out ({}): set them in Ironic",
                    bad_sizes.join(", ")
                ));
            }
            cleaned = without_invalid_sizes(n);
            &cleaned
        };
        let missing_props = incomplete(n); // negative values are invalid-size's, not 'missing'
        if !missing_props.is_empty() {
            let a = d.raise(
                ConflictCode::IncompleteProperties,
                subject.clone(),
                uuid_s,
                format!("{} missing or zero", missing_props.join(", ")),
            );
            f.apply(ConflictCode::IncompleteProperties, a);
            if a == Some(Action::Maintenance) {
                f.maintenance_reasons.push(format!("properties incomplete in nova_bm ({})", missing_props.join(", ")));
            }
        }

        // interfaces
        let mut seen_here: HashSet<String> = HashSet::new();
        for i in entry.interfaces.iter().filter(|i| !i.deleted) {
            let isub = Subject::Interface { nova_bm_id: n.id, interface_id: i.id };
            let shown = i.address.as_deref().unwrap_or("(none)");
            let Some(mac) = &i.address_normalized else {
                let a = d.raise(
                    ConflictCode::InvalidMac,
                    isub,
                    uuid_s,
                    format!("interface {} address '{shown}' is not a MAC", i.id),
                );
                f.apply(ConflictCode::InvalidMac, a);
                if a == Some(Action::SkipPort) {
                    f.skipped_interfaces.insert(i.id);
                }
                continue;
            };
            let first = first_holder.get(mac).copied();
            if first.is_some_and(|(nid, iid)| (nid, iid) != (n.id, i.id)) || !seen_here.insert(mac.clone()) {
                let (fnode, _) = first.unwrap_or((n.id, i.id));
                let a = d.raise(
                    ConflictCode::DuplicateMac,
                    isub,
                    uuid_s,
                    format!("MAC {mac} (typed '{shown}') is also on nova_bm node {fnode}"),
                );
                f.apply(ConflictCode::DuplicateMac, a);
                if a == Some(Action::SkipPort) {
                    f.skipped_interfaces.insert(i.id);
                }
                continue;
            }
            if let Some(owner) = port_macs.get(mac) {
                let owner_uuid = owner.and_then(|id| node_id_to_uuid.get(&id).and_then(|u| u.as_deref()));
                let ours = owner_uuid.is_some() && owner_uuid == uuid_s && f.replaces.is_none();
                let replaced = f.replaces.is_some() && *owner == f.replaces;
                if !ours && !replaced {
                    let a = d.raise(
                        ConflictCode::MacInIronic,
                        isub,
                        uuid_s,
                        format!("MAC {mac} is already a port of Ironic node {}", owner_uuid.unwrap_or("(none)")),
                    );
                    f.apply(ConflictCode::MacInIronic, a);
                    if a == Some(Action::SkipPort) {
                        f.skipped_interfaces.insert(i.id);
                    }
                }
            }
        }

        let node = if matches!(f.action, NodeAction::Create) {
            f.uuid.as_deref().map(|u| build_node(n_write, u, &f, arch.as_deref(), &power, kind, nova, opts))
        } else {
            None
        };
        let ports = match &node {
            Some(node) => entry
                .interfaces
                .iter()
                .filter(|i| !i.deleted && !f.skipped_interfaces.contains(&i.id))
                .filter_map(|i| build_port(i, node, f.keep_instance, kind))
                .collect(),
            None => Vec::new(),
        };
        if f.replaces.is_some() && f.action == NodeAction::Create {
            f.action = NodeAction::Replace;
        }
        nodes.push(finish(n, f, node, ports));
    }

    for i in &inv.orphan_interfaces {
        d.raise(
            ConflictCode::OrphanInterface,
            Subject::Interface { nova_bm_id: i.bm_node_id.unwrap_or(-1), interface_id: i.id },
            None,
            format!(
                "interface {} ({}) points at nova_bm node {} which does not exist",
                i.id,
                i.address.as_deref().unwrap_or("-"),
                i.bm_node_id.map(|v| v.to_string()).unwrap_or_else(|| "NULL".into())
            ),
        );
    }

    let writes_any =
        nodes.iter().any(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace | NodeAction::Blocked));
    if writes_any && (opts.deploy_kernel.is_none() || opts.deploy_ramdisk.is_none()) {
        d.raise(ConflictCode::MissingDeployImages, Subject::Run, None, "no Ironic deploy kernel/ramdisk given: nodes would fail validation (give --deploy-kernel and --deploy-ramdisk)".into());
    }

    let without_image = nodes
        .iter()
        .filter_map(|n| n.node.as_ref())
        .filter(|n| n.instance_uuid.is_some() && n.instance_info.get("image_source").is_none())
        .count();
    if without_image > 0 {
        warnings.push(format!(
            "{without_image} node(s) with an instance get no instance_info.image_source (give --nova-db): Ironic cannot tear them down later (LP#1368984)"
        ));
    }
    if kind == TargetKind::Modern && opts.resource_class.is_none() && nodes.iter().any(|n| n.node.is_some()) {
        warnings.push("no --resource-class: modern Nova schedules bare metal by resource class; nodes get none".into());
    }

    let conflicts = d.conflicts;
    let mut summary = PlanSummary::default();
    for n in &nodes {
        match n.action {
            NodeAction::Create | NodeAction::Replace => summary.create += 1,
            NodeAction::Skip => summary.skip += 1,
            NodeAction::AlreadyMigrated => summary.already_migrated += 1,
            NodeAction::Blocked => summary.blocked += 1,
        }
        if let Some(node) = &n.node {
            summary.maintenance += node.maintenance as usize;
            summary.active += (node.provision_state.as_deref() == Some("active")) as usize;
        }
        summary.ports += n.ports.len();
    }
    summary.blocking = conflicts.iter().filter(|c| c.is_unresolved_blocking()).count();
    let s = inv.summary();
    let checksum = checksum(&nodes);
    Plan {
        source: SourceCounts {
            nodes: s.nodes,
            live: s.live,
            soft_deleted: s.soft_deleted,
            interfaces: s.interfaces,
            orphan_interfaces: s.orphan_interfaces,
        },
        target: TargetInfo {
            kind,
            schema: target.schema.schema.clone(),
            existing_nodes: target.nodes.len(),
            existing_ports: target.ports.len(),
        },
        nodes,
        conflicts,
        warnings,
        summary,
        checksum,
    }
}

fn kind_name(k: TargetKind) -> &'static str {
    match k {
        TargetKind::Modern => "modern",
        TargetKind::Juno => "Juno",
    }
}

fn finish(n: &BmNode, f: Fate, node: Option<IronicNode>, ports: Vec<IronicPort>) -> NodePlan {
    NodePlan {
        nova_bm_id: n.id,
        uuid: f.uuid,
        service_host: n.service_host.clone(),
        action: f.action,
        conflicts: f.codes,
        node,
        ports,
        replaces: f.replaces,
    }
}

fn checksum(nodes: &[NodePlan]) -> String {
    let rows: Vec<Value> = nodes.iter().map(|n| json!([n.uuid, n.action, n.node, n.ports])).collect();
    let text = serde_json::to_string(&rows).unwrap_or_default();
    hex::encode(Sha256::digest(text.as_bytes()))
}

mod rows;

/// The plan's invariants over random inventories (property tests).
#[cfg(test)]
mod properties;
