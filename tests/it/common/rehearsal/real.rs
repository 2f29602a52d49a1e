//! The SQL load's cloud as nova baremetal itself made it (#45; common/deploys.rs): Juno's Nova as
//! nova baremetal's compute host on this load's Nova database (MariaDB, Juno's schema) and a nova_bm
//! made by Juno's `nova-baremetal-manage db sync`; the six nodes of `REAL` enrolled with Juno's `nova
//! baremetal-node-create` (the sixth then deleted with `baremetal-node-delete`), BMCs on 127.0.3.x;
//! `nova boot` of an instance onto nodes 2-5, deployed by nova baremetal: node 2's machine a QEMU VM
//! that PXE-boots nova baremetal's deploy kernel and ramdisk, whose ramdisk POSTs to Juno's deploy
//! helper, then boots its instance (its console marker); nodes 3-5 BMCs only, whose ramdisk's one
//! request the test sends. Then `nova stop` of node 4's instance, `nova delete` of node 5's (nova
//! baremetal's teardown: a free node again), nova baremetal's control plane stopped and its
//! nova-compute's heartbeat let age past its nova.conf's `service_down_time` (30 s, not Nova's
//! default) until Juno's `nova-manage service list` counts it down (runbook step 3). The nova.conf it
//! ran with is the operator's NOVA_CONF (a copy in etc/).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::world::{bmc_addr, mac, Instance, Node, Rehearsal};
use crate::common::baremetal::{nova, BaremetalHost};
use crate::common::bmc::{Bmc, BmcOptions};
use crate::common::cli::bm;
use crate::common::db::TestDb;
use crate::common::deploys::{machine, view, wait_marker, wait_status, Deployer, FLAVOR};
use crate::common::glance::Glance;
use crate::common::juno::{wait_for, IMAGE, JUNO_NOVA_VENV, KERNEL, RAMDISK};
use crate::common::nova::HOST;

/// The nodes nova baremetal made, by nova_bm id (the order its API made them in).
pub const REAL: [Node; 6] = [
    // enrolled, never used
    Node { id: 1, power: "off", instance: Instance::None, deleted: Some(false) },
    // the QEMU VM: its instance deployed and booted by nova baremetal
    Node { id: 2, power: "on", instance: Instance::Running, deleted: Some(false) },
    Node { id: 3, power: "on", instance: Instance::Running, deleted: Some(false) },
    // `nova stop`: off, and must stay off
    Node { id: 4, power: "off", instance: Instance::Stopped, deleted: Some(false) },
    // `nova delete`: torn down by nova baremetal, free again
    Node { id: 5, power: "off", instance: Instance::None, deleted: Some(false) },
    // `nova baremetal-node-delete`
    Node { id: 6, power: "off", instance: Instance::None, deleted: Some(true) },
];

/// The node whose machine is the VM.
pub const REAL_VM: i64 = 2;

/// nova baremetal's host reports every 5 s, and Nova counts a service down after this many seconds
/// (its nova.conf's `service_down_time`, not Nova's default 60): the tool must read it from there.
const DOWN_AFTER: u64 = 30;

/// What the cloud nova baremetal made leaves the load: its databases, the nova.conf it ran with, its
/// TFTP tree, the machines' BMCs, each node's uuid and instance's uuid by nova_bm id, the network's
/// TFTP root (a symlink to a view of nova baremetal's tree) and what must outlive the stage (Glance:
/// Ironic reads the instances' images from it).
pub struct Made {
    pub nova_bm: TestDb,
    pub nova: TestDb,
    pub nova_conf: PathBuf,
    pub tftp: PathBuf,
    pub bmcs: Vec<(i64, Bmc)>,
    pub uuids: BTreeMap<i64, (String, Option<String>)>,
    pub network_tftp: PathBuf,
    pub glance: Glance,
    pub keep: tempfile::TempDir,
}

/// Builds it in `dir` (the load's outputs) on the Nova database `nova` (Juno's schema, empty).
pub async fn stage(r: &Rehearsal, dir: &Path, nova_db: TestDb) -> Made {
    let t0 = std::time::Instant::now();
    let lap = |what: &str| eprintln!("rehearsal: db load, nova baremetal: {what} after {:.1?}", t0.elapsed());
    let beats = format!("report_interval = 5\nservice_down_time = {DOWN_AFTER}\n");
    let d = Deployer::start(r.keystone_v2, Some(nova_db), &r.boot, &r.root_uuid, &beats)
        .await
        .expect("Glance (checked by Rehearsal::stage)");
    let tftp = d.host.tftp.path().to_path_buf();
    let p = &d.host.plane;
    lap("its control plane up");

    // the machines: node 2's a VM netbooting nova baremetal's tree (a view of it: its configs name
    // files by absolute path), the others BMCs only; all off
    let network_tftp = dir.join("network-tftp");
    view(&dir.join("nova-view"), &tftp, &r.boot);
    std::os::unix::fs::symlink(dir.join("nova-view"), &network_tftp).unwrap();
    let password = |id: i64| format!("{}-{id}", r.bmc_secret);
    let mut bmcs = Vec::new();
    for n in REAL.iter().filter(|n| n.deleted != Some(true)) {
        let (addr, pw) = (bmc_addr(3, n.id), password(n.id));
        let bmc = if n.id == REAL_VM {
            machine(&r.venv, &r.boot, &r.work, &network_tftp, (n.id, &addr, &mac(n.id)), &pw)
        } else {
            let mut o = BmcOptions::new(&r.venv, &pw).at(&addr, 623);
            o.stderr = Some(dir.join(format!("bmc{}.stderr", n.id)));
            Bmc::start(o)
        };
        bmcs.push((n.id, bmc));
    }

    // the operator's enrolment and flavor, with Juno's `nova`
    for n in REAL {
        let (addr, pw) = (bmc_addr(3, n.id), password(n.id));
        let pm = ["--pm_address", &addr, "--pm_user", "admin", "--pm_password", &pw];
        nova(p, &[&["baremetal-node-create"], &pm[..], &[HOST, "8", "16384", "40", &mac(n.id)]].concat());
    }
    for n in REAL.iter().filter(|n| n.deleted == Some(true)) {
        nova(p, &["baremetal-node-delete", &n.id.to_string()]);
    }
    nova(p, &["flavor-create", FLAVOR, "auto", "16384", "40", "8"]);
    let (kernel, ramdisk) =
        (format!("baremetal:deploy_kernel_id={KERNEL}"), format!("baremetal:deploy_ramdisk_id={RAMDISK}"));
    nova(p, &["flavor-key", FLAVOR, "set", "cpu_arch=x86_64", &kernel, &ramdisk]);
    let node_uuid = by_id(&d.host.nova_bm, "uuid").await;
    let live: Vec<&String> = REAL.iter().filter(|n| n.deleted != Some(true)).map(|n| &node_uuid[&n.id]).collect();
    let rows = format!(
        "SELECT CASE WHEN COUNT(*) = {} THEN 1 ELSE 0 END FROM compute_nodes WHERE deleted = 0 AND hypervisor_hostname IN ('{}')",
        live.len(),
        live.iter().map(|u| u.as_str()).collect::<Vec<_>>().join("', '")
    );
    wait_for(&d.host.nova, &rows, 90, "nova baremetal's compute_nodes", &p.log()).await;

    // nova boot onto nodes 2-5 at once; the BMC-only machines' deploy requests; all ACTIVE
    let deployed = [2, 3, 4, 5];
    for id in deployed {
        let zone = format!("nova:{HOST}:{}", node_uuid[&id]);
        nova(
            p,
            &["boot", "--flavor", FLAVOR, "--image", IMAGE, "--availability-zone", &zone, &format!("bm-instance-{id}")],
        );
    }
    for id in [3, 4, 5] {
        d.post(id).await;
    }
    let active = [("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1")];
    for id in deployed {
        wait_status(p, &format!("bm-instance-{id}"), &active, 900).await;
    }
    let vm = r.work.join(format!("vm{REAL_VM}"));
    wait_marker(&vm, &r.marker, 1, 300, "node 2's machine after nova baremetal's deploy").await;
    lap("four instances ACTIVE, node 2's booted");
    let helper = d.helper_log();
    for id in deployed {
        assert!(helper.contains(&format!("deployment to node {id} done")), "the deploy helper's log:\n{helper}");
    }
    // nova delete: nova baremetal tears node 5 down; nova stop: node 4's machine off
    nova(p, &["delete", "bm-instance-5"]);
    let torn = "SELECT CASE WHEN COUNT(*) = 1 THEN 1 ELSE 0 END FROM bm_nodes WHERE id = 5 AND task_state = 'deleted' AND instance_uuid IS NULL";
    wait_for(&d.host.nova_bm, torn, 120, "nova baremetal's teardown of node 5", &p.log()).await;
    nova(p, &["stop", "bm-instance-4"]);
    wait_status(p, "bm-instance-4", &[("status", "SHUTOFF"), ("OS-EXT-STS:task_state", "-")], 120).await;
    for (id, b) in &bmcs {
        b.wait_power(REAL[*id as usize - 1].power);
    }
    let instances = by_id(&d.host.nova_bm, "instance_uuid").await;
    let uuids = node_uuid.iter().map(|(id, u)| (*id, (u.clone(), instances.get(id).cloned()))).collect();

    // runbook step 3: nova baremetal's nova-compute stopped, until Nova says it is down
    let conf = p.dir.join("nova.conf");
    let nova_conf = dir.join("etc/nova.conf");
    std::fs::copy(&conf, &nova_conf).unwrap();
    let Deployer { host, glance, .. } = d;
    let BaremetalHost { plane, nova_bm, nova, tftp: keep } = host;
    drop(plane);
    until_nova_counts_it_down(&nova_conf).await;
    lap("its nova-compute down");
    Made { nova_bm, nova, nova_conf, tftp, bmcs, uuids, network_tftp, glance, keep }
}

/// The column `col` of every bm_nodes row where it is set, by nova_bm id.
async fn by_id(nova_bm: &TestDb, col: &str) -> BTreeMap<i64, String> {
    let q = format!("SELECT CAST(id AS CHAR), {col} FROM bm_nodes WHERE {col} IS NOT NULL");
    nova_bm.rows(&q).await.into_iter().map(|r| (r[0].parse().unwrap(), r[1].clone())).collect()
}

/// Runbook step 3 after nova baremetal's services stopped: Juno's own `nova-manage service list`
/// (Nova's servicegroup code on `conf`) still counts the nova-compute up, and so does the tool
/// (`hosts` refuses, naming the nova.conf's `service_down_time`); then the wait until Nova counts it
/// down. The plan right after must agree (rehearsal.rs: no `nova-compute-running`).
async fn until_nova_counts_it_down(conf: &Path) {
    let manage = PathBuf::from(std::env::var(JUNO_NOVA_VENV).expect("the Juno Nova venv")).join("bin/nova-manage");
    let state = || {
        let out = std::process::Command::new(&manage)
            .arg("--config-file")
            .arg(conf)
            .args(["service", "list"])
            .output()
            .expect("Juno's nova-manage");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text.lines().find(|l| l.starts_with("nova-compute ")).map(str::to_string);
        line.unwrap_or_else(|| {
            panic!("nova-manage service list: no nova-compute\n{text}\n{}", String::from_utf8_lossy(&out.stderr))
        })
    };
    let first = state();
    assert!(first.contains(":-)"), "Juno's Nova counts the nova-compute down at once: {first}");
    let out = bm(["hosts", "--to", "ironic-compute", "--nova-conf"]).arg(conf).run();
    assert_eq!(out.code, 3, "hosts while Nova counts nova-compute up ({first}): {}", out.text());
    let said = out.text();
    let why = format!("service_down_time = {DOWN_AFTER} in {}", conf.display());
    assert!(said.contains("sent a heartbeat") && said.contains(&why), "hosts names Nova's own figure: {said}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(DOWN_AFTER + 60);
    loop {
        let now = state();
        if now.contains("XXX") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "Juno's Nova still counts the nova-compute up: {now}");
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}
