//! The before-world deployed by nova baremetal itself, then the window on it (#45, parts 1 and 4;
//! docs/juno.md, "nova baremetal itself").
//!
//! Before: Juno's control plane as nova baremetal's compute host (common/baremetal.rs: BareMetalDriver,
//! the PXE driver, the IPMI power manager through ipmitool, nova_bm on MariaDB by Juno's own db sync),
//! a real Glance holding the deploy kernel and ramdisk (scripts/bootvm.sh's kernel and
//! `deploy-ramdisk`) and the instance image (its kernel and ramdisk the machine's own), a flavor whose
//! `baremetal:deploy_*` name them, three nodes made with Juno's `nova baremetal-node-create` (and a
//! fourth, deleted with `nova baremetal-node-delete`). Nodes 1 and 2 are QEMU machines behind fake
//! BMCs on 127.0.45.1-2:623, node 3's machine a BMC only (127.0.45.3), whose deploy ramdisk's one
//! request the test sends. `nova boot` puts an instance on each (`--availability-zone
//! nova:HOST:NODE`), and
//! nova baremetal deploys them: it fetches the images from Glance into its TFTP root, writes the PXE
//! config and the MAC links, powers the machine on by IPMI; the machine PXE-boots the deploy kernel and
//! ramdisk from nova baremetal's tree (QEMU's TFTP server, which maps nova's absolute paths onto its
//! root), the ramdisk POSTs its deployment id, key, address and iqn to Juno's own
//! `nova-baremetal-deploy-helper` (scripts/juno-deploy-helper.py), which checks the key, sets
//! DEPLOYING, runs Juno's `deploy()` and `switch_pxe_config`, sets DEPLOYDONE; nova baremetal makes the
//! instance ACTIVE; the ramdisk reboots and the machine boots the instance through nova baremetal's
//! `label boot` (its console marker, with the root file system's uuid). Then `nova stop` of instance
//! 2: its machine is powered off by IPMI; `nova delete` of instance 3: nova baremetal tears node 3
//! down (the free node of the window).
//!
//! **The stub**: the deploy helper's disk write (iSCSI discovery and login, partitioning, dd, mkswap:
//! this host's kernel has no iSCSI initiator) writes nothing and returns the uuid of the root file
//! system already on the machine's disk (scripts/bootvm.sh's disk.img); its notify (a connect to the
//! guest's 10.0.2.x, which the host never dials) is not sent: the ramdisk reboots once its own PXE
//! config says `default boot`. Everything else is Juno's code.
//!
//! The window, on that: nova baremetal's nova-compute stops; `bm2ironic plan` (it names only the
//! nova-compute whose heartbeat is seconds old, and the deleted node); `flavors --apply` and
//! `migrate --via db` into Juno's Ironic, reading the root uuid from the PXE configs nova baremetal
//! wrote, nova_bm left as it was; Juno's conductor takes the
//! nodes over (each power state read from its BMC, no power action); `bm2ironic juno-boot --apply`
//! (each instance's config `default boot`, its root uuid); the network's TFTP root repointed at the
//! conductor's; Juno's Nova with the Ironic driver (the nova.conf `bm2ironic config` writes): `nova
//! list` as nova baremetal left it, its hypervisor stats, `nova reboot` of instance 1 and `nova start`
//! of instance 2 boot each machine's instance again (a new console marker each), now from the
//! conductor's PXE config; `bm2ironic proxy` answers every node as nova baremetal's API did.
//!
//! Mutations that fail it: the tool's PXE parser wanting a final newline (Juno writes none: "Err
//! NoBootLabel" on the first config); the stub returning another root uuid (the machine never boots
//! its instance: switch_pxe_config wrote that uuid); the fixture's instance nodes without a deploy
//! key, `OldInstance` without `kernel_id`, the deployment id our builder writes (the comparisons
//! list them).

mod against;
use against::{deployed_shapes, instance_rows, mac, old_instances, the_proxy, the_resources, the_tree, BMCS, FLAVOR};

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use crate::common::baremetal::{nova, raw, BaremetalHost};
use crate::common::bmc::{Bmc, BmcOptions};
use crate::common::deploys::{console, machine, view, wait_marker, wait_status, Deployer, APPEND};
use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{dbsync, juno_nova_venv, juno_venv, keystone_v2, wait_for, IMAGE, KERNEL, RAMDISK};
use crate::common::netboot::repoint;
use crate::common::nova::{rows, table, NovaPlane, HOST};
use crate::common::{bm, server_env, Backend, TestDb, IRONIC_VENV, MYSQL_ADMIN};
use reqwest::Method;

use super::{differences, nova_bm_rows};

/// The fixture's deliberate difference (docs/mapping.md 7): its deleted node was updated once, as a
/// node a deploy touched has been; nova baremetal's API leaves NULL on a node nothing updated (its
/// delete does not touch `updated_at`).
const DELIBERATE: [&str; 2] = ["fixture: node 4 updated_at=set", "juno:    node 4 updated_at=NULL"];

/// Node `id`'s machine: a QEMU VM behind its BMC (common/deploys.rs).
fn vm(venv: &Path, boot: &Path, work: &Path, net: &Path, id: i64) -> Bmc {
    machine(venv, boot, work, net, (id, BMCS[id as usize - 1], &mac(id)), &format!("bmc-pass-{id}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn nova_baremetal_deploys_then_the_window() {
    let Some(venv) = juno_venv() else { return };
    let Some(_) = juno_nova_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let Some(boot) = server_env("BM2IRONIC_TEST_BOOT_DIR").map(PathBuf::from) else { return };
    let Some(ks) = keystone_v2() else { return };
    server_env(MYSQL_ADMIN).expect("MariaDB for nova_bm");
    let t0 = Instant::now();
    let lap = |what: &str| eprintln!("juno_baremetal::deployed: {what} after {:.1?}", t0.elapsed());
    let read = |f: &str| std::fs::read_to_string(boot.join(f)).unwrap().trim().to_string();
    let root_uuid = read("root-uuid");
    let marker = format!("{} root={root_uuid}", read("marker"));
    assert!(boot.join("deploy-ramdisk").exists(), "scripts/bootvm.sh builds deploy-ramdisk");

    // Glance (the deploy kernel and ramdisk, the instance image with its kernel and ramdisk), nova
    // baremetal's compute host (its deploy helper's port in the PXE configs it writes), the helper
    let Some(mut w) = Deployer::start(ks, None, &boot, &root_uuid, "").await else { return };
    let glance_at = format!("127.0.0.1:{}", w.glance.port);
    let tftp = w.host.tftp.path().to_path_buf();
    lap("nova baremetal's control plane up");

    // the machines, and the network's TFTP root: nova baremetal's tree as QEMU serves it
    let work = tempfile::tempdir().unwrap().keep();
    let net = work.join("net");
    view(&work.join("nova-view"), &tftp, &boot);
    std::os::unix::fs::symlink(work.join("nova-view"), &net).unwrap();
    let m1 = vm(&ironic_venv, &boot, &work, &net, 1);
    let m2 = vm(&ironic_venv, &boot, &work, &net, 2);
    // node 3's machine: a BMC only (its instance is deleted before the window; the test plays its
    // deploy ramdisk's one request, below: two TCG boots less)
    let m3 = Bmc::start(BmcOptions::new(&ironic_venv, "bmc-pass-3").at(BMCS[2], 623));

    // the operator's enrolment and flavor, with Juno's `nova`
    let host = &w.host;
    let p = &host.plane;
    for id in 1..=3i64 {
        let pw = format!("bmc-pass-{id}");
        let pm = ["--pm_address", BMCS[id as usize - 1], "--pm_user", "admin", "--pm_password", &pw];
        nova(p, &[&["baremetal-node-create"], &pm[..], &[HOST, "8", "16384", "40", &mac(id)]].concat());
    }
    // a fourth, enrolled by mistake and deleted through the API (soft-deleted, its NIC gone)
    let pm = ["--pm_address", "127.0.45.4", "--pm_user", "admin", "--pm_password", "bmc-pass-4"];
    nova(p, &[&["baremetal-node-create"], &pm[..], &[HOST, "8", "16384", "40", &mac(4)]].concat());
    nova(p, &["baremetal-node-delete", "4"]);
    nova(p, &["flavor-create", FLAVOR, "auto", "16384", "40", "8"]);
    let kernel = format!("baremetal:deploy_kernel_id={KERNEL}");
    let ramdisk = format!("baremetal:deploy_ramdisk_id={RAMDISK}");
    nova(p, &["flavor-key", FLAVOR, "set", "cpu_arch=x86_64", &kernel, &ramdisk]);
    let uuids: Vec<String> =
        host.nova_bm.rows("SELECT uuid FROM bm_nodes WHERE deleted = 0 ORDER BY id").await.concat();
    let nodes = format!(
        "SELECT CASE WHEN COUNT(*) = 3 THEN 1 ELSE 0 END FROM compute_nodes WHERE deleted = 0 AND hypervisor_hostname IN ('{}')",
        uuids.join("', '")
    );
    wait_for(&host.nova, &nodes, 60, "nova baremetal's compute_nodes", &p.log()).await;

    // nova boot: nova baremetal deploys instance N onto node N, the three at once
    for id in [1, 2, 3] {
        let zone = format!("nova:{HOST}:{}", uuids[id - 1]);
        nova(
            p,
            &["boot", "--flavor", FLAVOR, "--image", IMAGE, "--availability-zone", &zone, &format!("bm-instance-{id}")],
        );
    }
    // node 3's deploy ramdisk's POST, as the VMs' ramdisk sends it (scripts/bootvm.sh)
    w.post(3).await;
    let active = [("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1")];
    for id in [1, 2, 3] {
        let took = wait_status(p, &format!("bm-instance-{id}"), &active, 900).await;
        lap(&format!("instance {id} ACTIVE (waited {took:.1?})"));
    }
    for id in [1, 2] {
        let vm = work.join(format!("vm{id}"));
        wait_marker(&vm, &marker, 1, 300, &format!("node {id}'s machine after nova baremetal's deploy")).await;
        let c = console(&vm);
        assert!(c.contains("bm2ironic-deploy-ramdisk: deployment"), "the deploy ramdisk ran:\n{c}");
    }
    lap("both machines booted their instance");
    let helper_log = w.helper_log();
    for id in [1, 2, 3] {
        assert!(helper_log.contains(&format!("deployment to node {id} done")), "the helper's log:\n{helper_log}");
    }
    for (id, m) in [(1, &m1), (2, &m2), (3, &m3)] {
        assert_eq!(
            m.power_actions().last().map(String::as_str),
            Some("power on"),
            "node {id}: {:?}",
            m.power_actions()
        );
    }
    // nova delete of instance 3: nova baremetal tears node 3 down (its machine off, its PXE files
    // and the instance's fields gone, `task_state` deleted): a free node again
    nova(p, &["delete", "bm-instance-3"]);
    let torn = "SELECT CASE WHEN COUNT(*) = 1 THEN 1 ELSE 0 END FROM bm_nodes WHERE id = 3 AND task_state = 'deleted' AND instance_uuid IS NULL";
    wait_for(&host.nova_bm, torn, 120, "nova baremetal's teardown of node 3", &p.log()).await;
    m3.wait_power("off");

    // nova stop of instance 2: its machine powered off by IPMI
    nova(p, &["stop", "bm-instance-2"]);
    wait_status(p, "bm-instance-2", &[("status", "SHUTOFF"), ("OS-EXT-STS:task_state", "-")], 120).await;
    m2.wait_power("off");
    let before = rows(&nova(p, &["list"]));
    the_resources(&host.nova, &uuids, &p.log()).await;
    the_tree(&tftp, &host.nova_bm, &root_uuid, &w.append()).await;
    // nova baremetal's own API, the proxy's oracle: every node's show by its integer id, and the list
    let base = format!("http://127.0.0.1:{}", p.port);
    let old_list = raw(&base, &p.keystone, Method::GET, "", None).await;
    let mut old_shows = Vec::new();
    for id in 1..=3 {
        old_shows.push(raw(&base, &p.keystone, Method::GET, &format!("/{id}"), None).await);
    }
    // the fixture against what nova baremetal wrote (issue part 2): nova_bm's rows, Nova's instances
    let instances_path = p.dir.join("state/instances");
    let shapes = deployed_shapes(host, &tftp, &instances_path).await;
    let ours = TestDb::with_fixture(Backend::MySql, "bmdours", &shapes).await.unwrap();
    let d = differences(&nova_bm_rows(&ours).await, &nova_bm_rows(&host.nova_bm).await);
    assert_eq!(d, DELIBERATE, "our fixture's instance nodes against the rows nova baremetal's deploy wrote");
    let old = old_instances(host).await;
    let old_uuids: Vec<String> =
        host.nova.rows("SELECT uuid FROM instances WHERE deleted = 0 ORDER BY id").await.concat();
    let d = differences(&instance_rows(&old).await, &instance_rows(&host.nova).await);
    let deliberate: Vec<String> = [
        "fixture: {} architecture=x86_64",
        "fixture: {} os_type=linux",
        "juno:    {} architecture=NULL",
        "juno:    {} os_type=NULL",
    ]
    .iter()
    .flat_map(|f| old_uuids.iter().map(move |u| f.replace("{}", &format!("instance {u}"))))
    .collect::<std::collections::BTreeSet<_>>()
    .into_iter()
    .collect();
    let mut d = d;
    d.sort();
    assert_eq!(
        d, deliberate,
        "OldInstance against the instances nova baremetal made (the image's properties differ, deliberately)"
    );
    let bm_rows = host
        .nova_bm
        .rows("SELECT CAST(id AS CHAR), COALESCE(instance_uuid, '-'), COALESCE(task_state, '-'), COALESCE(pxe_config_path, '-') FROM bm_nodes ORDER BY id")
        .await;
    eprintln!("nova_bm after nova baremetal's deploys: {bm_rows:?}");
    lap("the before-world made");
    w.stop_helper();

    // ---- the window: nova baremetal's nova-compute stops
    let Deployer { host, glance, .. } = w;
    let BaremetalHost { plane, nova_bm, nova: nova_db, tftp: _keep_tftp } = host;
    drop(plane);
    let tgt = dbsync(&venv, Backend::Sqlite, "bmdtgt").await;
    let tree = tftp.to_str().unwrap();
    let images = ["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"];
    let out = bm(["plan", "--json", "--tftp-root", tree])
        .args(images)
        .source(&nova_bm)
        .nova(Some(&nova_db))
        .target(&tgt)
        .run();
    let plan: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("plan: {e}: {}", out.text()));
    let mut named: Vec<(String, String)> = plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["code"].as_str().unwrap().to_string(), c["subject"].to_string()))
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            ("deleted-node".to_string(), "{\"node\":{\"nova_bm_id\":4}}".to_string()),
            ("nova-compute-running".to_string(), format!("{{\"host\":{{\"host\":\"{HOST}\"}}}}"))
        ],
        "the plan of the cloud nova baremetal deployed: {}",
        out.text()
    );
    let run = |a: &[&str], more: &[&str]| bm(a).args(more).source(&nova_bm).nova(Some(&nova_db)).target(&tgt).run();
    let source = nova_bm.dump();
    let out = run(&["flavors", "--apply", "--yes"], &images[..4]);
    assert!(out.success(), "flavors: {}", out.text());
    let out = run(
        &["migrate", "--via", "db", "--yes", "--resolve", "nova-compute-running=ignore", "--tftp-root", tree],
        &images,
    );
    assert!(out.success(), "migrate: {}", out.text());
    assert!(nova_bm.dump() == source, "nova_bm changed: the source must only be read");
    lap("migrated");

    // Juno's conductor takes the nodes over: each power state from its BMC, no power action
    let Some(token_port) = keystone_v2() else { return };
    let juno = start_ironic(IronicOptions {
        force_power_sync: Some(false),
        pxe_append: Some(APPEND.into()),
        keystone_v2_port: Some(token_port),
        ..IronicOptions::juno(&venv, &tgt.admin_url, Release::JunoAllInOne { glance_port: glance.port })
    })
    .await;
    wait_for(&tgt, "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM nodes WHERE conductor_affinity IS NOT NULL AND power_state IS NOT NULL", 60, "Juno's takeover", &juno.log_path()).await;
    // (Juno's free state is NOSTATE, NULL)
    let powers = tgt
        .rows("SELECT uuid, COALESCE(power_state, 'NULL'), COALESCE(provision_state, 'NULL') FROM nodes ORDER BY uuid")
        .await;
    // node 3, torn down: free (Juno's NOSTATE)
    let mut want: Vec<Vec<String>> = [(1, "power on", "active"), (2, "power off", "active"), (3, "power off", "NULL")]
        .iter()
        .map(|(i, p, s)| vec![uuids[i - 1].clone(), p.to_string(), s.to_string()])
        .collect();
    want.sort();
    assert_eq!(powers, want, "Juno's takeover: each node's power read from its machine");
    let actions = [m1.power_actions().len(), m2.power_actions().len(), m3.power_actions().len()];

    // the next boot: juno-boot puts each instance's `default boot` back, with its root
    let jtftp = juno.dir.join("tftpboot");
    let out = bm(["--tftp-root", tree, "juno-boot", "--apply", "--pxe-tftp-root"])
        .arg(&jtftp)
        .source(&nova_bm)
        .nova(Some(&nova_db))
        .target(&tgt)
        .run();
    assert!(out.success(), "juno-boot: {}", out.text());
    for id in [1, 2] {
        let cfg = std::fs::read_to_string(jtftp.join(&uuids[id - 1]).join("config")).unwrap();
        assert!(cfg.starts_with("default boot\n") && cfg.contains(&format!("root=UUID={root_uuid} ro")), "{cfg}");
    }
    view(&work.join("juno-view"), &jtftp, &boot);
    repoint(&net, &work.join("juno-view"));

    // Juno's Nova with the Ironic driver runs the cloud
    let plane = NovaPlane::start(&nova_db, &juno.base, &glance_at, &uuids, token_port).await;
    lap("Juno's Nova (Ironic driver) up");
    the_proxy(&juno.base, token_port, &old_list, &old_shows).await;
    let after = rows(&plane.must(&["list", "--all-tenants"]));
    let summary = |l: &[Vec<String>]| l.iter().map(|r| [r[1].clone(), r[2].clone(), r[4].clone()]).collect::<Vec<_>>();
    assert_eq!(summary(&after), summary(&before), "nova list, before and after the window");
    assert_eq!(
        summary(&after),
        [
            ["bm-instance-1".to_string(), "ACTIVE".into(), "Running".into()],
            ["bm-instance-2".to_string(), "SHUTOFF".into(), "Shutdown".into()]
        ]
    );
    let now = [m1.power_actions().len(), m2.power_actions().len(), m3.power_actions().len()];
    assert_eq!(now, actions, "no power action at the takeover");
    // Juno's resource tracker counts the migrated nodes and the two instances
    let stats = table(&plane.must(&["hypervisor-stats"]));
    let want = [("count", "3"), ("vcpus", "24"), ("memory_mb", "49152"), ("local_gb", "120"), ("running_vms", "2")];
    for (k, v) in want {
        assert_eq!(stats.get(k).map(String::as_str), Some(v), "hypervisor-stats {k}: {stats:?}");
    }

    // the next boots: from the conductor's config
    plane.must(&["reboot", "bm-instance-1"]);
    wait_marker(&work.join("vm1"), &marker, 2, 300, "nova reboot of instance 1").await;
    plane.must(&["start", "bm-instance-2"]);
    wait_marker(&work.join("vm2"), &marker, 2, 300, "nova start of instance 2").await;
    plane.wait_show(&uuid_of(&after, "bm-instance-2"), &[("status", "ACTIVE")], 120, "instance 2 started").await;
    plane.wait_show(&uuid_of(&after, "bm-instance-1"), &[("status", "ACTIVE")], 120, "instance 1 rebooted").await;
    // what each machine's BMC was told after the takeover: a reboot (off, on) and a start (on)
    let since = |m: &Bmc, n: usize| m.power_actions()[n..].to_vec();
    assert_eq!(since(&m1, actions[0]), ["power off", "power on"], "nova reboot: node 1's BMC");
    assert_eq!(since(&m2, actions[1]), ["power on"], "nova start: node 2's BMC");
    lap("both instances booted again after the window");
}

/// The id of the instance named `name` in a `nova list` table.
fn uuid_of(list: &[Vec<String>], name: &str) -> String {
    list.iter().find(|r| r[1] == name).map(|r| r[0].clone()).unwrap()
}
