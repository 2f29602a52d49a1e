//! What nova.conf's `[baremetal]` section says that the nova_bm rows do not: plain data, read by
//! `conf_file.rs`, given to the pure plan through its options.

use std::collections::BTreeMap;

use crate::core::db::secret::Secret;

/// What nova.conf's `[baremetal]` section says that the nova_bm rows do not.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BaremetalConf {
    pub power_manager: Option<String>,
    pub virtual_power_ssh_host: Option<String>,
    pub virtual_power_ssh_port: Option<u16>,
    pub virtual_power_type: Option<String>,
    pub virtual_power_host_user: Option<String>,
    pub virtual_power_host_pass: Option<Secret>,
    pub virtual_power_host_key: Option<String>,
    pub deploy_kernel: Option<String>,
    pub deploy_ramdisk: Option<String>,
    /// where nova baremetal wrote each instance's PXE config (`<tftp_root>/<instance uuid>/config`)
    pub tftp_root: Option<String>,
    /// `flavor_extra_specs = cpu_arch:x86_64,...` as a map
    pub flavor_extra_specs: BTreeMap<String, String>,
}

impl BaremetalConf {
    /// Default of nova's baremetal driver when `power_manager` is unset.
    pub const DEFAULT_POWER_MANAGER: &'static str = "nova.virt.baremetal.ipmi.IPMI";

    pub fn power_manager(&self) -> &str {
        self.power_manager.as_deref().unwrap_or(Self::DEFAULT_POWER_MANAGER)
    }

    pub fn cpu_arch(&self) -> Option<&str> {
        self.flavor_extra_specs.get("cpu_arch").map(String::as_str)
    }
}
