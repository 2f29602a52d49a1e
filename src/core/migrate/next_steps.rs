//! What is left to do in the maintenance window after a load, worked out from what really happened
//! (target kind, rehearsal or live, flavors applied, instances to move, the run id and the files it
//! used), in the runbook's order (docs/upgrade-runbook.md), each with a command to copy. The wizard's
//! summary shows it and keeps it as a checklist in the state directory (`checklist`).

use crate::core::ironic::target::TargetKind;

/// What the load and the steps before it did.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    pub kind: Option<TargetKind>,
    pub rehearsal: bool,
    /// the load committed (a LIVE SQL load), or its nodes were created through the API
    pub committed: bool,
    /// why the load failed, when it did
    pub failed: Option<String>,
    pub run_id: Option<String>,
    /// through Ironic's API (the nodes are adopted by a running Ironic) rather than its database
    pub through_api: bool,
    /// where the decisions were saved (`w`), for `migrate --resolutions`
    pub resolutions: Option<String>,
    pub flavors: Flavors,
    /// instances the migrated nodes hold: they must name the Ironic compute host first
    pub instances: usize,
    /// the Ironic API as given (for `verify --takeover`)
    pub ironic_url: Option<String>,
    /// the logs followed (name, path)
    pub conductor_log: Option<String>,
    pub compute_log: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Flavors {
    /// applied before the load, as this change set
    Applied(String),
    /// a change was planned and not applied
    Pending,
    /// the flavors need no change
    NoChange,
    /// no Nova database given: not looked at
    #[default]
    Unknown,
}

/// One step: what to do, the command to copy (if one does it), and whether it is done already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub what: String,
    pub command: Option<String>,
    pub done: bool,
}

fn step(what: impl Into<String>, command: Option<String>) -> Step {
    Step { what: what.into(), command, done: false }
}

/// The steps left, in runbook order.
pub fn next_steps(f: &RunFacts) -> Vec<Step> {
    if let Some(why) = &f.failed {
        return vec![
            step(format!("The load failed and was rolled back ({why}): fix the cause, then run it again."), None),
            step("Nothing changed in Ironic: the baremetal nova-computes may be restarted to end the window.", None),
        ];
    }
    let resolutions = f.resolutions.as_deref().unwrap_or("decisions.toml");
    if f.rehearsal {
        let mut out = Vec::new();
        if f.resolutions.is_none() {
            out.push(step("Save the decisions (w) to replay them in the window.", None));
        }
        out.push(step(
            "Nothing stayed: this was a rehearsal. In the window, load for real with the same decisions:",
            Some(format!("bm2ironic migrate --resolutions {resolutions} --report run.md")),
        ));
        if f.flavors == Flavors::Pending {
            out.push(step(
                "Then the flavors (bm2ironic flavors shows the change):",
                Some("bm2ironic flavors --apply".into()),
            ));
        }
        out.push(step(
            "Rehearse the runbook on staging first, step by step:",
            Some("scripts/rehearse-upgrade.sh STEP".into()),
        ));
        return out;
    }
    if !f.committed {
        return vec![step("Nothing was written (nothing to load): no step follows.", None)];
    }
    let run = f.run_id.as_deref().unwrap_or("RUN");
    let juno = f.kind == Some(TargetKind::Juno);
    let url = f.ironic_url.as_deref().unwrap_or("http://IRONIC-API:6385");
    let conductor = f.conductor_log.as_deref().unwrap_or("/var/log/ironic/ironic-conductor.log");
    let compute = f.compute_log.as_deref().unwrap_or("/var/log/nova/nova-compute.log");
    let mut out = Vec::new();
    match &f.flavors {
        Flavors::Applied(set) => {
            out.push(Step { what: format!("Flavors changed (change set {set})."), command: None, done: true })
        }
        Flavors::Pending => {
            out.push(step("Change the flavors (skipped in the wizard):", Some("bm2ironic flavors --apply".into())))
        }
        Flavors::NoChange => {}
        Flavors::Unknown => out.push(step(
            "Change the flavors (no Nova database was given here):",
            Some("bm2ironic --nova-db URL flavors --apply".into()),
        )),
    }
    out.push(Step { what: format!("Loaded: run {run}."), command: None, done: true });
    let target = if juno { "juno" } else { "modern" };
    if !f.through_api {
        out.push(step(
            "Before Ironic starts, install the ironic.conf `config` writes (force_power_state_during_sync = false: nothing switched off is switched on again):",
            Some(format!("bm2ironic --nova-conf /etc/nova/nova.conf config --target {target} --write-ironic /root/ironic.conf.new")),
        ));
        out.push(step(
            "Start ironic-conductor and ironic-api; watch the takeover, node by node:",
            Some(format!("bm2ironic verify --takeover --run {run} --ironic-url {url} --log ironic={conductor}")),
        ));
    } else {
        out.push(step(
            "Watch the takeover, node by node:",
            Some(format!("bm2ironic verify --takeover --run {run} --ironic-url {url} --log ironic={conductor}")),
        ));
    }
    if juno {
        out.push(step(
            "Juno, once every active node is taken over: put the instances' PXE configs back to their boot (LP#1421370):",
            Some("bm2ironic --ironic-db URL juno-boot --pxe-tftp-root /tftpboot --apply".into()),
        ));
    }
    if f.instances > 0 {
        out.push(step(
            format!(
                "FIRST move the {} instance(s) to the Ironic compute host (nova-compute destroys, at start, the instances of other hosts):",
                f.instances
            ),
            Some("bm2ironic hosts --to ironic-compute --apply".into()),
        ));
    }
    let nova_conf = if juno {
        "nova.conf for the Ironic driver (ClusteredComputeManager, IronicHostManager and the Exact* filters); restart nova-scheduler:"
    } else {
        "nova.conf for the Ironic driver ([ironic] with keystoneauth); restart nova-scheduler:"
    };
    out.push(step(
        nova_conf,
        Some(format!(
            "bm2ironic --nova-conf /etc/nova/nova.conf config --target {target} --host ironic-compute --write-nova /root/nova.conf.ironic"
        )),
    ));
    out.push(step(
        if juno {
            "Start nova-compute with it; watch every node's resources reported:"
        } else {
            "Start nova-compute with it, then `nova-manage cell_v2 discover_hosts`; watch every node's resources:"
        },
        Some(format!("bm2ironic watch --log nova-compute={compute} --for 10m --all")),
    ));
    out.push(step(
        "Serve the old os-baremetal-nodes API from Ironic (scripts calling `nova baremetal-node-list`):",
        Some(format!("bm2ironic proxy --ironic-url {url}")),
    ));
    out.push(step("Reboot one migrated instance and watch it come back (runbook 9b).", None));
    out.push(step(
        "Check that Nova runs the cloud (runbook 9c): delete the old baremetal hosts' nova-compute services (their compute_nodes rows count in Nova's hypervisor stats until then), then nova list --all-tenants (as admin: the instances are the tenants'), hypervisor-stats, and a stop, start and reboot of one instance:",
        Some("nova service-list --binary nova-compute; nova service-delete <id of each old host>".into()),
    ));
    out.push(step(
        "Undo if needed (before Ironic changes the nodes; with --nova-db the flavors and hosts too):",
        Some(format!("bm2ironic rollback --run {run}")),
    ));
    out
}

/// The steps as a Markdown checklist, kept in the state directory beside the run.
pub fn checklist(f: &RunFacts, steps: &[Step]) -> String {
    let mut o = format!("# bm2ironic: next steps of run {}\n\n", f.run_id.as_deref().unwrap_or("(none)"));
    for s in steps {
        o.push_str(&format!("- [{}] {}\n", if s.done { "x" } else { " " }, crate::core::text::visible_line(&s.what)));
        if let Some(c) = &s.command {
            o.push_str(&format!("      {}\n", crate::core::text::visible_line(c)));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(kind: TargetKind) -> RunFacts {
        RunFacts {
            kind: Some(kind),
            committed: true,
            run_id: Some("run-7".into()),
            resolutions: Some("/srv/d.toml".into()),
            flavors: Flavors::Pending,
            instances: 11,
            ..Default::default()
        }
    }

    fn text(steps: &[Step]) -> String {
        steps.iter().map(|s| format!("{} {}\n", s.what, s.command.clone().unwrap_or_default())).collect()
    }

    #[test]
    fn a_live_juno_run_lists_the_runbook_in_order_with_its_run() {
        let t = text(&next_steps(&live(TargetKind::Juno)));
        let order = [
            "flavors --apply",
            "install the ironic.conf",
            "verify --takeover --run run-7",
            "juno-boot",
            "hosts --to",
            "ClusteredComputeManager",
            "watch --log nova-compute",
            "proxy",
            "service-delete",
            "rollback --run run-7",
        ];
        let mut at = 0;
        for o in order {
            let i = t[at..].find(o).unwrap_or_else(|| panic!("{o} missing or out of order:\n{t}"));
            at += i;
        }
        assert!(t.contains("11 instance(s)"), "{t}");
    }

    #[test]
    fn a_modern_run_has_no_juno_step_and_no_clustered_manager() {
        let t = text(&next_steps(&live(TargetKind::Modern)));
        assert!(!t.contains("juno-boot") && !t.contains("ClusteredComputeManager"), "{t}");
        assert!(t.contains("discover_hosts") && t.contains("--target modern"), "{t}");
    }

    #[test]
    fn a_rehearsal_says_nothing_stayed_and_names_the_saved_decisions() {
        let f = RunFacts { rehearsal: true, ..live(TargetKind::Juno) };
        let t = text(&next_steps(&f));
        assert!(t.contains("Nothing stayed") && t.contains("--resolutions /srv/d.toml"), "{t}");
        assert!(!t.contains("rollback") && !t.contains("Start ironic"), "{t}");
    }

    #[test]
    fn applied_flavors_are_done_and_instances_none_skips_hosts() {
        let f = RunFacts { flavors: Flavors::Applied("cs-1".into()), instances: 0, ..live(TargetKind::Modern) };
        let steps = next_steps(&f);
        assert!(steps[0].done && steps[0].what.contains("cs-1"));
        assert!(!text(&steps).contains("hosts --to"));
        let list = checklist(&f, &steps);
        assert!(list.contains("- [x] Flavors changed") && list.contains("- [ ] "), "{list}");
    }
}
