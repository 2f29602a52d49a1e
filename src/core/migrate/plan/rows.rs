//! What is written: the Ironic node and port rows built from a nova_bm row once the checks have
//! decided its fate, and the driver and driver_info its power manager maps to. The column-by-column
//! rules are in docs/mapping.md.

use std::sync::Arc;

use chrono::NaiveDateTime;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::boot::{self, NextBoot};
use super::fate::Fate;
use super::options::PlanOptions;
use super::uuids::{normalize_uuid, BM2IRONIC_NS};
use crate::core::db::secret::Secret;
use crate::core::ironic::marker;
use crate::core::ironic::target::TargetKind;
use crate::core::source::model::{BmInterface, BmNode, InventoryNode};
use crate::core::source::nova::{NovaFacts, NovaInstance};

/// nova baremetal's power manager (global in nova.conf `[baremetal] power_manager`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerManager {
    Ipmi,
    VirtualPower,
    IBoot,
    Unsupported(String),
}

impl PowerManager {
    pub fn from_class(class: &str) -> PowerManager {
        let c = class.trim();
        if c.ends_with("IPMI") {
            PowerManager::Ipmi
        } else if c.ends_with("VirtualPowerManager") {
            PowerManager::VirtualPower
        } else if c.ends_with("IBootManager") {
            PowerManager::IBoot
        } else {
            PowerManager::Unsupported(c.to_string())
        }
    }

    /// The target driver, or None when the target has no equivalent.
    pub(super) fn driver(&self, kind: TargetKind) -> Option<&'static str> {
        match (self, kind) {
            (PowerManager::Ipmi, TargetKind::Modern) => Some("ipmi"),
            (PowerManager::Ipmi, TargetKind::Juno) => Some("pxe_ipmitool"),
            (PowerManager::VirtualPower, TargetKind::Juno) => Some("pxe_ssh"),
            (PowerManager::IBoot, TargetKind::Juno) => Some("pxe_iboot"),
            _ => None,
        }
    }
}

/// `driver_info`: values as Ironic needs them; passwords serialise as "***" everywhere but the loader.
/// A handful of entries under fixed names, so a short list rather than a map (a map's first node
/// costs about 600 bytes, times two per node, at 100k nodes); it comes out as a JSON object with
/// its keys sorted, as before.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DriverInfo(Vec<(&'static str, Value)>, Vec<(&'static str, Secret)>);

impl DriverInfo {
    fn set(&mut self, k: &'static str, v: Value) {
        match self.0.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 = v,
            None => self.0.push((k, v)),
        }
    }
    fn secret(&mut self, k: &'static str, v: &Secret) {
        match self.1.iter_mut().find(|(key, _)| *key == k) {
            Some(e) => e.1 = v.clone(),
            None => self.1.push((k, v.clone())),
        }
    }
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.0.iter().find(|(key, _)| *key == k).map(|(_, v)| v)
    }
    pub fn has_secret(&self, k: &str) -> bool {
        self.1.iter().any(|(key, _)| *key == k)
    }
    /// The JSON the loader writes (passwords in clear: only for the target database).
    pub fn expose_json(&self) -> Value {
        let mut m: Map<String, Value> = self.0.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        for (k, s) in &self.1 {
            m.insert(k.to_string(), Value::String(s.expose().to_string()));
        }
        Value::Object(m)
    }
    /// Every entry by name, sorted (a name set twice: its last value); None for a password.
    pub(super) fn sorted_redacted(&self) -> Vec<(&'static str, Option<&Value>)> {
        let mut all: Vec<(&'static str, Option<&Value>)> = self.0.iter().map(|(k, v)| (*k, Some(v))).collect();
        all.extend(self.1.iter().map(|(k, _)| (*k, None)));
        // stable: of equal names the password (pushed last) stays last, and wins, as in a map
        all.sort_by_key(|(k, _)| *k);
        all.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                *earlier = *later;
            }
            same
        });
        all
    }
    pub fn redacted_json(&self) -> Value {
        let mut m: Map<String, Value> = self.0.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        for (k, _) in &self.1 {
            m.insert(k.to_string(), json!("***"));
        }
        Value::Object(m)
    }
}

impl Serialize for DriverInfo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.redacted_json().serialize(s)
    }
}

/// An Ironic node row as we will write it. Its `extra` (our marker) is built when asked for, from the
/// nova_bm row it names (two small JSON objects a node, at 100k nodes, were 130 MB of maps).
#[derive(Debug, Clone)]
pub struct IronicNode {
    pub uuid: String,
    pub instance_uuid: Option<String>,
    pub instance_name: Option<String>,
    pub driver: String,
    pub driver_info: DriverInfo,
    pub properties: Value,
    pub resource_class: Option<String>,
    pub instance_info: Value,
    pub provision_state: Option<String>,
    /// Always None: Ironic reads the real power state from the BMC instead of forcing a guess.
    pub power_state: Option<String>,
    pub maintenance: bool,
    pub maintenance_reason: Option<String>,
    pub created_at: Option<NaiveDateTime>,
    pub updated_at: Option<NaiveDateTime>,
    /// the nova_bm row, named in `extra`
    pub nova_bm_id: i64,
    pub service_host: Option<String>,
    /// Juno has no maintenance_reason column: `extra` carries it there
    pub kind: TargetKind,
    /// `ramdisk` / `pxe` for an instance whose next boot was learned (modern); None: Ironic's default
    pub deploy_interface: Option<String>,
    pub boot_interface: Option<String>,
    /// Juno: the learned root uuid, kept in the flat marker (`extra.bm2ironic_root_uuid`)
    pub root_uuid: Option<String>,
}

impl IronicNode {
    /// The `extra` column, our marker: `{"bm2ironic": {"nova_bm_id", "service_host"}}`; on Juno flat
    /// keys, with the maintenance reason (`bm2ironic_nova_bm_id`, ...: see `ironic::marker`).
    pub fn extra(&self) -> Value {
        let juno = self.kind == TargetKind::Juno;
        let reason = self.maintenance_reason.as_deref().filter(|_| juno);
        let mut extra = marker::node_extra(juno, self.nova_bm_id, self.service_host.as_deref(), reason);
        if let (true, Some(r)) = (juno, &self.root_uuid) {
            extra[marker::JUNO_ROOT_UUID] = json!(r);
        }
        extra
    }
}

impl Serialize for IronicNode {
    /// The row's fields, `extra` last as a JSON object (as when it was stored).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("IronicNode", 17)?;
        st.serialize_field("uuid", &self.uuid)?;
        // only when set: a node without a learned boot serialises as before
        if let Some(d) = &self.deploy_interface {
            st.serialize_field("deploy_interface", d)?;
        }
        if let Some(b) = &self.boot_interface {
            st.serialize_field("boot_interface", b)?;
        }
        st.serialize_field("instance_uuid", &self.instance_uuid)?;
        st.serialize_field("instance_name", &self.instance_name)?;
        st.serialize_field("driver", &self.driver)?;
        st.serialize_field("driver_info", &self.driver_info)?;
        st.serialize_field("properties", &self.properties)?;
        st.serialize_field("resource_class", &self.resource_class)?;
        st.serialize_field("instance_info", &self.instance_info)?;
        st.serialize_field("provision_state", &self.provision_state)?;
        st.serialize_field("power_state", &self.power_state)?;
        st.serialize_field("maintenance", &self.maintenance)?;
        st.serialize_field("maintenance_reason", &self.maintenance_reason)?;
        st.serialize_field("created_at", &self.created_at)?;
        st.serialize_field("updated_at", &self.updated_at)?;
        st.serialize_field("extra", &self.extra())?;
        st.end()
    }
}

/// An Ironic port row as we will write it. Its JSON columns are built when asked for (`extra`,
/// `internal_info`) from the few values they hold: two small JSON objects per port cost about
/// 1.3 KB of maps, times 200k ports at 100k nodes.
#[derive(Debug, Clone)]
pub struct IronicPort {
    pub uuid: String,
    pub address: String,
    pub node_uuid: String,
    pub nova_bm_interface_id: i64,
    pub pxe_enabled: bool,
    /// the Neutron port bound to the interface (kept only with the node's instance)
    pub vif: Option<String>,
    /// where the VIF goes: `extra.vif_port_id` on Juno, `internal_info.tenant_vif_port_id` on modern
    pub kind: TargetKind,
    pub created_at: Option<NaiveDateTime>,
    pub updated_at: Option<NaiveDateTime>,
}

impl IronicPort {
    /// The `extra` column: our marker (flat on Juno), and the VIF on Juno.
    pub fn extra(&self) -> Value {
        let mut extra = marker::port_extra(self.kind == TargetKind::Juno, self.nova_bm_interface_id);
        if let (Some(v), TargetKind::Juno) = (&self.vif, self.kind) {
            extra["vif_port_id"] = json!(v);
        }
        extra
    }

    /// The `internal_info` column: the VIF on modern Ironic.
    pub fn internal_info(&self) -> Value {
        let mut info = json!({});
        if let (Some(v), TargetKind::Modern) = (&self.vif, self.kind) {
            info["tenant_vif_port_id"] = json!(v);
        }
        info
    }
}

impl Serialize for IronicPort {
    /// The row's fields, `extra` and `internal_info` as JSON objects (as when they were stored).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("IronicPort", 9)?;
        st.serialize_field("uuid", &self.uuid)?;
        st.serialize_field("address", &self.address)?;
        st.serialize_field("node_uuid", &self.node_uuid)?;
        st.serialize_field("nova_bm_interface_id", &self.nova_bm_interface_id)?;
        st.serialize_field("pxe_enabled", &self.pxe_enabled)?;
        st.serialize_field("extra", &self.extra())?;
        st.serialize_field("internal_info", &self.internal_info())?;
        st.serialize_field("created_at", &self.created_at)?;
        st.serialize_field("updated_at", &self.updated_at)?;
        st.end()
    }
}

/// What a node's rows are built from besides its nova_bm row: the checks' verdicts and Nova's facts
/// about its instance, kept by the plan (a few dozen bytes a node) instead of the rows themselves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowSpec {
    pub(super) arch: Option<String>,
    pub(super) keep_instance: bool,
    pub(super) unsupported_power: bool,
    /// the `maintenance_reason` written (escaped), when the node goes in maintenance
    pub(super) maintenance_reason: Option<String>,
    /// interfaces the checks left out (sorted)
    pub(super) skipped_interfaces: Vec<i64>,
    /// the row had impossible sizes: they are left out
    pub(super) cleaned: bool,
    /// from Nova's instance, when the node keeps it: image, root and ephemeral disk sizes
    pub(super) image_source: Option<String>,
    pub(super) root_gb: Option<i64>,
    pub(super) ephemeral_gb: Option<i64>,
    /// the instance's next boot, when it keeps one
    pub(super) boot: Option<Arc<NextBoot>>,
}

impl RowSpec {
    pub(super) fn new(n: &BmNode, f: &Fate, arch: Option<String>, nova: Option<&NovaFacts>) -> RowSpec {
        let inst = nova_instance(n, nova.filter(|_| f.keep_instance));
        let mut skipped: Vec<i64> = f.skipped_interfaces.iter().copied().collect();
        skipped.sort_unstable();
        let maintenance = !f.maintenance_reasons.is_empty();
        // a plain column: non-ASCII and control characters (from a hostile task_state) written escaped
        let reason =
            maintenance.then(|| {
                format!("bm2ironic: {}", f.maintenance_reasons.join("; "))
                    .chars()
                    .map(|c| {
                        if c.is_ascii() && !c.is_ascii_control() {
                            c.to_string()
                        } else {
                            c.escape_unicode().to_string()
                        }
                    })
                    .collect::<String>()
            });
        RowSpec {
            arch,
            keep_instance: f.keep_instance,
            unsupported_power: f.unsupported_power,
            maintenance_reason: reason,
            skipped_interfaces: skipped,
            cleaned: f.cleaned,
            image_source: inst.and_then(|i| i.image_ref.clone()).filter(|s| !s.is_empty()),
            root_gb: inst.and_then(|i| i.root_gb),
            ephemeral_gb: inst.and_then(|i| i.ephemeral_gb),
            boot: f.boot.clone().filter(|_| f.keep_instance),
        }
    }
}

/// Nova's (live) instance of the row's instance uuid, when Nova's facts are given and hold it.
pub(super) fn nova_instance<'a>(n: &BmNode, nova: Option<&'a NovaFacts>) -> Option<&'a NovaInstance> {
    nova.and_then(|facts| {
        let raw = n.instance_uuid.as_deref().unwrap_or("").trim();
        let norm = normalize_uuid(raw).unwrap_or_default();
        facts.instances.get(norm.as_str()).or_else(|| facts.instances.get(raw))
    })
    .filter(|i| !i.deleted)
}

/// What every node's rows share: the plan's options, the power manager and the target's kind.
#[derive(Debug, Clone)]
pub(super) struct RowContext {
    pub(super) opts: PlanOptions,
    pub(super) power: PowerManager,
    pub(super) kind: TargetKind,
}

/// The driver a node is written with.
pub(super) fn driver_of(spec: &RowSpec, ctx: &RowContext) -> &'static str {
    if spec.unsupported_power {
        match ctx.kind {
            TargetKind::Modern => "manual-management",
            TargetKind::Juno => "fake",
        }
    } else {
        ctx.power.driver(ctx.kind).unwrap_or("fake")
    }
}

/// The provision state a node is written in.
pub(super) fn provision_state_of(spec: &RowSpec, ctx: &RowContext) -> Option<&'static str> {
    if spec.keep_instance {
        Some("active")
    } else {
        match ctx.kind {
            TargetKind::Modern => Some(ctx.opts.free_state.as_str()),
            TargetKind::Juno => None,
        }
    }
}

/// A node's rows: its Ironic node and its ports.
#[derive(Debug, Clone)]
pub struct Rows {
    pub node: IronicNode,
    pub ports: Vec<IronicPort>,
}

/// Values no machine has (`invalid-size`): negative sizes, a terminal port outside 1..=65535.
/// The largest size a node can have: Nova keeps a compute node's vcpus, memory_mb and local_gb in
/// 32-bit INTEGER columns (`compute_nodes`), and a flavor's too, so a larger value cannot be scheduled
/// and is a typo or garbage in nova_bm (2^63-1 was seen), never a machine.
pub const MAX_SIZE: i64 = i32::MAX as i64;

/// Whether nova_bm's size value could be a real machine's (0 is possible: `incomplete-properties`
/// names it; negative and over [`MAX_SIZE`] are `invalid-size`).
pub fn size_is_possible(v: i64) -> bool {
    (0..=MAX_SIZE).contains(&v)
}

pub(super) fn invalid_sizes(n: &BmNode) -> Vec<String> {
    let mut bad = Vec::new();
    for (name, v) in [
        ("cpus", n.cpus),
        ("memory_mb", n.memory_mb),
        ("local_gb", n.local_gb),
        ("root_mb", n.root_mb),
        ("swap_mb", n.swap_mb),
        ("ephemeral_mb", n.ephemeral_mb),
    ] {
        if let Some(v) = v.filter(|v| !size_is_possible(*v)) {
            bad.push(if v < 0 { format!("{name}={v}") } else { format!("{name}={v} (over {MAX_SIZE}, Nova's limit)") });
        }
    }
    if let Some(p) = n.terminal_port.filter(|p| *p < 0 || *p > 65535) {
        bad.push(format!("terminal_port={p}"));
    }
    bad
}

/// The row without the values `invalid_sizes` names: what is written once `invalid-size` was raised
/// (`Fate::cleaned`, see `Checks::sizes`).
fn without_invalid_sizes(n: &BmNode) -> BmNode {
    let mut c = n.clone();
    for v in [&mut c.cpus, &mut c.memory_mb, &mut c.local_gb, &mut c.root_mb, &mut c.swap_mb, &mut c.ephemeral_mb] {
        if v.is_some_and(|x| !size_is_possible(x)) {
            *v = None;
        }
    }
    if c.terminal_port.is_some_and(|p| !(0..=65535).contains(&p)) {
        c.terminal_port = None;
    }
    c
}

/// Builds a node's rows from its nova_bm row (and interfaces) and what the plan kept of it.
pub(super) fn build_rows(entry: &InventoryNode, uuid: &str, spec: &RowSpec, ctx: &RowContext) -> Rows {
    let cleaned;
    let n = if spec.cleaned {
        cleaned = without_invalid_sizes(&entry.node);
        &cleaned
    } else {
        &entry.node
    };
    let node = build_node(n, uuid, spec, ctx);
    let mut ports: Vec<IronicPort> = entry
        .interfaces
        .iter()
        .filter(|i| !i.deleted && spec.skipped_interfaces.binary_search(&i.id).is_err())
        .filter_map(|i| build_port(i, &node, spec.keep_instance, ctx.kind))
        .collect();
    ports.shrink_to_fit();
    Rows { node, ports }
}

fn build_node(n: &BmNode, uuid: &str, spec: &RowSpec, ctx: &RowContext) -> IronicNode {
    let (opts, power, kind) = (&ctx.opts, &ctx.power, ctx.kind);
    let bm = &opts.baremetal;
    let mut di = DriverInfo::default();
    if !spec.unsupported_power {
        match power {
            PowerManager::Ipmi => {
                if let Some(a) = n.pm_address.as_deref().filter(|a| !a.is_empty()) {
                    di.set("ipmi_address", json!(a));
                }
                if let Some(u) = n.pm_user.as_deref().filter(|a| !a.is_empty()) {
                    di.set("ipmi_username", json!(u));
                }
                if let Some(p) = n.pm_password.as_ref().filter(|p| !p.is_empty()) {
                    di.secret("ipmi_password", p);
                }
                if let Some(t) = n.terminal_port.filter(|t| *t > 0) {
                    di.set("ipmi_terminal_port", json!(t));
                }
            }
            PowerManager::VirtualPower => {
                if let Some(h) = &bm.virtual_power_ssh_host {
                    di.set("ssh_address", json!(h));
                }
                di.set("ssh_port", json!(bm.virtual_power_ssh_port.unwrap_or(22)));
                if let Some(u) = &bm.virtual_power_host_user {
                    di.set("ssh_username", json!(u));
                }
                di.set("ssh_virt_type", json!(bm.virtual_power_type.as_deref().unwrap_or("virsh")));
                if let Some(k) = &bm.virtual_power_host_key {
                    di.set("ssh_key_filename", json!(k));
                } else if let Some(p) = &bm.virtual_power_host_pass {
                    di.secret("ssh_password", p);
                }
            }
            PowerManager::IBoot => {
                // pm_address = host[:port][,relay]
                let addr = n.pm_address.as_deref().unwrap_or("");
                let (hostport, relay) = addr.split_once(',').unwrap_or((addr, ""));
                let (host, port) = hostport.split_once(':').unwrap_or((hostport, ""));
                di.set("iboot_address", json!(host));
                if let Ok(p) = port.parse::<u16>() {
                    di.set("iboot_port", json!(p));
                }
                if let Ok(r) = relay.parse::<u16>() {
                    di.set("iboot_relay_id", json!(r));
                }
                if let Some(u) = n.pm_user.as_deref().filter(|a| !a.is_empty()) {
                    di.set("iboot_username", json!(u));
                }
                if let Some(p) = n.pm_password.as_ref().filter(|p| !p.is_empty()) {
                    di.secret("iboot_password", p);
                }
            }
            PowerManager::Unsupported(_) => {}
        }
    }
    let (k_key, r_key) = match kind {
        TargetKind::Modern => ("deploy_kernel", "deploy_ramdisk"),
        TargetKind::Juno => ("pxe_deploy_kernel", "pxe_deploy_ramdisk"),
    };
    if let Some(k) = &opts.deploy_kernel {
        di.set(k_key, json!(k));
    }
    if let Some(r) = &opts.deploy_ramdisk {
        di.set(r_key, json!(r));
    }

    let mut props = Map::new();
    for (k, v) in [("cpus", n.cpus), ("memory_mb", n.memory_mb), ("local_gb", n.local_gb)] {
        if let Some(v) = v {
            props.insert(k.into(), json!(v));
        }
    }
    if let Some(a) = &spec.arch {
        props.insert("cpu_arch".into(), json!(a));
    }

    let mut instance_info = Map::new();
    if spec.keep_instance {
        if let Some(img) = &spec.image_source {
            instance_info.insert("image_source".into(), json!(img));
        }
        let root_gb = spec.root_gb.or(n.root_mb.map(|mb| mb / 1024));
        if let Some(r) = root_gb {
            instance_info.insert("root_gb".into(), json!(r));
        }
        instance_info.insert("swap_mb".into(), json!(n.swap_mb.unwrap_or(0)));
        let eph = spec.ephemeral_gb.or(n.ephemeral_mb.map(|mb| mb / 1024)).unwrap_or(0);
        instance_info.insert("ephemeral_gb".into(), json!(eph));
        instance_info.insert("preserve_ephemeral".into(), json!(n.preserve_ephemeral.unwrap_or(false)));
    }
    let boot = spec.boot.as_deref().filter(|_| spec.keep_instance);
    let (deploy_interface, boot_interface) = boot.map_or((None, None), |b| b.write(kind, &mut instance_info));
    boot::write_boot_mode(kind, &mut props);

    IronicNode {
        uuid: uuid.to_string(),
        instance_uuid: if spec.keep_instance { n.instance_uuid.as_deref().and_then(normalize_uuid) } else { None },
        instance_name: if spec.keep_instance { n.instance_name.clone() } else { None },
        driver: driver_of(spec, ctx).to_string(),
        driver_info: di,
        properties: Value::Object(props),
        resource_class: if kind == TargetKind::Modern { opts.resource_class.clone() } else { None },
        instance_info: Value::Object(instance_info),
        provision_state: provision_state_of(spec, ctx).map(str::to_string),
        power_state: None,
        maintenance: spec.maintenance_reason.is_some(),
        maintenance_reason: spec.maintenance_reason.clone(),
        created_at: n.created_at,
        updated_at: n.updated_at,
        nova_bm_id: n.id,
        service_host: n.service_host.clone(),
        kind,
        deploy_interface: deploy_interface.map(str::to_string),
        boot_interface: boot_interface.map(str::to_string),
        root_uuid: boot.and_then(|b| b.juno_root_uuid(kind)),
    }
}

/// A port's uuid: v5 of `port:<node uuid>:<mac>` in our namespace (stable across runs).
fn port_uuid(node_uuid: &str, mac: &str) -> String {
    let mut name = String::with_capacity(6 + node_uuid.len() + mac.len());
    name.push_str("port:");
    name.push_str(node_uuid);
    name.push(':');
    name.push_str(mac);
    let u = uuid::Uuid::new_v5(&BM2IRONIC_NS, name.as_bytes());
    u.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()).to_owned()
}

fn build_port(i: &BmInterface, node: &IronicNode, keep_instance: bool, kind: TargetKind) -> Option<IronicPort> {
    let mac = i.address_normalized?.to_string();
    Some(IronicPort {
        uuid: port_uuid(&node.uuid, &mac),
        address: mac,
        node_uuid: node.uuid.clone(),
        nova_bm_interface_id: i.id,
        pxe_enabled: true,
        vif: i.vif_uuid.clone().filter(|_| keep_instance),
        kind,
        created_at: i.created_at,
        updated_at: i.updated_at,
    })
}
