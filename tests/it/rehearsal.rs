//! The upgrade rehearsed end to end: the commands of docs/upgrade-runbook.md as an operator runs them
//! (scripts/rehearse-upgrade.sh, one step at a time, in the runbook's order) on a cloud as nova
//! baremetal left it (common/rehearsal.rs), the real Ironic 39 behind the real Keystone: a load by SQL
//! (`--via db`) on the cloud **nova baremetal itself made** (Juno's Nova as its compute host: nodes
//! enrolled through its `os-baremetal-nodes` API, instances deployed by its PXE driver and Juno's
//! deploy helper, node 2's machine a QEMU VM that booted its instance before the window, one
//! instance stopped, one deleted, one node deleted; the nova.conf it ran with is the operator's) and,
//! at the same time on a cloud of its own built in SQL (the shapes its API cannot make: `deleted`
//! NULL, two old compute hosts), a load through Ironic's API (`--via api`). After each step the test
//! checks what it did, from the facts: Ironic's and Nova's rows, nova_bm's dump (never written), the
//! BMCs' own power and the power actions they were asked for, the openstack client's and
//! python-novaclient's answers (through Keystone, through `bm2ironic proxy`), the nova.conf `config`
//! wrote, Juno's Nova taking the instances over (runbook steps 7-9) and operating them through its
//! own API (9c: list, hypervisor stats, start, reboots, stop), the VM rebooted through Ironic booting
//! its instance from the conductor's PXE config (its console marker), the wizard's rehearsal in tmux
//! leaving nothing, rollback putting everything back, the audit log naming the run, and no password
//! in any output. Nothing of the script's own output is read.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::cli::read_logs;
use crate::common::netboot::{pxe_mac_name, repoint};
use crate::common::nova::{rows as nova_rows, table as nova_table};
use crate::common::proxy::start_proxy;
use crate::common::rehearsal::{mac, Cloud, Instance, Rehearsal, NEW_HOST};
use crate::common::tmux::Session;
use crate::common::READER_PASSWORD;

/// No power action.
const NONE: Vec<(i64, String)> = Vec::new();

/// A runtime of a thread's own (a load's steps block their thread while a command runs).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn the_upgrade_rehearsed_end_to_end_with_both_loads() {
    let t0 = Instant::now();
    let Some(r) = runtime().block_on(Rehearsal::stage()) else {
        return;
    };
    // the two loads share no server state (databases, Ironic, BMCs, region): each on a thread
    let r = Arc::new(r);
    let load = |via: &'static str| {
        let r = r.clone();
        std::thread::Builder::new()
            .name(format!("rehearsal::{via}"))
            .spawn(move || {
                runtime().block_on(async {
                    let c = rehearse(&r, via).await;
                    eprintln!("rehearsal: the {via} load done after {:?}", t0.elapsed());
                    if via == "db" {
                        wizard(&c).await;
                        eprintln!("rehearsal: the wizard done after {:?}", t0.elapsed());
                    }
                })
            })
            .unwrap()
    };
    let (db, api) = (load("db"), load("api"));
    for done in [db.join(), api.join()] {
        if let Err(panic) = done {
            std::panic::resume_unwind(panic);
        }
    }
    no_password_in_any_output(&r);
    eprintln!("rehearsal: both loads done after {:?}", t0.elapsed());
    let _ = std::fs::remove_dir_all(&r.work);
}

/// Every runbook step of one load, each checked.
async fn rehearse(r: &Rehearsal, via: &'static str) -> Cloud {
    let t0 = Instant::now();
    let lap = |what: &str| eprintln!("rehearsal: {via} load, {what} after {:.1?}", t0.elapsed());
    let c = Cloud::stage(r, via).await;
    lap("staged");
    let nova_bm = c.nova_bm.dump();
    let (flavors, hosts) = (flavors(&c).await, hosts(&c).await);
    let actions = c.power_actions().len();

    // 2. the empty Ironic database
    c.step(&["dbsync"]);
    assert_eq!(c.ironic_db.scalar_i64("SELECT COUNT(*) FROM alembic_version").await, 1, "{via}: no alembic version");
    // 3. the plan: nothing blocks, no nova-compute running
    c.step(&["plan"]);
    let plan: Value = serde_json::from_str(&c.output("plan.json")).unwrap();
    assert!(!holds(&plan, "nova-compute-running"), "{via}: the plan sees a running nova-compute: {plan}");
    // 4. the flavors name the new deploy images
    c.step(&["flavors"]);
    let specs = c.nova.rows("SELECT `key`, value FROM instance_type_extra_specs WHERE deleted = 0 AND `key` LIKE 'baremetal:deploy_%' ORDER BY 1").await;
    assert_eq!(
        specs,
        [["baremetal:deploy_kernel_id", r.kernel.as_str()], ["baremetal:deploy_ramdisk_id", r.ramdisk.as_str()]],
        "{via}"
    );

    // 5. the load: by SQL before Ironic starts, or through its API (6. Ironic started first)
    let api_ironic = if via == "api" { Some(c.start_ironic().await) } else { None };
    c.step(&["migrate"]);
    let live = c.live().count() as i64;
    assert_eq!(count(&c, "nodes").await, live, "{via}: Ironic's nodes");
    assert_eq!(count(&c, "ports").await, live, "{via}: Ironic's ports");
    assert!(c.nova_bm.dump() == nova_bm, "{via}: nova_bm changed; the source must only be read");
    let ironic = match api_ironic {
        Some(i) => i,
        None => c.start_ironic().await,
    };
    lap("Ironic up");

    // 6. the takeover: every node as its machine, read from its BMC; no power action
    c.step(&["takeover"]);
    for n in c.live() {
        let got = c.ironic_db.rows(&format!("SELECT provision_state, COALESCE(power_state, 'NULL'), COALESCE(instance_uuid, '-') FROM nodes WHERE uuid = '{}'", c.node_uuid(n.id))).await;
        let want = match n.instance {
            Instance::None => ["available".to_string(), format!("power {}", n.power), "-".into()],
            _ => ["active".to_string(), format!("power {}", n.power), c.instance_uuid(n.id)],
        };
        assert_eq!(got, [want], "{via}: node {} in Ironic", n.id);
        assert_eq!(c.bmc(n.id).must(&["chassis", "power", "status"]), format!("Chassis Power is {}", n.power));
    }
    assert_eq!(c.power_actions()[actions..].to_vec(), NONE, "{via}: the takeover reached a BMC");
    if via == "db" {
        next_reboot(r, &c);
        lap("the next reboot");
    }

    // 6. the openstack client through Keystone
    c.step(&["clients"]);
    clients_show_the_cloud(&c);

    // 8. os-baremetal-nodes answered from Ironic by the proxy: python-novaclient 7.1.2
    let clouds = c.clouds.display().to_string();
    let proxy = start_proxy(
        &["--auth", "keystone", "--ironic-token-mode", "service", "--os-cloud", "rehearsal"],
        &[("OS_CLIENT_CONFIG_FILE", &clouds)],
    )
    .await;
    let first = c.live().find(|n| n.instance == Instance::Running).unwrap().id;
    c.step_env(&["nova-list", &c.node_uuid(first)], &[("PROXY_URL", &proxy.base)]);
    let listed = c.output("nova-nodes.txt");
    for n in &c.nodes {
        let shown = listed.contains(&c.node_uuid(n.id));
        assert_eq!(shown, n.deleted != Some(true), "{via}: node {} in\n{listed}", n.id);
    }
    assert!(c.output("nova-interfaces.txt").contains(&mac(first)), "{via}: node {first}'s interface");
    drop(proxy);

    // 7. the nova.conf of the Ironic driver
    c.step(&["config"]);
    let conf = std::fs::read_to_string(&c.compute_conf).unwrap();
    for line in ["compute_driver = nova.virt.ironic.IronicDriver", &format!("host = {NEW_HOST}")] {
        assert!(conf.lines().any(|l| l == line), "{via}: no '{line}' in {}", c.compute_conf.display());
    }
    // the Keystone service user of a real compute host's nova.conf (SQL load) for [ironic], and the
    // warning that Juno logs its password with debug on (no_password_in_any_output)
    let written: Value = serde_json::from_str(&c.output("config.json")).unwrap();
    let pw = written["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|ch| ch["section"] == "ironic" && ch["option"] == "admin_password" && ch["action"] != "remove");
    let warned = written["warnings"].to_string().contains("writes it in clear into its log");
    assert_eq!((pw, warned), (via == "db", via == "db"), "{via}: [ironic] admin_password written, and warned of");
    // 8. the instances of the two old hosts to the new one
    let old: Vec<Vec<String>> = hosts.iter().map(|h| vec![h[0].clone(), h[1].clone()]).collect();
    let with: Vec<i64> = c.live().filter(|n| n.instance != Instance::None).map(|n| n.id).collect();
    let mut want: Vec<Vec<String>> = with.iter().map(|i| vec![c.instance_uuid(*i), c.old_host(*i).into()]).collect();
    want.sort();
    assert_eq!(old, want, "{via}: the instances' old hosts");
    c.step(&["hosts"]);
    let mut moved: Vec<Vec<String>> =
        with.iter().map(|i| vec![c.instance_uuid(*i), NEW_HOST.into(), c.node_uuid(*i)]).collect();
    moved.sort();
    assert_eq!(self::hosts(&c).await, moved, "{via}: the instances after hosts --apply");
    // 7-9. Juno's nova-compute with the Ironic driver takes the instances over
    nova_takes_over(r, &c).await;
    lap("nova-compute's takeover");

    // 5. verify
    c.step(&["verify"]);
    // getting back: the SQL load's Ironic is stopped first; the API load's after
    let actions = c.power_actions().len();
    if via == "db" {
        drop(ironic);
        c.step(&["rollback"]);
    } else {
        c.step(&["rollback"]);
        drop(ironic);
    }
    assert_eq!((count(&c, "nodes").await, count(&c, "ports").await), (0, 0), "{via}: Ironic after rollback");
    assert_eq!(self::flavors(&c).await, flavors, "{via}: the flavors after rollback");
    assert_eq!(self::hosts(&c).await, hosts, "{via}: the instances' host and node after rollback");
    assert_eq!(c.power_actions()[actions..].to_vec(), NONE, "{via}: the rollback reached a BMC");
    assert!(c.nova_bm.dump() == nova_bm, "{via}: nova_bm changed");
    // 10. the audit log holds the run
    let started: Value = serde_json::from_str(c.output("migrate.json").lines().next().unwrap_or_default()).unwrap();
    let run = started["run_id"].as_str().unwrap_or_else(|| panic!("{via}: no run id in {started}"));
    assert!(read_logs(&c.dir.join("audit")).contains(run), "{via}: the audit log does not name run {run}");
    c
}

/// Whether some string of `v` is `s`.
fn holds(v: &Value, s: &str) -> bool {
    match v {
        Value::String(x) => x == s,
        Value::Array(a) => a.iter().any(|x| holds(x, s)),
        Value::Object(o) => o.values().any(|x| holds(x, s)),
        _ => false,
    }
}

async fn count(c: &Cloud, table: &str) -> i64 {
    c.ironic_db.scalar_i64(&format!("SELECT COUNT(*) FROM {table}")).await
}

/// Every live flavor spec: (flavor, key, value).
async fn flavors(c: &Cloud) -> Vec<Vec<String>> {
    c.nova.rows("SELECT CAST(instance_type_id AS CHAR), `key`, value FROM instance_type_extra_specs WHERE deleted = 0 ORDER BY 1, 2").await
}

/// Every live instance: (uuid, host, node).
async fn hosts(c: &Cloud) -> Vec<Vec<String>> {
    c.nova.rows("SELECT uuid, host, node FROM instances WHERE deleted = 0 ORDER BY uuid").await
}

/// Waits until `done` holds, `secs` seconds at most.
fn wait(secs: u64, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    done()
}

/// Runbook step 9b: node 6's machine, its instance running from nova baremetal's config, rebooted through Ironic
/// once the network's TFTP root is the conductor's, boots its instance from the config the conductor
/// wrote at the takeover.
fn next_reboot(r: &Rehearsal, c: &Cloud) {
    let vm = c.vm_node;
    let node = c.node_uuid(vm);
    let tftp = c.dir.join("ironic/tftpboot");
    let (config, link) = (tftp.join(&node).join("config"), tftp.join("pxelinux.cfg").join(pxe_mac_name(&mac(vm))));
    let written = wait(30, || std::fs::metadata(&config).is_ok_and(|m| m.len() > 0) && link.exists());
    assert!(written, "the conductor wrote no PXE config and MAC link for node {vm}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert_eq!(text.lines().next(), Some("default boot_ramdisk"), "{text}");
    let append =
        text.split("label boot_ramdisk").nth(1).and_then(|b| b.lines().find_map(|l| l.trim().strip_prefix("append ")));
    let last_root = append.and_then(|a| a.split(' ').rfind(|w| w.starts_with("root=")));
    assert_eq!(last_root, Some(format!("root=UUID={}", r.root_uuid).as_str()), "{text}");
    assert_eq!(link.canonicalize().unwrap(), config.canonicalize().unwrap());
    // the instance ran meanwhile, deployed and booted by nova baremetal before the window
    let markers = || c.console().lines().filter(|l| l.contains(&r.marker)).map(String::from).collect::<Vec<_>>();
    assert!(wait(150, || !markers().is_empty()), "the instance never booted from nova's config:\n{}", c.console());
    // (nova baremetal's deploy: off, then on)
    let before = c.bmc(vm).power_actions().len();
    // the end of the window: the network's TFTP server is the conductor's; one reboot
    repoint(c.network_tftp.as_ref().expect("the SQL load's machine"), &tftp);
    c.step(&["reboot", &node]);
    // (the marker's line whole: the console is read while the machine writes it)
    let whole = || c.console().rsplit_once(r.marker.as_str()).is_some_and(|(_, after)| after.contains('\n'));
    assert!(wait(150, || markers().len() >= 2 && whole()), "node {vm} did not boot again:\n{}", c.console());
    let line = markers().pop().unwrap();
    let (ramdisk, root) = (format!("initrd={node}/ramdisk root=/dev/ram0 "), format!("root=UUID={} ro", r.root_uuid));
    let at = line.find(&ramdisk).unwrap_or_else(|| panic!("not booted from the conductor's config: {line}"));
    assert!(line[at..].contains(&root), "{line}");
    assert_eq!(c.bmc(vm).power_actions()[before..], ["power off", "power on"], "the reboot's power actions");
}

/// `openstack baremetal node list` and `port list`: every live node as its machine, every MAC.
fn clients_show_the_cloud(c: &Cloud) {
    let nodes: Vec<Value> = serde_json::from_str(&c.output("nodes.json")).unwrap();
    let ports: Vec<Value> = serde_json::from_str(&c.output("ports.json")).unwrap();
    let mut got: Vec<[Value; 4]> = nodes
        .iter()
        .map(|n| ["uuid", "provision_state", "power_state", "instance_uuid"].map(|k| n[k].clone()))
        .collect();
    got.sort_by_key(|n| n[0].to_string());
    let mut want: Vec<[Value; 4]> = c
        .live()
        .map(|n| {
            let inst = if n.instance == Instance::None { Value::Null } else { Value::from(c.instance_uuid(n.id)) };
            let state = if n.instance == Instance::None { "available" } else { "active" };
            [c.node_uuid(n.id).into(), state.into(), format!("power {}", n.power).into(), inst]
        })
        .collect();
    want.sort_by_key(|n| n[0].to_string());
    assert_eq!(got, want, "{}: openstack baremetal node list", c.via);
    let mut macs: Vec<&str> = ports.iter().filter_map(|p| p["address"].as_str()).collect();
    macs.sort();
    assert_eq!(macs, c.live().map(|n| mac(n.id)).collect::<Vec<_>>(), "{}: openstack baremetal port list", c.via);
}

/// Runbook steps 7-9: Juno's Nova (API, scheduler, conductor and the Ironic driver's nova-compute, a
/// Keystone token for Ironic) on the nova.conf `config` wrote: a compute_nodes row of the Ironic driver
/// per node, every instance as its machine, no power action; then node 6's machine switched off at its
/// BMC: Ironic reads it, Nova stops the instance. Then step 9c, through Nova's API (`smoke`).
async fn nova_takes_over(r: &Rehearsal, c: &Cloud) {
    let actions = c.power_actions().len();
    let nova = c.nova(r).await;
    let log = c.nova_log();
    let rows = "SELECT COUNT(DISTINCT hypervisor_hostname) FROM compute_nodes WHERE deleted = 0 AND hypervisor_type = 'ironic'";
    let deadline = Instant::now() + Duration::from_secs(120);
    let live = c.live().count() as i64;
    while c.nova.scalar_i64(rows).await != live {
        assert!(
            Instant::now() < deadline,
            "{}: nova-compute made no {live} compute_nodes rows ({})",
            c.via,
            log.display()
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(8)).await; // two power syncs
    for n in c.live().filter(|n| n.instance != Instance::None) {
        let want = if n.instance == Instance::Stopped { STOPPED } else { ACTIVE };
        assert_eq!(instance(c, n.id).await, want, "{}: instance of node {}", c.via, n.id);
    }
    assert_eq!(c.power_actions()[actions..].to_vec(), NONE, "{}: nova-compute's takeover reached a BMC", c.via);
    c.bmc(c.vm_node).must(&["power", "off"]);
    wait_instance(c, c.vm_node, STOPPED, "the machine switched off at its BMC").await;
    smoke(r, c).await;
    assert!(!std::fs::read_to_string(&log).unwrap().contains("Traceback"), "a traceback in {}", log.display());
    drop(nova);
    // the machine as it was, for the steps after (Nova is stopped: it will not switch it off again)
    c.bmc(c.vm_node).must(&["power", "on"]);
}

/// An instance active and running, or stopped, on the new host (`instance`).
const ACTIVE: &str = "active 1 - 0 ironic-compute";
const STOPPED: &str = "stopped 4 - 0 ironic-compute";

/// Waits (60 s at most) until instance `id` is `want` in Nova's database.
async fn wait_instance(c: &Cloud, id: i64, want: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while instance(c, id).await != want {
        assert!(Instant::now() < deadline, "{}: {what}: instance {id} is {}", c.via, instance(c, id).await);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Runbook step 9c, the commands the operator runs through Nova's API (`smoke`): `list` shows every
/// instance as its machine; `hypervisor-stats` counts the old baremetal hosts' compute_nodes rows too
/// until `service-delete` removes their services, then equals nova_bm's live nodes' sums; on the SQL
/// load (node 6's machine a VM) `start`, `reboot`, `reboot --hard` and `stop` of its instance: the
/// BMC told exactly the power actions, Nova's state following, and the VM booting its instance
/// again each time (its console marker).
async fn smoke(r: &Rehearsal, c: &Cloud) {
    let via = c.via;
    // as the runbook's admin: the instances are their tenants', not admin's
    c.step(&["smoke", "list", "--all-tenants"]);
    let listed: Vec<[String; 3]> =
        nova_rows(&c.output("smoke-list.txt")).into_iter().map(|r| [0, 2, 4].map(|i| r[i].clone())).collect();
    let mut want: Vec<[String; 3]> = c
        .live()
        .filter(|n| n.instance != Instance::None)
        .map(|n| {
            let (status, power) = if n.instance == Instance::Running && n.id != c.vm_node {
                ("ACTIVE", "Running")
            } else {
                ("SHUTOFF", "Shutdown")
            };
            [c.instance_uuid(n.id), status.into(), power.into()]
        })
        .collect();
    let mut sorted = listed.clone();
    sorted.sort();
    want.sort();
    assert_eq!(sorted, want, "{via}: nova list (ID, Status, Power State)");

    // the old hosts' services (their nova-computes stopped in step 3) and their compute_nodes rows
    let old = "SELECT CAST(id AS CHAR) FROM services WHERE deleted = 0 AND host LIKE 'bm-compute-%' AND `binary` = 'nova-compute' ORDER BY id";
    let old: Vec<String> = c.nova.rows(old).await.concat();
    assert_eq!(old.len(), c.old_hosts().len(), "{via}: the old baremetal hosts' nova-compute services");
    c.step(&["smoke", "hypervisor-stats"]);
    let before = nova_table(&c.output("smoke-hypervisor-stats.txt"));
    let both = (2 * c.live().count()).to_string();
    assert_eq!(before.get("count"), Some(&both), "{via}: the old hosts' rows and the new, a node each: {before:?}");
    c.step(&["smoke", "service-list", "--binary", "nova-compute"]);
    for id in &old {
        c.step(&["smoke", "service-delete", id]);
    }
    c.step(&["smoke", "hypervisor-stats"]);
    let stats = nova_table(&c.output("smoke-hypervisor-stats.txt"));
    // the totals are the migrated nodes' resources, read from nova_bm (what is used: the flavors)
    let sums = "SELECT CAST(COUNT(*) AS CHAR), CAST(SUM(cpus) AS CHAR), CAST(SUM(memory_mb) AS CHAR), CAST(SUM(local_gb) AS CHAR), CAST(SUM(instance_uuid IS NOT NULL) AS CHAR) FROM bm_nodes WHERE COALESCE(deleted, 0) = 0";
    let facts = c.nova_bm.rows(sums).await.concat();
    let keys = ["count", "vcpus", "memory_mb", "local_gb", "running_vms"];
    let got: Vec<String> = keys.iter().map(|k| stats.get(*k).cloned().unwrap_or_default()).collect();
    assert_eq!(got, facts, "{via}: nova hypervisor-stats {keys:?}, and nova_bm's live nodes");
    if via != "db" {
        return;
    }

    // node 6's instance, stopped above: start, both reboots, stop
    let i6 = c.instance_uuid(c.vm_node);
    let boots = || c.console().matches(r.marker.as_str()).count();
    let whole = || c.console().rsplit_once(r.marker.as_str()).is_some_and(|(_, after)| after.contains('\n'));
    for (args, state, told, boot) in [
        (vec!["start"], ACTIVE, vec!["power on"], true),
        (vec!["reboot"], ACTIVE, vec!["power off", "power on"], true),
        (vec!["reboot", "--hard"], ACTIVE, vec!["power off", "power on"], true),
        (vec!["stop"], STOPPED, vec!["power off"], false),
    ] {
        let what = format!("nova {}", args.join(" "));
        let (actions, booted) = (c.bmc(c.vm_node).power_actions().len(), boots());
        let t0 = Instant::now();
        c.step(&[&["smoke"], &args[..], &[&i6]].concat());
        wait_instance(c, c.vm_node, state, &what).await;
        assert_eq!(c.bmc(c.vm_node).power_actions()[actions..], told, "{what}: what the machine's BMC was told");
        if boot {
            let again = wait(150, || boots() > booted && whole());
            assert!(again, "{what}: the instance did not boot again:\n{}", c.console());
        }
        eprintln!("rehearsal: {what}: {:.1?}", t0.elapsed());
    }
    c.bmc(c.vm_node).wait_power("off");
}

/// An instance in Nova: "vm_state power_state task_state deleted host".
async fn instance(c: &Cloud, id: i64) -> String {
    let q = format!("SELECT CONCAT(vm_state, ' ', power_state, ' ', COALESCE(task_state, '-'), ' ', deleted, ' ', host) FROM instances WHERE uuid = '{}'", c.instance_uuid(id));
    c.nova.rows(&q).await.concat().concat()
}

/// Runbook step 0: the wizard's rehearsal in a real terminal (tmux) on the SQL load's files, rolled
/// back: it goes through every screen and leaves nothing in Ironic, nova_bm untouched.
async fn wizard(c: &Cloud) {
    let before = c.nova_bm.dump();
    // the script's environment on the command line: `env -u` (what it removes) first
    let (mut unset, mut set) = (String::new(), String::new());
    for (k, v) in c.script(&[]).get_envs() {
        match v {
            Some(v) => set.push_str(&format!(" {}='{}'", k.to_string_lossy(), v.to_string_lossy())),
            None => unset.push_str(&format!(" -u {}", k.to_string_lossy())),
        }
    }
    let mut cmd = format!("env -u NO_COLOR{unset} TERM=xterm-256color{set}");
    let script = crate::common::env::repo_file("scripts/rehearse-upgrade.sh");
    cmd.push_str(&format!(" bash {} wizard; echo EXIT=$?; sleep 600", script.display()));
    let s = Session::start("rehearsal", &cmd);
    // BM2_REHEARSAL_SHOTS=DIR keeps its screens as DIR/rehearsal-*.png (the README's)
    let shots = std::env::var_os("BM2_REHEARSAL_SHOTS").map(std::path::PathBuf::from);
    let ansi = c.dir.join("shots");
    let shot = |name: &str| {
        if shots.is_some() {
            std::fs::create_dir_all(&ansi).unwrap();
            std::fs::write(ansi.join(format!("{name}.ansi")), s.screen_ansi()).unwrap();
        }
    };
    s.wait_for("Connections and options");
    s.wait_for("nova_bm database");
    std::thread::sleep(Duration::from_secs(1));
    shot("1-connections");
    for (key, next, name) in [
        ("Enter", &*format!("nova_bm: {} nodes", c.nodes.len()), "2-inventory"),
        ("n", "all decided", "3-conflicts"),
        ("n", "REHEARSAL", "4-flavors"),
        ("n", "Press Enter to start the rehearsal", "5-confirm"),
        ("Enter", "rehearsal done, rolled back", "6-progress"),
        ("Enter", "Nothing stayed", "7-summary"),
    ] {
        s.keys(&[key]);
        s.wait_for_within(next, 60);
        shot(name);
    }
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0", "the wizard's exit status:\n{}", s.screen());
    assert_eq!(count(c, "nodes").await, 0, "the wizard's rehearsal left nodes in Ironic");
    assert!(c.nova_bm.dump() == before, "the wizard changed nova_bm");
    if let Some(dir) = shots {
        // Pillow in a venv of its own (BM2_SHOT_VENV), made once
        let venv = std::env::var("BM2_SHOT_VENV").unwrap_or("/tmp/bm2ironic-shot-venv".into());
        let py = format!("{venv}/bin/python");
        if !Path::new(&py).exists() {
            let made =
                std::process::Command::new("python3").args(["-m", "venv", &venv]).status().is_ok_and(|s| s.success())
                    && std::process::Command::new(format!("{venv}/bin/pip"))
                        .args(["install", "-q", "--disable-pip-version-check", "pillow"])
                        .status()
                        .is_ok_and(|s| s.success());
            assert!(made, "a venv with Pillow at {venv}");
        }
        let render = std::process::Command::new(py)
            .arg(crate::common::env::repo_file("scripts/ansi2png.py"))
            .args([ansi.as_os_str(), dir.as_os_str(), "rehearsal-".as_ref()])
            .status();
        assert!(render.is_ok_and(|s| s.success()), "scripts/ansi2png.py (Pillow in BM2_SHOT_VENV)");
    }
}

/// No password (the BMCs', the databases', Keystone's) in any output, report or audit log: only in
/// the config files that hold them, and the logs of the services that read those.
fn no_password_in_any_output(r: &Rehearsal) {
    let allowed = [
        "etc/",
        "ironic/ironic.conf",
        "ironic/ironic.log",
        "ironic/ironic.stderr",
        "nova-compute/nova.conf",
        // step 9c's openrc for Nova's API (Keystone's admin), as admin-openrc.sh
        "nova-compute/nova-api-rc.sh",
        "clouds.yaml",
        "admin-openrc.sh",
    ];
    let mut leaks = vec![];
    for via in ["db", "api"] {
        let base = r.work.join(via);
        for f in walk(&base) {
            let rel = f.strip_prefix(&base).unwrap().display().to_string();
            if allowed.iter().any(|a| rel.starts_with(a) || rel == *a) {
                continue;
            }
            let mut text = String::from_utf8_lossy(&std::fs::read(&f).unwrap_or_default()).into_owned();
            if rel.starts_with("nova-compute/nova.") {
                // Juno's own option dump at start (debug on): `[ironic] admin_password` is not secret
                // in 2014.2, which `config` warns of (the `config` step's check); nothing else
                text = text.lines().filter(|l| !l.contains("ironic.admin_password")).collect::<Vec<_>>().join("\n");
            }
            if [r.bmc_secret.as_str(), "adminpass", READER_PASSWORD].iter().any(|p| text.contains(p)) {
                leaks.push(f.display().to_string());
            }
        }
    }
    assert_eq!(leaks, Vec::<String>::new(), "a password in these files");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else if p.is_file() {
            out.push(p);
        }
    }
    out
}
