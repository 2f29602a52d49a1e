//! What drives and describes the machine: `unsupported-power` and `missing-bmc` (the power manager
//! and its BMC), `missing-arch`, `invalid-size` and `incomplete-properties`. See docs/conflicts.md,
//! and docs/mapping.md §2.4-2.5 for what is written.

use super::Checks;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::Fate;
use crate::core::migrate::plan::options::PlanOptions;
use crate::core::migrate::plan::rows::{invalid_sizes, PowerManager};
use crate::core::source::model::BmNode;

fn kind_name(k: TargetKind) -> &'static str {
    match k {
        TargetKind::Modern => "modern",
        TargetKind::Juno => "Juno",
    }
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

fn incomplete(n: &BmNode) -> Vec<&'static str> {
    let mut missing = Vec::new();
    for (name, v) in [("cpus", n.cpus), ("memory_mb", n.memory_mb), ("local_gb", n.local_gb)] {
        if v.unwrap_or(0) == 0 {
            missing.push(name);
        }
    }
    missing
}

impl Checks<'_> {
    /// `unsupported-power`: the power manager has no driver in this Ironic (`maintenance` writes the
    /// node without power control); else `missing-bmc`: nothing to reach its BMC with.
    pub(crate) fn power(&mut self, n: &BmNode, f: &mut Fate) {
        let subject = Subject::Node { nova_bm_id: n.id };
        match self.power.driver(self.kind) {
            None => {
                let class = self.opts.baremetal.power_manager();
                let a = self.d.raise(
                    ConflictCode::UnsupportedPower,
                    subject,
                    f.uuid.as_deref(),
                    format!("power manager {class} has no equivalent in a {} Ironic", kind_name(self.kind)),
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
                let missing = match self.power {
                    PowerManager::Ipmi | PowerManager::IBoot => {
                        n.pm_address.as_deref().is_none_or(|a| a.trim().is_empty())
                    }
                    PowerManager::VirtualPower => self.opts.baremetal.virtual_power_ssh_host.is_none(),
                    PowerManager::Unsupported(_) => false,
                };
                if missing {
                    let a = self.d.raise(
                        ConflictCode::MissingBmc,
                        subject,
                        f.uuid.as_deref(),
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
    }

    /// `missing-arch`: no cpu_arch for the node's host (`--arch`, nova.conf, `--default-arch`).
    /// Returns the arch found.
    pub(crate) fn arch(&mut self, n: &BmNode, f: &mut Fate) -> Option<String> {
        let arch = arch_for(self.opts, n.service_host.as_deref());
        if arch.is_none() {
            let a = self.d.raise(
                ConflictCode::MissingArch,
                Subject::Node { nova_bm_id: n.id },
                f.uuid.as_deref(),
                format!(
                    "no cpu_arch known for host {} (give --arch HOST=ARCH or --default-arch)",
                    n.service_host.as_deref().unwrap_or("-")
                ),
            );
            f.apply(ConflictCode::MissingArch, a);
        }
        arch
    }

    /// `invalid-size` (negative sizes, impossible terminal port: never written; in maintenance the
    /// node goes without them: `Fate::cleaned`), then `incomplete-properties` (sizes missing or zero).
    pub(crate) fn sizes(&mut self, n: &BmNode, f: &mut Fate) {
        let subject = Subject::Node { nova_bm_id: n.id };
        let bad_sizes = invalid_sizes(n);
        if !bad_sizes.is_empty() {
            let a = self.d.raise(
                ConflictCode::InvalidSize,
                subject.clone(),
                f.uuid.as_deref(),
                format!("impossible values: {}", bad_sizes.join(", ")),
            );
            f.apply(ConflictCode::InvalidSize, a);
            if a == Some(Action::Maintenance) {
                f.maintenance_reasons.push(format!(
                    "impossible values in nova_bm left out ({}): set them in Ironic",
                    bad_sizes.join(", ")
                ));
            }
            f.cleaned = true;
        }
        let missing_props = incomplete(n); // negative values are invalid-size's, not 'missing'
        if !missing_props.is_empty() {
            let a = self.d.raise(
                ConflictCode::IncompleteProperties,
                subject,
                f.uuid.as_deref(),
                format!("{} missing or zero", missing_props.join(", ")),
            );
            f.apply(ConflictCode::IncompleteProperties, a);
            if a == Some(Action::Maintenance) {
                f.maintenance_reasons.push(format!("properties incomplete in nova_bm ({})", missing_props.join(", ")));
            }
        }
    }
}
