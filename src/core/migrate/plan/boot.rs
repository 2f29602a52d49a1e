//! An instance's next boot: what the plan learned of it (nova baremetal's PXE config read from the
//! TFTP trees, Nova's kernel_id/ramdisk_id) or what the operator decided (`unknown-boot`), and what
//! it writes for it on each target. docs/mapping.md, "The next boot", says why.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::core::ironic::target::TargetKind;

/// How Ironic will boot the instance after the takeover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BootHow {
    /// learned: netbooted over PXE at every boot (modern: the `ramdisk` deploy interface; Juno: its
    /// PXE deploy with the instance's kernel and ramdisk)
    Pxe,
    /// `unknown-boot` decided `local-boot`: the operator says the disk has a bootloader
    LocalBoot,
    /// `unknown-boot` decided `maintenance`: written as without a boot, held in maintenance
    Unknown,
}

/// An instance node's next boot, as the plan shows it and its rows write it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextBoot {
    pub how: BootHow,
    /// `file://` of the kernel beside the config, else Nova's `instances.kernel_id` (Glance)
    pub kernel: Option<String>,
    pub ramdisk: Option<String>,
    /// `root=UUID=` of nova baremetal's boot label
    pub root_uuid: Option<String>,
    /// the kernel command line Ironic gives it: `root=UUID=<uuid> ro` and nova baremetal's extra parameters
    pub kernel_arguments: Option<String>,
    /// the PXE config it was learned from (shown safe)
    pub config: Option<String>,
    /// the compute host whose tree held it (`--tftp-root HOST=DIR`)
    pub host: Option<String>,
    /// why it could not be learned (`local-boot`, `unknown`)
    pub reason: Option<String>,
}

impl NextBoot {
    /// How Ironic will boot it, for people: "ramdisk deploy, PXE every boot", "local boot (operator)", ...
    pub fn describe(&self, kind: TargetKind) -> &'static str {
        match (self.how, kind) {
            (BootHow::Pxe, TargetKind::Modern) => "ramdisk deploy, PXE every boot",
            (BootHow::Pxe, TargetKind::Juno) => {
                "Juno PXE deploy, PXE every boot (root uuid kept in extra.bm2ironic_root_uuid: Juno's takeover writes 'default deploy', LP#1421370)"
            }
            (BootHow::LocalBoot, _) => "local boot (operator: a bootloader is on the disk)",
            (BootHow::Unknown, _) => "unknown: from the disk, which has no bootloader (held in maintenance)",
        }
    }

    /// One line: how, and the kernel, ramdisk and root uuid when learned.
    pub fn line(&self, kind: TargetKind) -> String {
        let mut s = self.describe(kind).to_string();
        if self.how == BootHow::Pxe {
            s.push_str(&format!(
                "; kernel {}, ramdisk {}, root UUID={}",
                self.kernel.as_deref().unwrap_or("-"),
                self.ramdisk.as_deref().unwrap_or("-"),
                self.root_uuid.as_deref().unwrap_or("-"),
            ));
            if let Some(h) = &self.host {
                s.push_str(&format!(" (from {h})"));
            }
        }
        s
    }

    /// Short rows for a narrow pane (the wizard's node detail): label, nova baremetal's side, Ironic's.
    pub fn pane(&self) -> Vec<(&'static str, &'static str, String)> {
        let how = match self.how {
            BootHow::Pxe => "PXE every boot",
            BootHow::LocalBoot => "local (operator)",
            BootHow::Unknown => "unknown: maint.",
        };
        let mut rows = vec![("next boot", "PXE (nova bm)", how.to_string())];
        if self.how == BootHow::Pxe {
            let from = |v: &Option<String>| match v.as_deref() {
                Some(f) if f.starts_with("file://") => "tftp copy".to_string(),
                other => crate::core::text::visible_line(other.unwrap_or("-")).chars().take(18).collect(),
            };
            let (k, r) = (from(&self.kernel), from(&self.ramdisk));
            rows.push(("kernel/rd", "", if k == r { k } else { format!("{k} / {r}") }));
            let root: String = self.root_uuid.as_deref().unwrap_or("-").chars().take(8).collect();
            rows.push(("root", "", format!("UUID={root}")));
        }
        rows
    }

    /// The rows' share: `instance_info` keys added, the interfaces returned (`deploy_interface`,
    /// `boot_interface`; modern only). Only a learned boot writes anything: `local-boot` and
    /// `unknown` are written as before. (The boot mode is every node's: `write_boot_mode`.)
    pub(super) fn write(
        &self,
        kind: TargetKind,
        instance_info: &mut Map<String, Value>,
    ) -> (Option<&'static str>, Option<&'static str>) {
        if self.how != BootHow::Pxe {
            return (None, None);
        }
        // Juno 2014.2 fetches images from Glance only (no file:// image service): there, a kernel
        // and ramdisk pair of Glance ids, or nothing (it then reads them from the image's
        // kernel_id / ramdisk_id properties in Glance, as nova baremetal did)
        let glance = |v: &Option<String>| v.as_deref().is_some_and(|v| !v.contains("://"));
        if kind == TargetKind::Modern || (glance(&self.kernel) && glance(&self.ramdisk)) {
            if let Some(k) = &self.kernel {
                instance_info.insert("kernel".into(), json!(k));
            }
            if let Some(r) = &self.ramdisk {
                instance_info.insert("ramdisk".into(), json!(r));
            }
        }
        match kind {
            TargetKind::Juno => (None, None),
            TargetKind::Modern => {
                if let Some(a) = &self.kernel_arguments {
                    instance_info.insert("ramdisk_kernel_arguments".into(), json!(a));
                }
                (Some("ramdisk"), Some("pxe"))
            }
        }
    }

    /// The root uuid kept in Juno's flat marker (`extra.bm2ironic_root_uuid`).
    pub(super) fn juno_root_uuid(&self, kind: TargetKind) -> Option<String> {
        (kind == TargetKind::Juno && self.how == BootHow::Pxe).then(|| self.root_uuid.clone()).flatten()
    }
}

/// The boot mode every node is written with, free or not, learned or not: `boot_mode:bios` merged
/// into `properties.capabilities` (modern only). nova baremetal booted every machine with BIOS
/// pxelinux, so their firmware is set to legacy BIOS; Ironic 39 reads the mode from the instance's
/// capabilities, then the node's, then `[deploy] default_boot_mode`, which is `uefi`: a node
/// without it would be deployed, PXE-booted and cleaned in UEFI mode and fail its first deploy. The
/// node's capability also refuses a later request for another mode (Ironic's
/// `get_boot_mode_for_deploy`: "violates node properties/capabilities"), instead of a machine that
/// never boots. Juno writes nothing: its PXE driver boots BIOS unless the capability says `uefi`,
/// and Juno's Nova would add the capability to the stats its scheduler matches flavors against.
pub(super) fn write_boot_mode(kind: TargetKind, props: &mut Map<String, Value>) {
    if kind != TargetKind::Modern {
        return;
    }
    let caps = match props.get("capabilities").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => {
            let kept: Vec<&str> = c.split(',').filter(|kv| !kv.trim().starts_with("boot_mode:")).collect();
            kept.into_iter().chain([BIOS]).collect::<Vec<_>>().join(",")
        }
        _ => BIOS.to_string(),
    };
    props.insert("capabilities".into(), json!(caps));
}

/// The capability written: the mode nova baremetal's machines booted in.
pub const BIOS: &str = "boot_mode:bios";

#[cfg(test)]
mod tests {
    use super::*;

    fn learned() -> NextBoot {
        NextBoot {
            how: BootHow::Pxe,
            kernel: Some("file:///t/i/kernel".into()),
            ramdisk: Some("glance-r".into()),
            root_uuid: Some("4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f".into()),
            kernel_arguments: Some("root=UUID=4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f ro nofb".into()),
            config: None,
            host: None,
            reason: None,
        }
    }

    #[test]
    fn modern_gets_the_ramdisk_deploy_and_bios() {
        let (mut ii, mut props) = (Map::new(), Map::new());
        props.insert("capabilities".into(), json!("boot_mode:uefi,disk_label:msdos"));
        let ifaces = learned().write(TargetKind::Modern, &mut ii);
        assert_eq!(ifaces, (Some("ramdisk"), Some("pxe")));
        assert_eq!(ii["kernel"], json!("file:///t/i/kernel"));
        assert_eq!(ii["ramdisk"], json!("glance-r"));
        assert_eq!(ii["ramdisk_kernel_arguments"], json!("root=UUID=4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f ro nofb"));
        write_boot_mode(TargetKind::Modern, &mut props);
        assert_eq!(props["capabilities"], json!("disk_label:msdos,boot_mode:bios"));
    }

    #[test]
    fn every_modern_node_boots_bios_and_juno_gets_no_capability() {
        let mut props = Map::new();
        write_boot_mode(TargetKind::Modern, &mut props);
        assert_eq!(props["capabilities"], json!("boot_mode:bios"));
        let mut juno = Map::new();
        write_boot_mode(TargetKind::Juno, &mut juno);
        assert!(juno.is_empty(), "{juno:?}");
    }

    #[test]
    fn juno_keeps_kernel_ramdisk_and_the_root_in_the_marker() {
        let mut ii = Map::new();
        assert_eq!(learned().write(TargetKind::Juno, &mut ii), (None, None));
        assert!(ii.is_empty(), "a file:// kernel is not for Juno, which fetches from Glance only: {ii:?}");
        let glance = NextBoot { kernel: Some("glance-k".into()), ramdisk: Some("glance-r".into()), ..learned() };
        glance.write(TargetKind::Juno, &mut ii);
        assert_eq!((ii["kernel"].as_str(), ii["ramdisk"].as_str()), (Some("glance-k"), Some("glance-r")));
        assert_eq!(learned().juno_root_uuid(TargetKind::Juno).as_deref(), Some("4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f"));
        assert_eq!(learned().juno_root_uuid(TargetKind::Modern), None);
    }

    #[test]
    fn local_boot_and_unknown_write_no_instance_info() {
        for how in [BootHow::LocalBoot, BootHow::Unknown] {
            let b = NextBoot { how, ..learned() };
            let mut ii = Map::new();
            assert_eq!(b.write(TargetKind::Modern, &mut ii), (None, None));
            assert!(ii.is_empty());
        }
    }
}
