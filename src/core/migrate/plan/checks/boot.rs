//! `unknown-boot`: a node that keeps its instance needs its next boot, learned from nova baremetal's
//! PXE config (the TFTP trees, read before the plan into `PlanOptions::boots`) and the kernel and
//! ramdisk beside it or Nova's `instances.kernel_id` / `ramdisk_id`. Free nodes are not checked.
//! See docs/conflicts.md and docs/mapping.md, "The next boot".

use std::sync::Arc;

use super::Checks;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::boot::{BootHow, NextBoot};
use crate::core::migrate::plan::fate::{Fate, NodeAction};
use crate::core::migrate::plan::rows::nova_instance;
use crate::core::migrate::plan::uuids::uuid_form;
use crate::core::source::model::BmNode;

impl Checks<'_> {
    /// The instance's next boot, or `unknown-boot` with why.
    pub(crate) fn boot(&mut self, n: &BmNode, f: &mut Fate) {
        if !f.keep_instance || f.action == NodeAction::Skip {
            return;
        }
        // an instance uuid that is no uuid is `inconsistent-state` already
        let Some(inst) = n.instance_uuid.as_deref().and_then(uuid_form) else { return };
        let inst = inst.to_ascii_lowercase();
        let learned = self.opts.boots.get(&inst).map_err(|p| p.to_string()).and_then(|found| {
            let nova = nova_instance(n, self.nova);
            let kernel = found.kernel.clone().or_else(|| nova.and_then(|i| i.kernel_id.clone()));
            let ramdisk = found.ramdisk.clone().or_else(|| nova.and_then(|i| i.ramdisk_id.clone()));
            let config = crate::core::text::visible_line(&found.config.display().to_string()).into_owned();
            match (kernel, ramdisk) {
                (Some(kernel), Some(ramdisk)) => Ok(NextBoot {
                    how: BootHow::Pxe,
                    kernel: Some(kernel),
                    ramdisk: Some(ramdisk),
                    root_uuid: Some(found.boot.root_uuid.clone()),
                    kernel_arguments: Some(found.boot.kernel_arguments()),
                    config: Some(config),
                    host: found.host.clone(),
                    reason: None,
                }),
                (k, r) => {
                    let missing = [(k.is_none(), "kernel"), (r.is_none(), "ramdisk")]
                        .iter()
                        .filter(|(m, _)| *m)
                        .map(|(_, w)| *w)
                        .collect::<Vec<_>>()
                        .join(" and ");
                    Err(format!(
                        "no {missing}: none beside {config}, and Nova's instances.{} not known (give --nova-db)",
                        if missing.contains(' ') {
                            "kernel_id/ramdisk_id are"
                        } else if k.is_none() {
                            "kernel_id is"
                        } else {
                            "ramdisk_id is"
                        }
                    ))
                }
            }
        });
        let why = match learned {
            Ok(b) => {
                f.boot = Some(Arc::new(b));
                return;
            }
            Err(why) => why,
        };
        let a = self.d.raise(
            ConflictCode::UnknownBoot,
            Subject::Node { nova_bm_id: n.id },
            f.uuid.as_deref(),
            format!("instance {inst}: next boot unknown: {why}"),
        );
        f.apply(ConflictCode::UnknownBoot, a);
        let unknown = |how| NextBoot {
            how,
            kernel: None,
            ramdisk: None,
            root_uuid: None,
            kernel_arguments: None,
            config: None,
            host: None,
            reason: Some(why.clone()),
        };
        match a {
            Some(Action::LocalBoot) => f.boot = Some(Arc::new(unknown(BootHow::LocalBoot))),
            Some(Action::Maintenance) => {
                f.maintenance_reasons
                    .push(format!("next boot unknown ({why}): give its PXE config or install a bootloader"));
                f.boot = Some(Arc::new(unknown(BootHow::Unknown)));
            }
            _ => {}
        }
    }
}
