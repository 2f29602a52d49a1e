//! What the operator tells the plan besides resolutions: deploy images, architectures, resource
//! class, the state free nodes arrive in, nova.conf's `[baremetal]`, the TFTP trees' boots, and
//! what the BMC check read.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use crate::core::bmc::BmcFacts;
use crate::core::settings::baremetal::BaremetalConf;
use crate::core::source::tftp::{BootFacts, TftpRoot};

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
    pub fn as_str(self) -> &'static str {
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
    /// copies of the compute hosts' TFTP trees (`--tftp-root`), read before the plan into `boots`
    pub tftp_roots: Vec<TftpRoot>,
    /// what the trees say of each instance's boot (read by `prepare`: the plan itself does no I/O)
    pub boots: Arc<BootFacts>,
    /// `--check-bmc`: read every BMC before planning (None: no check)
    pub check_bmc: Option<crate::core::bmc::CheckOptions>,
    /// what the BMC check read (read by `prepare` or the wizard's `b`: the plan does no I/O)
    pub bmc: Arc<BmcFacts>,
}
