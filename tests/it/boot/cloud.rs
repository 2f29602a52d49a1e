//! The cloud of the boot test as nova baremetal left it: its nodes, BMCs and MACs, nova_bm's rows, the
//! compute host's TFTP tree with the instance's PXE config, and the TFTP roots written by hand the way
//! each unbootable case leaves them.

use std::path::Path;

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::netboot::{self, TwoNodes};
pub use crate::common::netboot::{pxe_mac_name, repoint, NOVA_APPEND};

pub const BMC_USER: &str = "admin";
pub const BMC_PASSWORD: &str = "boot-test-pass";

/// nova_bm's instance node (its uuid stays the Ironic node's), its instance, its NICs (the first is
/// the VM's), its BMC.
pub const NODE: &str = "1be0c0de-0025-4000-8000-000000000001";
pub const INSTANCE: &str = "1a57a7ce-0025-4000-8000-000000000001";
pub const NODE_MACS: [&str; 2] = ["52:54:00:25:00:01", "52:54:00:25:00:11"];
pub const NODE_BMC: &str = "127.0.25.1";
/// nova_bm's free node: a power state only (pyghmi), powered off.
pub const FREE: &str = "1be0c0de-0025-4000-8000-000000000002";
pub const FREE_MAC: &str = "52:54:00:25:00:02";
pub const FREE_BMC: &str = "127.0.25.2";
/// The nodes of the hand-written TFTP roots (the failure cases).
pub const HAND_NODE: &str = "1be0c0de-0024-4000-8000-000000000001";

/// What a hand-written TFTP root holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tftp {
    /// Ironic's config left at `default deploy`, whose deploy kernel and ramdisk are not there.
    Deploy,
    /// The loader, the node's kernel and ramdisk, but no config for the machine.
    NoConfig,
    /// Nothing: DHCP names a boot file TFTP does not have, and the machine tries its disk.
    NoBootFile,
}

/// Ironic 39's drivers/modules/pxe_config.template rendered for a node being deployed (boot interface
/// `pxe`, BIOS; `kernel_append_params` "nofb vga=normal console=ttyS0"), left at `default deploy`.
fn ironic_deploy_config(root_uuid: &str) -> String {
    let append = "nofb vga=normal console=ttyS0";
    let n = HAND_NODE;
    format!(
        "default deploy\n\nlabel deploy\nkernel {n}/deploy_kernel\nappend initrd={n}/deploy_ramdisk selinux=0 troubleshoot=0 text {append}\nipappend 2\n\n\
         label boot_whole_disk\nCOM32 chain.c32\nappend mbr:{{{{ DISK_IDENTIFIER }}}}\n\n\
         label boot_ramdisk\nkernel {n}/kernel\nappend initrd={n}/ramdisk root=/dev/ram0 text {append} root=UUID={root_uuid} ro\n\n\
         label boot_anaconda\nkernel {n}/kernel\nappend initrd={n}/ramdisk text {append} inst.ks= inst.stage2=\nipappend 2"
    )
}

pub fn write_tftp(dir: &Path, boot: &Path, mac: &str, root_uuid: &str, what: Tftp) {
    std::fs::create_dir_all(dir).unwrap();
    if what == Tftp::NoBootFile {
        return;
    }
    for f in ["pxelinux.0", "ldlinux.c32"] {
        std::fs::copy(boot.join(f), dir.join(f)).unwrap();
    }
    let node = dir.join(HAND_NODE);
    std::fs::create_dir_all(&node).unwrap();
    std::fs::copy(boot.join("vmlinuz"), node.join("kernel")).unwrap();
    std::fs::copy(boot.join("initramfs"), node.join("ramdisk")).unwrap();
    if what == Tftp::NoConfig {
        return;
    }
    std::fs::write(node.join("config"), ironic_deploy_config(root_uuid)).unwrap();
    std::fs::create_dir_all(dir.join("pxelinux.cfg")).unwrap();
    std::os::unix::fs::symlink(format!("../{HAND_NODE}/config"), dir.join("pxelinux.cfg").join(pxe_mac_name(mac)))
        .unwrap();
}

/// The compute host's tree as nova baremetal left it for the instance, and the TFTP server's view of it
/// (common/netboot.rs).
pub fn write_nova_tftp(tree: &Path, view: &Path, boot: &Path, root_uuid: &str) {
    netboot::write_nova_tftp(tree, view, boot, root_uuid, &[INSTANCE], (NODE_MACS[0], INSTANCE));
}

/// nova_bm as nova baremetal left it: the instance node (running, its machine the VM) and a free one.
pub fn nova_bm() -> Fixture {
    TwoNodes {
        enrolled: (2014, 5, 1),
        nodes: [(NODE, NODE_BMC), (FREE, FREE_BMC)],
        bmc_login: (BMC_USER, BMC_PASSWORD),
        size: (1, 256, 1),
        instance: (INSTANCE, "instance-00000025"),
        root_swap_mb: (24, 8),
        image_path: Some("/var/lib/nova/instances/instance-00000025/disk"),
        macs: &[(1, NODE_MACS[0]), (1, NODE_MACS[1]), (2, FREE_MAC)],
    }
    .fixture()
}
