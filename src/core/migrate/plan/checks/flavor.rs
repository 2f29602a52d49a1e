//! `no-matching-flavor`: a free node (no instance) that no flavor of a Juno/Kilo Nova can be
//! scheduled onto. Juno's scheduler for Ironic (`IronicHostManager` with `ExactRamFilter`,
//! `ExactCoreFilter`, `ExactDiskFilter` and `ComputeCapabilitiesFilter`, the filters
//! `bm2ironic config --target juno` writes) places a flavor on a node only when its vcpus, memory_mb
//! and disk are the node's exactly and each of its capability specs matches the node. Such a node is
//! migrated as any other, but Nova never picks it: the plan names it rather than leaving the
//! operator to find out from a `nova boot` that fails with "No valid host". See docs/conflicts.md.

use super::Checks;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::{Fate, NodeAction};
use crate::core::source::model::BmNode;
use crate::core::source::nova::NovaFlavor;

/// At most this many flavors are named in a conflict's detail (the rest are counted).
const FLAVORS_NAMED: usize = 4;

/// The node as Juno's Ironic driver reports it to the scheduler: its sizes (a free node's are all
/// free), its uuid (the host state's `nodename` and `hypervisor_hostname`) and its stats (`cpu_arch`,
/// the raw string the plan writes; the plan writes no `capabilities` property, so nothing else).
pub(crate) struct NodeOffer<'a> {
    pub cpus: i64,
    pub memory_mb: i64,
    pub local_gb: i64,
    pub uuid: Option<&'a str>,
    pub cpu_arch: Option<&'a str>,
}

/// What Juno's ComputeCapabilitiesFilter finds for a capability key on a free node's host state.
#[derive(Debug, PartialEq)]
enum Capability {
    /// a value, as Python's `str()` writes it
    Value(String),
    /// nothing (None): the filter refuses the host
    Absent,
    /// a value the plan cannot know (the compute host's name, the Ironic API's version, the time of
    /// the last update, ...): such a spec is taken as matching, so no node is named on a guess
    Unknown,
}

/// Host-state attributes of an `IronicNodeState` (Juno's nova/scheduler: host_manager.py `HostState`,
/// base_baremetal_host_manager.py, ironic_host_manager.py) that are set but whose value the plan
/// cannot know, and its methods (a key naming one finds the bound method, not None).
const UNKNOWABLE: &[&str] = &[
    "host",
    "hypervisor_version",
    "updated",
    "limits",
    "metrics",
    "service",
    "supported_instances",
    "update_service",
    "update_from_compute_node",
    "consume_from_instance",
];

/// The filter's walk of `path` (the key without its `capabilities:` scope): an attribute of the host
/// state first, the driver's stats when the attribute is None; a nested key goes into a dict (the
/// stats) or fails (Juno returns False when a string is no JSON or a value has no such attribute).
fn capability(node: &NodeOffer, path: &[&str]) -> Capability {
    use Capability::{Absent, Unknown, Value};
    let first = path.first().copied().unwrap_or_default();
    if first.starts_with("__") || UNKNOWABLE.contains(&first) {
        return Unknown;
    }
    let arch = || node.cpu_arch.map_or(Absent, |a| Value(a.to_string()));
    if path.len() > 1 {
        return match path {
            ["stats", "cpu_arch"] => arch(),
            _ => Absent,
        };
    }
    let n = |v: i64| Value(v.to_string());
    match first {
        "vcpus_total" => n(node.cpus),
        "free_ram_mb" | "total_usable_ram_mb" => n(node.memory_mb),
        "total_usable_disk_gb" => n(node.local_gb),
        "free_disk_mb" => node.local_gb.checked_mul(1024).map_or(Unknown, n),
        "vcpus_used" | "disk_mb_used" | "num_instances" | "num_io_ops" => n(0),
        "hypervisor_type" => Value("ironic".into()),
        "cpu_info" => Value("baremetal cpu".into()),
        "nodename" | "hypervisor_hostname" => node.uuid.map_or(Unknown, |u| Value(u.to_string())),
        // the stats dict itself (a str() of a dict), read by no sane spec
        "stats" => Unknown,
        // every other attribute is None (or missing): the stats, which hold cpu_arch only
        "cpu_arch" => arch(),
        _ => Absent,
    }
}

/// Why a flavor is never placed on a node (built without allocating: most flavors checked do not
/// fit, and only a node no flavor fits has its reasons written out).
#[derive(Debug, PartialEq)]
pub(crate) enum Misfit<'a> {
    Disabled,
    NullSize,
    Vcpus(i64),
    MemoryMb(i64),
    Disk { root: i64, eph: i64, swap: i64 },
    Spec { key: &'a str, req: &'a str },
}

impl std::fmt::Display for Misfit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Misfit::Disabled => write!(f, "disabled"),
            Misfit::NullSize => write!(f, "a size is NULL"),
            Misfit::Vcpus(v) => write!(f, "vcpus {v}"),
            Misfit::MemoryMb(v) => write!(f, "memory_mb {v}"),
            Misfit::Disk { root, eph, swap } => write!(f, "disk {root}+{eph} GB, swap {swap} MB"),
            Misfit::Spec { key, req } => write!(f, "{key} = {req}"),
        }
    }
}

/// Why `flavor` is never placed on `node`: None when the filters pass it.
pub(crate) fn misfit<'a>(flavor: &'a NovaFlavor, node: &NodeOffer) -> Option<Misfit<'a>> {
    if flavor.disabled {
        return Some(Misfit::Disabled);
    }
    let (Some(vcpus), Some(ram), Some(root), Some(eph), Some(swap)) =
        (flavor.vcpus, flavor.memory_mb, flavor.root_gb, flavor.ephemeral_gb, flavor.swap)
    else {
        return Some(Misfit::NullSize);
    };
    if vcpus != node.cpus {
        return Some(Misfit::Vcpus(vcpus));
    }
    if ram != node.memory_mb {
        return Some(Misfit::MemoryMb(ram));
    }
    // ExactDiskFilter: 1024 * (root_gb + ephemeral_gb) + swap (MB) against the free disk, in MB
    let disk = root.checked_add(eph).and_then(|gb| gb.checked_mul(1024)).and_then(|mb| mb.checked_add(swap));
    if disk.is_none() || disk != node.local_gb.checked_mul(1024) {
        return Some(Misfit::Disk { root, eph, swap });
    }
    for (key, req) in &flavor.extra_specs {
        // ComputeCapabilitiesFilter: a scoped key counts only in the `capabilities` scope
        let mut scope: Vec<&str> = key.split(':').collect();
        if scope.len() > 1 {
            if scope[0] != "capabilities" {
                continue;
            }
            scope.remove(0);
        }
        let fits = match capability(node, &scope) {
            Capability::Value(v) => spec_matches(&v, req),
            Capability::Absent => false,
            Capability::Unknown => true,
        };
        if !fits {
            return Some(Misfit::Spec { key, req });
        }
    }
    None
}

/// Juno's `extra_specs_ops.match(value, req)`: `req` is a plain value compared as a string, or an
/// operator and its operand (`s==`, `<in>`, `<or>`, numeric `=` `==` `>=` ...).
pub(crate) fn spec_matches(value: &str, req: &str) -> bool {
    // Python's split(): Unicode white space and the separators U+001C..U+001F
    let words: Vec<&str> = req
        .split(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
        .filter(|w| !w.is_empty())
        .collect();
    let num = |s: &str| s.trim().parse::<f64>().ok();
    let numeric = |f: fn(f64, f64) -> bool| match (num(value), words.get(1).copied().and_then(num)) {
        (Some(x), Some(y)) => f(x, y),
        // Python's float() raises there; the filter's host is then skipped
        _ => false,
    };
    let operand = words.get(1).copied();
    match words.first().copied() {
        Some("<or>") => words.iter().skip(1).step_by(2).any(|w| *w == value),
        Some("<in>") => operand.is_some_and(|w| value.contains(w)),
        Some("s==") => operand == Some(value),
        Some("s!=") => operand.is_some_and(|w| value != w),
        Some("s<") => operand.is_some_and(|w| value < w),
        Some("s<=") => operand.is_some_and(|w| value <= w),
        Some("s>") => operand.is_some_and(|w| value > w),
        Some("s>=") => operand.is_some_and(|w| value >= w),
        Some("=" | ">=") => numeric(|x, y| x >= y),
        Some("==") => numeric(|x, y| x == y),
        Some("!=") => numeric(|x, y| x != y),
        Some("<=") => numeric(|x, y| x <= y),
        _ => value == req,
    }
}

impl Checks<'_> {
    /// `no-matching-flavor`: only for a Juno target, a node written free (no instance, not in
    /// maintenance, its sizes complete) and Nova's flavors read (`--nova-db` of a Juno/Kilo Nova).
    pub(crate) fn flavor(&mut self, n: &BmNode, f: &mut Fate, arch: Option<&str>) {
        let Some(flavors) = self.nova.and_then(|facts| facts.flavors.as_ref()) else { return };
        let written_free = f.action == NodeAction::Create && !f.keep_instance && f.maintenance_reasons.is_empty();
        if self.kind != TargetKind::Juno || !written_free {
            return;
        }
        let (Some(cpus), Some(memory_mb), Some(local_gb)) = (n.cpus, n.memory_mb, n.local_gb) else { return };
        if cpus <= 0 || memory_mb <= 0 || local_gb <= 0 {
            return; // invalid-size or incomplete-properties said so already
        }
        let node = NodeOffer { cpus, memory_mb, local_gb, uuid: f.uuid.as_deref(), cpu_arch: arch };
        if flavors.iter().any(|fl| misfit(fl, &node).is_none()) {
            return; // some flavor fits
        }
        let misfits: Vec<(&NovaFlavor, Misfit)> =
            flavors.iter().filter_map(|fl| misfit(fl, &node).map(|why| (fl, why))).collect();
        let mut named: Vec<String> =
            misfits.iter().take(FLAVORS_NAMED).map(|(fl, why)| format!("{} ({why})", fl.name)).collect();
        if misfits.len() > FLAVORS_NAMED {
            named.push(format!("{} more", misfits.len() - FLAVORS_NAMED));
        }
        let flavors = if named.is_empty() { "Nova has no flavor".to_string() } else { named.join(", ") };
        let a = self.d.raise(
            ConflictCode::NoMatchingFlavor,
            Subject::Node { nova_bm_id: n.id },
            f.uuid.as_deref(),
            format!(
                "free, and no flavor fits it exactly (cpus {cpus}, memory_mb {memory_mb}, local_gb {local_gb}, cpu_arch {}): Nova will never schedule onto it; {flavors}",
                arch.unwrap_or("-")
            ),
        );
        f.apply(ConflictCode::NoMatchingFlavor, a);
        if a == Some(Action::Maintenance) {
            f.maintenance_reasons.push("no Nova flavor fits it: add one, or correct its properties".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavor(vcpus: i64, ram: i64, root: i64, specs: &[(&str, &str)]) -> NovaFlavor {
        NovaFlavor {
            id: 1,
            name: "bm".into(),
            vcpus: Some(vcpus),
            memory_mb: Some(ram),
            root_gb: Some(root),
            ephemeral_gb: Some(0),
            swap: Some(0),
            disabled: false,
            extra_specs: specs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    const NODE: NodeOffer =
        NodeOffer { cpus: 8, memory_mb: 16384, local_gb: 40, uuid: Some("1be26c0b"), cpu_arch: Some("x86_64") };

    #[test]
    fn exact_sizes_and_the_capability_specs_decide() {
        assert_eq!(misfit(&flavor(8, 16384, 40, &[]), &NODE), None);
        assert_eq!(misfit(&flavor(8, 16384, 40, &[("cpu_arch", "x86_64")]), &NODE), None);
        // scoped keys other than capabilities are not the filter's
        let deploy = [("baremetal:deploy_kernel_id", "k"), ("hw:cpu_policy", "shared")];
        assert_eq!(misfit(&flavor(8, 16384, 40, &deploy), &NODE), None);
        assert_eq!(misfit(&flavor(8, 16384, 40, &[("capabilities:cpu_arch", "s== x86_64")]), &NODE), None);
        // a smaller flavor does not fit a larger node: the filters are exact
        assert_eq!(misfit(&flavor(4, 16384, 40, &[]), &NODE).map(|m| m.to_string()).as_deref(), Some("vcpus 4"));
        assert_eq!(misfit(&flavor(8, 8192, 40, &[]), &NODE), Some(Misfit::MemoryMb(8192)));
        assert!(misfit(&flavor(8, 16384, 20, &[]), &NODE).unwrap().to_string().starts_with("disk 20+0"));
        let i686 = flavor(8, 16384, 40, &[("cpu_arch", "i686")]);
        assert_eq!(misfit(&i686, &NODE).map(|m| m.to_string()).as_deref(), Some("cpu_arch = i686"));
        // an unscoped key the node's stats lack fails the filter
        assert!(misfit(&flavor(8, 16384, 40, &[("boot_option", "local")]), &NODE).is_some());
        // disk = root + ephemeral + swap
        let mut split = flavor(8, 16384, 30, &[]);
        split.ephemeral_gb = Some(9);
        split.swap = Some(1024);
        assert_eq!(misfit(&split, &NODE), None);
        // NULL or disabled: fits nothing; huge values do not overflow
        let mut null = flavor(8, 16384, 40, &[]);
        null.swap = None;
        assert!(misfit(&null, &NODE).is_some());
        let mut off = flavor(8, 16384, 40, &[]);
        off.disabled = true;
        assert!(misfit(&off, &NODE).is_some());
        assert!(misfit(&flavor(8, 16384, i64::MAX, &[]), &NODE).is_some());
        let no_arch = NodeOffer { cpu_arch: None, ..NODE };
        assert!(misfit(&flavor(8, 16384, 40, &[("cpu_arch", "x86_64")]), &no_arch).is_some());
    }

    #[test]
    fn host_state_attributes_before_the_stats() {
        let fits = |k: &str, v: &str| misfit(&flavor(8, 16384, 40, &[(k, v)]), &NODE).is_none();
        // the host state's own attributes, as the Ironic driver and IronicNodeState set them
        assert!(fits("capabilities:hypervisor_type", "s== ironic"));
        assert!(fits("hypervisor_type", "ironic"));
        assert!(!fits("hypervisor_type", "s== QEMU"));
        assert!(fits("cpu_info", "baremetal cpu"));
        assert!(fits("vcpus_total", ">= 8"));
        assert!(!fits("vcpus_total", ">= 9"));
        assert!(fits("free_disk_mb", "== 40960"));
        assert!(fits("num_instances", "0"));
        assert!(fits("nodename", "1be26c0b"));
        assert!(fits("capabilities:stats:cpu_arch", "x86_64"));
        assert!(!fits("capabilities:stats:boot_option", "local"));
        // a nested key into a number or a plain string finds nothing
        assert!(!fits("capabilities:vcpus_total:x", "8"));
        // values the plan cannot know name no node
        assert!(fits("capabilities:host", "s== some-compute-host"));
        assert!(fits("hypervisor_version", ">= 1"));
        // neither an attribute nor in the stats: refused, as Juno refuses it
        assert!(!fits("capabilities:boot_option", "local"));
        assert!(!fits("host_ip", "10.0.0.1"));
    }

    #[test]
    fn spec_operators_as_juno_reads_them() {
        assert!(spec_matches("x86_64", "x86_64"));
        assert!(!spec_matches("x86_64", "X86_64"));
        assert!(spec_matches("x86_64", "<or> i686 <or> x86_64"));
        assert!(!spec_matches("aarch64", "<or> i686 <or> x86_64"));
        assert!(spec_matches("x86_64", "<in> 86"));
        assert!(spec_matches("x86_64", "s== x86_64"));
        assert!(spec_matches("x86_64", "s!= i686"));
        assert!(spec_matches("16", ">= 8"));
        assert!(spec_matches("16", "= 16"));
        assert!(!spec_matches("x86_64", "== 1"));
        assert!(!spec_matches("x86_64", "s=="));
        assert!(spec_matches("", ""));
        // split as Python splits: U+001F is white space there
        assert!(spec_matches("x86_64", "s==\u{1f}x86_64"));
    }
}
