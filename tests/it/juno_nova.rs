//! After the window, Nova runs the cloud (#29): the REAL Juno Nova control plane (openstack/nova
//! 2014.2: nova-api, nova-conductor, nova-scheduler with `IronicHostManager` and the Exact* filters,
//! nova-compute with the Ironic driver and `ClusteredComputeManager`; one process, `juno.sh nova-all`)
//! on the nova.conf `bm2ironic config --target juno` writes, over the real Juno Ironic 2014.2 (API and
//! conductor) that took over what bm2ironic migrated, operated through Juno's own `nova` command
//! (python-novaclient 2.20.0). One test, several steps, so that the services start once.
//!
//! Checked, each against what nova_bm held (not against what Ironic says, which a wrong migration
//! would make agree with itself):
//! - `nova list`: the migrated instances, instance 3 ACTIVE/Running, instance 6 SHUTOFF/Shutdown;
//! - `nova hypervisor-stats`: one hypervisor per migrated node, its vcpus, memory_mb and local_gb
//!   the sums of nova_bm's nodes' cpus, memory_mb and local_gb (node 6 differs from the others); the
//!   used ones the two instances' flavor (Juno's resource tracker counts flavors, not nodes);
//! - `nova stop` / `nova start` of instance 3: the machine's BMC is told `power off` / `power on`,
//!   Ironic's node follows, Nova ends SHUTOFF / ACTIVE;
//! - `nova reboot` and `nova reboot --hard`: the BMC is told to power the machine off and on again
//!   (Juno's driver maps both to Ironic's `reboot`), Nova ends ACTIVE;
//! - `nova delete` of instance 6: Ironic tears the node down (no instance, provision state NOSTATE,
//!   its PXE config and MAC links removed), Nova's instance is gone, the other one untouched.
//!
//! MOCKED: Glance and Keystone v2.0's token call (scripts/fakeglance.py), as in juno_takeover.rs and
//! for the same reason: Juno's conductor fetches the images at the takeover and asks Keystone v2.0
//! for its admin token first; the Keystone of the tests (30.0.0) has no v2.0. The machines are fake
//! BMCs (scripts/fakebmc.py), power states only.

use std::path::PathBuf;
use std::time::Instant;

use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{
    dbsync, fake_glance, juno_nova_venv, juno_venv, small_cloud, small_cloud_machines, wait_for, KERNEL, RAMDISK,
};
use crate::common::nova::{instance_uuid, juno_nova_db, migrate, node_uuid, rows, table, NovaPlane};
use crate::common::ports::port;
use crate::common::{server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::source::model::BmNode;

/// The BMC addresses of this test (port 623: Juno's ipmitool driver has no port setting).
const BMCS: [&str; 3] = ["127.0.26.21", "127.0.26.22", "127.0.26.23"];

/// Node `id`'s power state in Ironic's database.
async fn node_power(tgt: &TestDb, id: i64) -> String {
    tgt.rows(&format!("SELECT COALESCE(power_state, 'NULL') FROM nodes WHERE uuid = '{}'", node_uuid(id)))
        .await
        .remove(0)
        .remove(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn juno_nova_runs_the_migrated_cloud() {
    let Some(venv) = juno_venv() else { return };
    let Some(_nova_venv) = juno_nova_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let t0 = Instant::now();
    // nodes 1 (free), 3 and 6 (instances); node 6 smaller, so that the sums say whose resources count
    let mut cloud = small_cloud(&BMCS);
    let n6 = cloud.nodes.iter_mut().find(|n| n.id == 6).unwrap();
    (n6.cpus, n6.memory_mb, n6.local_gb) = (Some(4), Some(12288), Some(250));
    let src = TestDb::with_fixture(Backend::Sqlite, "jnsrc", &cloud).await.unwrap();
    let nova = juno_nova_db().await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jntgt").await;
    let tree = tempfile::tempdir().unwrap();
    cloud.write_tftp_tree(tree.path()).unwrap();
    migrate(&src, &nova, &tgt, &["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK], tree.path()).await;
    let bmcs = small_cloud_machines(&ironic_venv, &BMCS);
    let images = tempfile::tempdir().unwrap();
    let glance_port = port();
    let _glance = fake_glance(images.path(), glance_port).await;
    // as `bm2ironic config` writes it: a machine found off stays off
    let juno = start_ironic(IronicOptions {
        force_power_sync: Some(false),
        ..IronicOptions::juno(&venv, &tgt.admin_url, Release::JunoAllInOne { glance_port })
    })
    .await;
    wait_for(&tgt, "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM nodes WHERE conductor_affinity IS NOT NULL AND power_state IS NOT NULL", 45, "Juno's takeover", &juno.log_path()).await;
    let nodes = [1, 3, 6].map(node_uuid);
    let plane = NovaPlane::start(&nova, &juno.base, &format!("127.0.0.1:{glance_port}"), &nodes).await;
    eprintln!("Nova's control plane up {:?} after the start", t0.elapsed());
    let (i3, i6) = (instance_uuid(3), instance_uuid(6));

    // nova list: the migrated instances, as nova baremetal left them
    plane.wait_show(&i3, &[("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1")], 30, "instance 3").await;
    let listed = rows(&plane.must(&["list"]));
    let summary: Vec<[&str; 4]> =
        listed.iter().map(|r| [r[0].as_str(), r[2].as_str(), r[3].as_str(), r[4].as_str()]).collect();
    assert_eq!(
        summary,
        [[i3.as_str(), "ACTIVE", "-", "Running"], [i6.as_str(), "SHUTOFF", "-", "Shutdown"]],
        "nova list: {listed:?}"
    );

    // hypervisor stats: the totals are nova_bm's nodes' resources; the used ones are what Juno's
    // resource tracker counts, the instances' flavor (8 vcpus, 16384 MB, 40 GB each: juno_nova_db)
    let stats = table(&plane.must(&["hypervisor-stats"]));
    let sum = |f: &dyn Fn(&BmNode) -> Option<i64>| cloud.nodes.iter().map(|n| f(n).unwrap()).sum::<i64>().to_string();
    let want = [
        ("count", "3".to_string()),
        ("vcpus", sum(&|n| n.cpus)),
        ("memory_mb", sum(&|n| n.memory_mb)),
        ("local_gb", sum(&|n| n.local_gb)),
        ("vcpus_used", (2 * 8).to_string()),
        ("memory_mb_used", (2 * 16384).to_string()),
        ("local_gb_used", (2 * 40).to_string()),
        ("running_vms", "2".to_string()),
    ];
    for (k, v) in &want {
        assert_eq!(stats.get(*k), Some(v), "hypervisor-stats {k}: {stats:?}");
    }

    // stop and start: the machine's power, Ironic's node and Nova agree
    let m3 = &bmcs[1];
    plane.must(&["stop", &i3]);
    let took = plane
        .wait_show(
            &i3,
            &[("status", "SHUTOFF"), ("OS-EXT-STS:power_state", "4"), ("OS-EXT-STS:task_state", "-")],
            60,
            "nova stop",
        )
        .await;
    assert_eq!(m3.power_actions(), ["power off"], "nova stop: what the machine's BMC was told");
    m3.wait_power("off");
    assert_eq!(node_power(&tgt, 3).await, "power off");
    eprintln!("nova stop: {took:?}");
    plane.must(&["start", &i3]);
    let took = plane
        .wait_show(
            &i3,
            &[("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1"), ("OS-EXT-STS:task_state", "-")],
            60,
            "nova start",
        )
        .await;
    assert_eq!(m3.power_actions(), ["power off", "power on"], "nova start: what the machine's BMC was told");
    m3.wait_power("on");
    assert_eq!(node_power(&tgt, 3).await, "power on");
    eprintln!("nova start: {took:?}");

    // soft and hard reboot: Juno's driver asks Ironic for `reboot` either way
    for (how, args) in [("soft", vec!["reboot"]), ("hard", vec!["reboot", "--hard"])] {
        let before = m3.power_actions().len();
        let mut a = args.clone();
        a.push(&i3);
        plane.must(&a);
        let took = plane
            .wait_show(
                &i3,
                &[("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1"), ("OS-EXT-STS:task_state", "-")],
                60,
                how,
            )
            .await;
        let told = m3.power_actions()[before..].to_vec();
        assert_eq!(told, ["power off", "power on"], "{how} reboot: what the machine's BMC was told");
        m3.wait_power("on");
        eprintln!("{how} reboot: {took:?}");
    }

    // delete: Ironic tears node 6 down, Nova forgets the instance, nothing else changes
    let tftp = juno.dir.join("tftpboot");
    assert!(tftp.join(node_uuid(6)).join("config").is_file(), "node 6's PXE config before the delete");
    plane.must(&["delete", &i6]);
    let t = Instant::now();
    loop {
        let out = plane.nova(&["show", &i6]);
        if !out.success() {
            assert!(out.text().contains("No server with a name or ID"), "{}", out.text());
            break;
        }
        assert!(t.elapsed().as_secs() < 90, "nova delete: the instance is still there: {}", out.stdout);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let n6 = tgt
        .rows(&format!(
            "SELECT COALESCE(instance_uuid, 'NULL'), COALESCE(provision_state, 'NULL'), COALESCE(target_provision_state, 'NULL'), COALESCE(last_error, 'NULL'), power_state FROM nodes WHERE uuid = '{}'",
            node_uuid(6)
        ))
        .await
        .remove(0);
    assert_eq!(n6, ["NULL", "NULL", "NULL", "NULL", "power off"], "node 6 after nova delete");
    assert!(!tftp.join(node_uuid(6)).exists(), "node 6's PXE files are left after the delete");
    let links: Vec<String> = std::fs::read_dir(tftp.join("pxelinux.cfg"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-06"))
        .collect();
    assert!(links.is_empty(), "node 6's MAC links are left: {links:?}");
    let listed = rows(&plane.must(&["list"]));
    assert_eq!(listed.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), [i3.as_str()], "after the delete: {listed:?}");
    let i3_node = tgt
        .rows(&format!(
            "SELECT COALESCE(instance_uuid, 'NULL'), provision_state FROM nodes WHERE uuid = '{}'",
            node_uuid(3)
        ))
        .await;
    assert_eq!(i3_node, [[i3.clone(), "active".to_string()]], "node 3 untouched");
    assert!(bmcs[0].power_actions().is_empty(), "the free node's BMC was told {:?}", bmcs[0].power_actions());
    let log = std::fs::read_to_string(plane.log()).unwrap();
    assert!(!log.contains("bmc-pass-"), "an IPMI password in Nova's log: {}", plane.log().display());
    eprintln!("juno_nova: {:?} in all", t0.elapsed());
}
