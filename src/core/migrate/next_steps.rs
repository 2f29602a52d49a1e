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
    /// the decisions file written (`w`) or read at start, for `migrate --resolutions`
    pub resolutions: Option<String>,
    /// decisions made and not saved: where `w` (on the summary too) writes them
    pub unsaved_to: Option<String>,
    pub flavors: Flavors,
    /// instances `hosts` moves: they must name the Ironic compute host first
    pub instances: usize,
    /// the Ironic API as given (for `verify --takeover`, `config --write-ironic`, `proxy`)
    pub ironic_url: Option<String>,
    /// the logs followed (name, path)
    pub conductor_log: Option<String>,
    pub compute_log: Option<String>,
    /// the plan's options as flags, each one word (shell-quoted): deploy images, arch, resource class
    pub plan_args: Vec<String>,
    /// the flags `flavors` needs: `--resource-class` (modern) or the deploy images (Juno/Kilo)
    pub flavor_args: Vec<String>,
    /// the baremetal nova-compute's nova.conf (`--nova-conf`), when given
    pub nova_conf: Option<String>,
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

/// `v` as one shell word: as it is when it is plain, else in single quotes.
pub fn sh_word(v: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !v.is_empty() && v.chars().all(plain) {
        return v.to_string();
    }
    format!("'{}'", v.replace('\'', r"'\''"))
}

/// The plan's options as the flags `plan` and `migrate` take (each value one shell word), the TFTP
/// trees read included.
pub fn plan_args(o: &crate::core::migrate::plan::PlanOptions) -> Vec<String> {
    let mut out = Vec::new();
    let mut flag = |name: &str, v: &Option<String>| {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            out.push(format!("--{name} {}", sh_word(v)));
        }
    };
    flag("deploy-kernel", &o.deploy_kernel);
    flag("deploy-ramdisk", &o.deploy_ramdisk);
    flag("default-arch", &o.default_arch);
    flag("resource-class", &o.resource_class);
    for (host, arch) in &o.arch_by_host {
        out.push(format!("--arch {}", sh_word(&format!("{host}={arch}"))));
    }
    // the TFTP trees the plan read each instance's next boot from (without them: unknown-boot)
    for t in &o.tftp_roots {
        let dir = t.dir.display().to_string();
        let v = match &t.host {
            Some(h) => format!("{h}={dir}"),
            None => dir,
        };
        out.push(format!("--tftp-root {}", sh_word(&v)));
    }
    out
}

/// The flags `flavors` needs for `kind`: the resource class (modern Nova), the deploy images (Juno).
pub fn flavor_args(kind: Option<TargetKind>, o: &crate::core::migrate::plan::PlanOptions) -> Vec<String> {
    let wanted: &[&str] =
        if kind == Some(TargetKind::Juno) { &["--deploy-kernel", "--deploy-ramdisk"] } else { &["--resource-class"] };
    let have: Vec<String> = plan_args(o).into_iter().filter(|a| wanted.iter().any(|w| a.starts_with(w))).collect();
    if have.is_empty() {
        // the refusal names what is missing; the placeholder says it before
        return if kind == Some(TargetKind::Juno) {
            vec!["--deploy-kernel REF --deploy-ramdisk REF".into()]
        } else {
            vec!["--resource-class NAME".into()]
        };
    }
    have
}

fn command(parts: &[&str], args: &[String]) -> String {
    let mut words: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    words.extend(args.iter().cloned());
    words.join(" ")
}

/// The steps left, in runbook order.
pub fn next_steps(f: &RunFacts) -> Vec<Step> {
    if let Some(why) = &f.failed {
        return vec![
            step(format!("The load failed and was rolled back ({why}): fix the cause, then run it again."), None),
            step("Nothing changed in Ironic: the baremetal nova-computes may be restarted to end the window.", None),
        ];
    }
    if f.rehearsal {
        return rehearsal_steps(f);
    }
    if !f.committed {
        return vec![step("Nothing was written (nothing to load): no step follows.", None)];
    }
    live_steps(f)
}

/// After a rehearsal: save the decisions, then the real load and the flavors, with every flag.
fn rehearsal_steps(f: &RunFacts) -> Vec<Step> {
    let mut out = Vec::new();
    let file = f.unsaved_to.as_deref().or(f.resolutions.as_deref());
    if let Some(to) = &f.unsaved_to {
        out.push(step(
            format!("Save the decisions (w, on this screen too) to {to}, to replay them in the window."),
            None,
        ));
    }
    let mut args: Vec<String> = file.map(|r| vec![format!("--resolutions {}", sh_word(r))]).unwrap_or_default();
    args.extend(f.plan_args.iter().cloned());
    args.push("--report run.md".into());
    out.push(step(
        "Nothing stayed: this was a rehearsal. In the window, load for real with the same decisions and options:",
        Some(command(&["bm2ironic", "migrate"], &args)),
    ));
    if f.flavors == Flavors::Pending {
        out.push(step(
            "Then the flavors (bm2ironic flavors shows the change):",
            Some(command(&["bm2ironic", "flavors", "--apply"], &f.flavor_args)),
        ));
    }
    out
}

/// After a load that stayed: the runbook from the flavors to the undo, with this run's values.
fn live_steps(f: &RunFacts) -> Vec<Step> {
    let run = f.run_id.as_deref().unwrap_or("RUN");
    let juno = f.kind == Some(TargetKind::Juno);
    let url = f.ironic_url.as_deref().map(sh_word);
    let conductor = sh_word(f.conductor_log.as_deref().unwrap_or("/var/log/ironic/ironic-conductor.log"));
    let compute = sh_word(f.compute_log.as_deref().unwrap_or("/var/log/nova/nova-compute.log"));
    let nova_conf = sh_word(f.nova_conf.as_deref().unwrap_or("/etc/nova/nova.conf"));
    let mut out = Vec::new();
    match &f.flavors {
        Flavors::Applied(set) => {
            out.push(Step { what: format!("Flavors changed (change set {set})."), command: None, done: true })
        }
        Flavors::Pending => out.push(step(
            "Change the flavors (skipped in the wizard):",
            Some(command(&["bm2ironic", "flavors", "--apply"], &f.flavor_args)),
        )),
        Flavors::NoChange => {}
        Flavors::Unknown => out.push(step(
            "Change the flavors (no Nova database was given here: --nova-db or BM2IRONIC_NOVA_DB, and --nova-api-db for modern Nova):",
            Some(command(&["bm2ironic", "flavors", "--apply"], &f.flavor_args)),
        )),
    }
    out.push(Step { what: format!("Loaded: run {run}."), command: None, done: true });
    let target = if juno { "juno" } else { "modern" };
    // modern ironic.conf and nova.conf name the Ironic API. When none was given, a word that no
    // command takes for a URL: pasted as is it is refused, naming it, and nothing is written (a
    // placeholder that looked like a URL was written into the new config files)
    let api = url.clone().unwrap_or_else(|| NO_API.into());
    let url_arg = if juno { String::new() } else { format!(" --ironic-url {api}") };
    if url.is_none() && !juno {
        out.push(step(format!("Below, put the Ironic API's URL in place of {NO_API} (none was given here)."), None));
    }
    if !f.through_api {
        out.push(step(
            "Before Ironic starts, install the ironic.conf `config` writes (force_power_state_during_sync = false: nothing switched off is switched on again):",
            Some(format!("bm2ironic --nova-conf {nova_conf} config --target {target}{url_arg} --write-ironic ironic.conf.new")),
        ));
    }
    out.push(takeover_step(f, run, url.as_deref(), &conductor));
    if juno {
        out.push(step(
            "Juno, once every active node is taken over: put the instances' PXE configs back to their boot (LP#1421370):",
            Some("bm2ironic juno-boot --pxe-tftp-root /tftpboot --apply".into()),
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
    out.extend(nova_steps(juno, target, &nova_conf, &url_arg, &compute, &api));
    out.push(step(
        "Undo if needed (before Ironic changes the nodes; with --nova-db the flavors and hosts too):",
        Some(format!("bm2ironic rollback --run {run}")),
    ));
    out
}

/// Watching the takeover: through the API when it is known, else the database's check of the run.
fn takeover_step(f: &RunFacts, run: &str, url: Option<&str>, conductor: &str) -> Step {
    let start = if f.through_api { "" } else { "Start ironic-conductor and ironic-api; " };
    match url {
        Some(url) => step(
            format!("{start}watch the takeover, node by node:"),
            Some(format!("bm2ironic verify --takeover --run {run} --ironic-url {url} --log ironic={conductor}")),
        ),
        None => step(
            format!("{start}check the run, then watch the takeover with --takeover --ironic-url URL (no Ironic API was given here):"),
            Some(format!("bm2ironic verify --run {run}")),
        ),
    }
}

/// nova.conf for the Ironic driver, nova-compute's start, the old API, and the checks by hand.
/// What the next steps say for the Ironic API's URL when the wizard was given none: the operator
/// puts the URL in its place.
pub const NO_API: &str = "IRONIC_API_URL";

fn nova_steps(juno: bool, target: &str, nova_conf: &str, url_arg: &str, compute: &str, api: &str) -> Vec<Step> {
    let what = if juno {
        "nova.conf for the Ironic driver (ClusteredComputeManager, IronicHostManager and the Exact* filters); restart nova-scheduler:"
    } else {
        "nova.conf for the Ironic driver ([ironic] with keystoneauth); restart nova-scheduler:"
    };
    vec![
        step(
            what,
            Some(format!(
                "bm2ironic --nova-conf {nova_conf} config --target {target}{url_arg} --host ironic-compute --write-nova nova.conf.ironic"
            )),
        ),
        step(
            if juno {
                "Start nova-compute with it; watch every node's resources reported:"
            } else {
                "Start nova-compute with it, then `nova-manage cell_v2 discover_hosts`; watch every node's resources:"
            },
            Some(format!("bm2ironic watch --log nova-compute={compute} --for 10m --all")),
        ),
        step(
            "Serve the old os-baremetal-nodes API from Ironic (scripts calling `nova baremetal-node-list`):",
            Some(format!("bm2ironic proxy --ironic-url {api}")),
        ),
        step("Reboot one migrated instance and watch it come back (runbook 9b).", None),
        step(
            "Check that Nova runs the cloud (runbook 9c): delete the old baremetal hosts' nova-compute services (`nova service-list --binary nova-compute`, then `nova service-delete ID` of each old host: their compute_nodes rows count in Nova's hypervisor stats until then), then nova list --all-tenants (as admin), hypervisor-stats, and a stop, start and reboot of one instance.",
            None,
        ),
    ]
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
            ironic_url: Some("http://ironic:6385".into()),
            plan_args: vec!["--deploy-kernel k".into(), "--deploy-ramdisk r".into(), "--resource-class bm".into()],
            flavor_args: vec!["--resource-class bm".into()],
            ..Default::default()
        }
    }

    /// Every command is the binary's own (no script of the source tree, no `nova` client), and the
    /// ones that refused when pasted (#48 item 2) carry the flags they need: `flavors --apply` its
    /// resource class, a modern `config` the Ironic API, `migrate` the deploy images and the file
    /// the wizard wrote.
    #[test]
    fn every_command_is_the_binarys_own_with_the_flags_it_needs() {
        let rehearsal = RunFacts {
            rehearsal: true,
            resolutions: None,
            unsaved_to: Some("/w/r.toml".into()),
            ..live(TargetKind::Modern)
        };
        for f in [live(TargetKind::Modern), live(TargetKind::Juno), rehearsal] {
            for s in next_steps(&f) {
                let Some(c) = &s.command else { continue };
                assert!(c.starts_with("bm2ironic "), "{c}");
                if c.contains("flavors --apply") {
                    assert!(c.contains("--resource-class bm"), "{c}");
                }
                if c.contains("--target modern") {
                    assert!(c.contains("--ironic-url http://ironic:6385"), "{c}");
                }
                if c.contains(" migrate ") {
                    assert!(c.contains("--resolutions /w/r.toml --deploy-kernel k --deploy-ramdisk r"), "{c}");
                }
            }
        }
        let t = text(&next_steps(&RunFacts {
            rehearsal: true,
            unsaved_to: Some("/w/r.toml".into()),
            ..live(TargetKind::Modern)
        }));
        assert!(t.contains("Save the decisions (w, on this screen too) to /w/r.toml"), "{t}");
        assert!(!t.contains("scripts/"), "{t}");
        assert_eq!(sh_word("a b'c"), r"'a b'\''c'");
        assert_eq!(sh_word("file:///x/y.kernel"), "file:///x/y.kernel");
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
