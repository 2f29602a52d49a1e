//! `bm2ironic config`'s computation, pure: the existing nova.conf (and ironic.conf) and the
//! operator's choices in, every change and the new files' text out.

use crate::core::config_gen::ironic::changes as ironic_changes;
use crate::core::config_gen::model::{ConfFile, ConfGenError, ConfInputs, ConfPlan};
use crate::core::config_gen::nova::changes as nova_changes;
use crate::core::config_gen::render::render;
use crate::core::ironic::target::TargetKind;

/// Every change both files need for `inp.target`.
pub fn compute(inp: &ConfInputs) -> Result<ConfPlan, ConfGenError> {
    let mut warnings = Vec::new();
    let mut changes = nova_changes(inp, &mut warnings)?.changes;
    changes.extend(ironic_changes(inp, &mut warnings).changes);
    let next_steps = match inp.target {
        TargetKind::Juno => vec![
            "install the nova.conf on every nova-compute and nova-scheduler host; nova-compute needs the ironic 2014.2 package importable (ClusteredComputeManager)".into(),
            "several old baremetal compute hosts: bm2ironic hosts --to HOST --apply moves their instances to the one host nova-compute runs as".into(),
            "restart nova-scheduler, then nova-compute; bm2ironic watch --log nova-compute=... --all".into(),
        ],
        TargetKind::Modern => vec![
            "install the nova.conf on the nova-compute host(s) that run the Ironic driver; restart nova-compute and nova-scheduler".into(),
            "nova-manage cell_v2 discover_hosts --verbose".into(),
            "several old baremetal compute hosts: bm2ironic hosts --to HOST --apply moves their instances to the new host".into(),
        ],
    };
    Ok(ConfPlan { target: inp.target, changes, warnings, next_steps })
}

/// The whole new text of `file`.
pub fn file_text(plan: &ConfPlan, inp: &ConfInputs, file: ConfFile, original: &str) -> String {
    let kind = match plan.target {
        TargetKind::Juno => "Juno (2014.2)",
        TargetKind::Modern => "modern",
    };
    let (header, drop): (String, &[&str]) = match file {
        ConfFile::Nova => (
            format!("nova.conf for {kind} Nova with the Ironic driver, written by bm2ironic config\nfrom the baremetal nova-compute's nova.conf; `bm2ironic config` without --write-nova lists each change and why"),
            &["baremetal"],
        ),
        ConfFile::Ironic => (
            format!("ironic.conf for {kind} Ironic, written by bm2ironic config from nova.conf{}", if inp.ironic.is_some() { " and the given ironic.conf" } else { "" }),
            &[],
        ),
    };
    render(original, &plan.of(file), drop, &header)
}
