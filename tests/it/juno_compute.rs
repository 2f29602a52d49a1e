//! Nova's own compute driver takes over: the REAL Juno nova-compute (openstack/nova 2014.2,
//! `scripts/juno.sh nova-install`, `compute_driver = nova.virt.ironic.IronicDriver`,
//! `ClusteredComputeManager`) on a real Juno Nova database (made by Juno's own `nova-manage db sync`)
//! holding the instances nova baremetal ran, after bm2ironic migrated nova_bm (and the flavors)
//! into Ironic: the real Juno Ironic 2014.2, and the real Ironic 39 (Juno's driver speaks API 1.1).
//! Checked: every migrated node gets its `compute_nodes` row (`hypervisor_hostname` = node uuid,
//! type `ironic`), every instance keeps its vm_state with the power state its fake BMC has, nothing
//! is rebuilt or deleted, no power action reaches a BMC; then a machine powered off at its BMC
//! (`ipmitool power off`) ends with its instance `stopped` / power_state 4 (shutdown) in Nova.
//!
//! On the Juno side Juno's conductor fetches the images at the takeover from a real Glance
//! (scripts/glance.sh, PyPI glance==15.0.2), after an admin token from a real Keystone v2.0
//! (scripts/keystone-pike.sh, as in juno_takeover.rs: Keystone 30 has no v2.0).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::bmc::Bmc;
use crate::common::glance::Glance;
use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{
    dbsync, juno_nova_sh, juno_nova_venv, juno_venv, keystone_v2, small_cloud, small_cloud_machines, wait_for, KERNEL,
    RAMDISK,
};
use crate::common::nova::{instance_uuid as instance, juno_nova_db, migrate, node_uuid as uuid, HOST};
use crate::common::process::Guard;
use crate::common::{server_env, Backend, Outcome, TestDb, IRONIC_VENV};

/// Juno's nova-compute on `nova` against the Ironic API `ironic_url`; its work dir.
fn nova_compute(nova: &TestDb, ironic_url: &str, dir: &Path) -> Guard {
    let out = Outcome::from(
        juno_nova_sh()
            .args(["nova-conf", dir.to_str().unwrap(), &nova.admin_url, ironic_url, HOST, "3"])
            .output()
            .unwrap(),
    );
    assert!(out.success(), "juno.sh nova-conf: {}", out.text());
    let conf = out.stdout.trim().to_string();
    Guard::spawn(juno_nova_sh().args(["nova-compute", &conf]).stdout(Stdio::null()).stderr(Stdio::null()))
}

/// One instance in Nova: (vm_state, power_state, task_state, deleted, host, node).
async fn nova_instance(nova: &TestDb, id: i64) -> Vec<String> {
    nova.rows(&format!("SELECT vm_state, CAST(power_state AS TEXT), COALESCE(task_state, 'NULL'), CAST(deleted AS TEXT), host, node FROM instances WHERE uuid = '{}'", instance(id)))
        .await
        .remove(0)
}

/// The Nova side of the takeover, the same against both Ironics: `bmcs` are nodes 1, 3, 6's BMCs
/// at `addrs`; `ironic` is the Ironic API (its node table in `tgt`).
async fn nova_takes_over(nova: &TestDb, tgt: &TestDb, ironic: &str, bmcs: &[Bmc], addrs: &[&str; 3], what: &str) {
    let t0 = Instant::now();
    let dir = tempfile::tempdir().unwrap().keep();
    let _compute = nova_compute(nova, &format!("{ironic}/v1"), &dir);
    let log = dir.join("nova-compute.log");
    // every node has its compute_nodes row of the Ironic driver
    let rows_of = format!("SELECT CASE WHEN COUNT(DISTINCT hypervisor_hostname) = 3 THEN 1 ELSE 0 END FROM compute_nodes WHERE deleted = 0 AND hypervisor_type = 'ironic' AND hypervisor_hostname IN ('{}', '{}', '{}')", uuid(1), uuid(3), uuid(6));
    let took = wait_for(nova, &rows_of, 90, &format!("{what}: Juno nova-compute's compute_nodes"), &log).await;
    // then two power syncs (every 3 s)
    let syncs = |l: &str| l.matches("ComputeManager._sync_power_states run_periodic_tasks").count();
    let n0 = syncs(&std::fs::read_to_string(&log).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(30);
    while syncs(&std::fs::read_to_string(&log).unwrap_or_default()) < n0 + 2 {
        assert!(Instant::now() < deadline, "{what}: nova-compute's power sync did not run");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let cn = nova.rows("SELECT hypervisor_hostname, CAST(COUNT(*) AS TEXT) FROM compute_nodes WHERE deleted = 0 GROUP BY hypervisor_hostname ORDER BY hypervisor_hostname").await;
    assert_eq!(cn, [1, 3, 6].map(|i| vec![uuid(i), "1".to_string()]).to_vec(), "{what}: one row per node, no other");
    assert_eq!(
        nova_instance(nova, 3).await,
        ["active", "1", "NULL", "0", HOST, &uuid(3)],
        "{what}: instance 3 running"
    );
    assert_eq!(
        nova_instance(nova, 6).await,
        ["stopped", "4", "NULL", "0", HOST, &uuid(6)],
        "{what}: instance 6 stopped"
    );
    assert_eq!(nova.scalar_i64("SELECT COUNT(*) FROM instances").await, 2, "{what}: no instance added");
    let nodes = tgt.rows("SELECT uuid, provision_state, COALESCE(instance_uuid, 'NULL') FROM nodes WHERE instance_uuid IS NOT NULL ORDER BY id").await;
    assert_eq!(
        nodes,
        [3, 6].map(|i| vec![uuid(i), "active".into(), instance(i)]).to_vec(),
        "{what}: nothing rebuilt or torn down"
    );
    for (b, a) in bmcs.iter().zip(addrs) {
        assert!(b.power_actions().is_empty(), "{what}: BMC {a} was told {:?}", b.power_actions());
    }
    eprintln!("{what}: compute_nodes {took:?} after nova-compute started");

    // node 3's machine is switched off at its BMC: Ironic reads it, Nova stops the instance
    bmcs[1].must(&["power", "off"]);
    let stopped = format!("SELECT CASE WHEN vm_state = 'stopped' AND power_state = 4 AND task_state IS NULL THEN 1 ELSE 0 END FROM instances WHERE uuid = '{}'", instance(3));
    let took = wait_for(nova, &stopped, 60, &format!("{what}: instance 3 stopped in Nova"), &log).await;
    assert_eq!(nova_instance(nova, 6).await[..2], ["stopped", "4"], "{what}");
    assert_eq!(nova.scalar_i64("SELECT COUNT(*) FROM instances WHERE deleted = 0").await, 2, "{what}: nothing deleted");
    let l = std::fs::read_to_string(&log).unwrap();
    assert!(!l.contains("Traceback"), "{what}: nova-compute's log has a traceback: {}", log.display());
    assert!(!l.contains("bmc-pass-"), "{what}: an IPMI password in nova-compute's log: {}", log.display());
    eprintln!("{what}: instance stopped {took:?} after the BMC's power off; {:?} in all", t0.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn juno_nova_compute_takes_over_on_juno_ironic() {
    let Some(venv) = juno_venv() else { return };
    let Some(_nova_venv) = juno_nova_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let addrs = ["127.0.26.11", "127.0.26.12", "127.0.26.13"];
    let src = TestDb::with_fixture(Backend::Sqlite, "jcsrc", &small_cloud(&addrs)).await.unwrap();
    let nova = juno_nova_db().await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jctgt").await;
    let tree = tempfile::tempdir().unwrap();
    small_cloud(&addrs).write_tftp_tree(tree.path()).unwrap();
    migrate(&src, &nova, &tgt, &["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK], tree.path()).await;
    let bmcs = small_cloud_machines(&ironic_venv, &addrs);
    let Some(glance) = Glance::start(&[]).await else { return };
    let Some(token_port) = keystone_v2() else { return };
    // Juno's default puts a machine found off back on (force_power_state_during_sync): off here, so
    // that a machine switched off stays off and Nova hears of it (docs/juno.md)
    let juno = start_ironic(IronicOptions {
        force_power_sync: Some(false),
        keystone_v2_port: Some(token_port),
        ..IronicOptions::juno(&venv, &tgt.admin_url, Release::JunoAllInOne { glance_port: glance.port })
    })
    .await;
    wait_for(&tgt, "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM nodes WHERE conductor_affinity IS NOT NULL AND power_state IS NOT NULL", 45, "Juno's takeover", &juno.log_path()).await;
    nova_takes_over(&nova, &tgt, &juno.base, &bmcs, &addrs, "Juno Ironic").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn juno_nova_compute_takes_over_on_ironic_39() {
    let Some(_nova_venv) = juno_nova_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let addrs = ["127.0.26.14", "127.0.26.15", "127.0.26.16"];
    let src = TestDb::with_fixture(Backend::Sqlite, "jisrc", &small_cloud(&addrs)).await.unwrap();
    let nova = juno_nova_db().await;
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "jitgt").await else { return };
    let tmp = tempfile::tempdir().unwrap();
    for name in ["deploy.kernel", "deploy.initramfs"] {
        std::fs::write(tmp.path().join(name), b"x").unwrap();
    }
    let k = format!("file://{}", tmp.path().join("deploy.kernel").display());
    let r = format!("file://{}", tmp.path().join("deploy.initramfs").display());
    let tree = tmp.path().join("nova-tftpboot");
    small_cloud(&addrs).write_tftp_tree(&tree).unwrap();
    migrate(&src, &nova, &tgt, &["--deploy-kernel", &k, "--deploy-ramdisk", &r], &tree).await;
    let bmcs = small_cloud_machines(&ironic_venv, &addrs);
    // Ironic 39 (noauth, scripts/ironic.sh), power sync every 2 s and, as on Juno, not forced
    let ironic = start_ironic(IronicOptions {
        dir: Some(tmp.path().join("ironic")),
        sync_interval: Some(2),
        force_power_sync: Some(false),
        // the instances' kernel and ramdisk (the ramdisk deploy's file:// images) are in the tree
        file_paths: Some(tmp.path().to_path_buf()),
        ..IronicOptions::new(&ironic_venv, &tgt.admin_url)
    })
    .await;
    let base = ironic.base.clone();
    wait_for(
        &tgt,
        "SELECT CASE WHEN COUNT(*) = 3 THEN 1 ELSE 0 END FROM nodes WHERE power_state IS NOT NULL",
        45,
        "Ironic 39's power sync",
        &ironic.log_path(),
    )
    .await;
    nova_takes_over(&nova, &tgt, &base, &bmcs, &addrs, "Ironic 39").await;
    let last_errors = tgt.rows("SELECT uuid, last_error FROM nodes WHERE last_error IS NOT NULL").await;
    assert!(last_errors.is_empty(), "{last_errors:?}");
}
