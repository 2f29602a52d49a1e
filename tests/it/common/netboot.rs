//! The network boot of a machine as nova baremetal left it (the QEMU machine of common/bmc.rs): the
//! compute host's TFTP tree (each instance's PXE config, kernel and ramdisk, under nova's own
//! `[baremetal] tftp_root`), the TFTP server's view of it, the symlink that points the network at the
//! conductor's TFTP root at the end of the window, and the machine's console read as plain text.

use std::path::Path;

/// nova baremetal's `pxe_append_params` on these clouds (its default plus the serial console).
pub const NOVA_APPEND: &str = "nofb nomodeset vga=normal console=ttyS0";

/// The pxelinux name of a port's config: `01-` and the MAC with dashes, lower case.
pub fn pxe_mac_name(mac: &str) -> String {
    format!("01-{}", mac.replace(':', "-").to_lowercase())
}

/// nova baremetal's PXE config of a deployed instance: nova 2014.2's pxe_config.template as the deploy
/// helper's switch_pxe_config left it (`default boot`, `{{ ROOT }}` replaced by the root's UUID), its
/// paths under nova's own `[baremetal] tftp_root`, /tftpboot.
pub fn nova_pxe_config(instance: &str, root_uuid: &str) -> String {
    let i = instance;
    format!(
        "default boot\n\nlabel deploy\nkernel /tftpboot/{i}/deploy_kernel\n\
         append initrd=/tftpboot/{i}/deploy_ramdisk selinux=0 disk=cciss/c0d0,sda,hda,vda iscsi_target_iqn=iqn-{i} \
         deployment_id=1 deployment_key=0MOV9EXX troubleshoot=0 {NOVA_APPEND}\nipappend 3\n\n\n\
         label boot\nkernel /tftpboot/{i}/kernel\nappend initrd=/tftpboot/{i}/ramdisk root=UUID={root_uuid} ro {NOVA_APPEND}\n"
    )
}

/// The compute host's tree as nova baremetal left it for `instances` (`<tftp_root>/<instance
/// uuid>/config, kernel, ramdisk`, the kernel and ramdisk the boot dir's; nova baremetal also leaves
/// `deploy_kernel` and `deploy_ramdisk` there until the instance's teardown, as its own deploys show
/// (juno_baremetal::deployed): left out, as the tool reads neither), copied to `tree`; and `view`, the TFTP server's view of it: the loader,
/// the link of the machine's MAC to its instance's config (`machine`: (MAC, instance)), and absolute
/// `/tftpboot/...` names served from the tree (dnsmasq serves absolute names inside its tftp-root;
/// QEMU's TFTP appends them to its root).
pub fn write_nova_tftp(
    tree: &Path,
    view: &Path,
    boot: &Path,
    root_uuid: &str,
    instances: &[&str],
    machine: (&str, &str),
) {
    for inst in instances {
        let dir = tree.join(inst);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config"), nova_pxe_config(inst, root_uuid)).unwrap();
        // copies, not links: nothing written into the tree may reach the cached boot files
        std::fs::copy(boot.join("vmlinuz"), dir.join("kernel")).unwrap();
        std::fs::copy(boot.join("initramfs"), dir.join("ramdisk")).unwrap();
    }
    std::fs::create_dir_all(view.join("pxelinux.cfg")).unwrap();
    for f in ["pxelinux.0", "ldlinux.c32"] {
        std::fs::copy(boot.join(f), view.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(tree, view.join("tftpboot")).unwrap();
    let (mac, instance) = machine;
    std::os::unix::fs::symlink(
        format!("../tftpboot/{instance}/config"),
        view.join("pxelinux.cfg").join(pxe_mac_name(mac)),
    )
    .unwrap();
}

/// Points the symlink `link` at `to` (atomically: a new link renamed over the old).
pub fn repoint(link: &Path, to: &Path) {
    let tmp = link.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(to, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
}

/// A console without terminal escapes and carriage returns (pxelinux moves the cursor mid-word).
pub fn plain(console: &str) -> String {
    let esc = regex::Regex::new(r"\x1b(\[[0-9;?]*[A-Za-z]|[^\[])").unwrap();
    esc.replace_all(console, "").replace('\r', "")
}

/// nova_bm as nova baremetal left a netboot cloud of two machines: node 1 running `instance`
/// (deployed, its PXE config in nova's /tftpboot) and node 2 free, both on compute host
/// `bm-compute-1`, of one size, their BMCs' login the same.
pub struct TwoNodes<'a> {
    /// when nova baremetal enrolled them (y, m, d)
    pub enrolled: (i32, u32, u32),
    /// (node uuid, BMC address): the instance's node, then the free one
    pub nodes: [(&'a str, &'a str); 2],
    pub bmc_login: (&'a str, &'a str),
    /// cpus, memory MiB, disk GB
    pub size: (i64, i64, i64),
    /// the instance's uuid and name
    pub instance: (&'a str, &'a str),
    /// the instance's root and swap MiB
    pub root_swap_mb: (i64, i64),
    pub image_path: Option<&'a str>,
    /// the interfaces: (node id, MAC)
    pub macs: &'a [(i64, &'a str)],
}

impl TwoNodes<'_> {
    pub fn fixture(&self) -> bm2ironic::core::demo::fixture::Fixture {
        use bm2ironic::core::db::secret::Secret;
        use bm2ironic::core::source::model::{BmInterface, BmNode};
        let (y, m, d) = self.enrolled;
        let t = chrono::NaiveDate::from_ymd_opt(y, m, d).and_then(|d| d.and_hms_opt(10, 0, 0));
        let node = |id: i64, (uuid, bmc): (&str, &str)| BmNode {
            id,
            uuid: Some(uuid.into()),
            service_host: Some("bm-compute-1".into()),
            cpus: Some(self.size.0),
            memory_mb: Some(self.size.1),
            local_gb: Some(self.size.2),
            pm_address: Some(bmc.into()),
            pm_user: Some(self.bmc_login.0.into()),
            pm_password: Some(Secret::new(self.bmc_login.1)),
            preserve_ephemeral: Some(false),
            created_at: t,
            updated_at: t,
            deleted_raw: Some(0),
            ..Default::default()
        };
        let mut instance = node(1, self.nodes[0]);
        instance.task_state = Some("active".into());
        instance.instance_uuid = Some(self.instance.0.into());
        instance.instance_name = Some(self.instance.1.into());
        (instance.root_mb, instance.swap_mb, instance.ephemeral_mb) =
            (Some(self.root_swap_mb.0), Some(self.root_swap_mb.1), Some(0));
        instance.image_path = self.image_path.map(str::to_string);
        instance.pxe_config_path = Some(format!("/tftpboot/{}/config", self.instance.0));
        let interfaces = (1..)
            .zip(self.macs)
            .map(|(id, &(node, mac))| {
                BmInterface {
                    id,
                    bm_node_id: Some(node),
                    address: Some(mac.into()),
                    created_at: t,
                    deleted_raw: Some(0),
                    ..Default::default()
                }
                .normalize()
            })
            .collect();
        bm2ironic::core::demo::fixture::Fixture {
            schema_version: 10,
            nodes: vec![instance, node(2, self.nodes[1])],
            interfaces,
        }
    }
}
