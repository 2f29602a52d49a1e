//! The REAL Juno Ironic (2014.2, scripts/juno.sh) takes over what bm2ironic migrated: API and
//! conductor in one process (`juno.sh allinone`), `pxe_ipmitool` nodes whose BMCs are fake ones
//! (scripts/fakebmc.py, PyPI pyghmi) on port 623 of 127.0.26.1-3 (Juno's ipmitool driver has no
//! port setting). Checked: each active node gets the conductor's affinity (Juno's takeover ran: PXE
//! config written, images fetched), every node's power state is read from its BMC (on/off as the
//! machine), no `last_error`, and no power action reaches a BMC.
//!
//! Juno's `pxe` takeover (`PXEDeploy.prepare`) asks Glance for the image's kernel and ramdisk ids and
//! downloads the deploy and instance kernels and ramdisks: from a real Glance (scripts/glance.sh,
//! PyPI glance==15.0.2, its v1 API; tests/it/common/glance.rs), checked in its log.
//!
//! Before the images Juno's conductor asks Keystone v2.0 for an admin token (even with `noauth`): a
//! real Keystone that still serves v2.0 answers it (scripts/keystone-pike.sh, PyPI keystone==12.0.3;
//! the tests' other Keystone, 30.0.0, has no v2.0 API any more). Without the token no image is
//! fetched, so the images in Glance's log also say the token was given.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::glance::Glance;
use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{
    cli, dbsync, juno_venv, keystone_v2, nova_db, small_cloud, small_cloud_machines, wait_for, IMAGE, KERNEL, KERNEL_I,
    RAMDISK, RAMDISK_I,
};
use crate::common::{server_env, Backend, TestDb, IRONIC_VENV};
use serde_json::Value;

/// The BMC addresses of this test (127.0.26.1-3, port 623).
const BMCS: [&str; 3] = ["127.0.26.1", "127.0.26.2", "127.0.26.3"];

#[tokio::test(flavor = "multi_thread")]
async fn juno_conductor_takes_the_migrated_nodes_over() {
    let Some(venv) = juno_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let t0 = Instant::now();
    let f = small_cloud(&BMCS);
    let src = TestDb::with_fixture(Backend::Sqlite, "jtsrc", &f).await.unwrap();
    let nova = nova_db(&[(3, Some(IMAGE), Some(40)), (6, Some(IMAGE), None)]).await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jttgt").await;
    let logs = tempfile::tempdir().unwrap();
    let out = cli(logs.path(), &src, &nova, &tgt, ["migrate", "--via", "db", "--yes"])
        .args(["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"])
        .run();
    assert!(out.success(), "{}", out.text());

    // the machines: node 1 free and off, node 3's running, node 6's stopped
    let bmcs = small_cloud_machines(&ironic_venv, &BMCS);
    let Some(glance) = Glance::start(&[]).await else { return };
    let Some(token_port) = keystone_v2() else { return };
    let juno = start_ironic(IronicOptions {
        keystone_v2_port: Some(token_port),
        ..IronicOptions::juno(&venv, &tgt.admin_url, Release::JunoAllInOne { glance_port: glance.port })
    })
    .await;
    let dir = juno.dir.clone();
    let log = juno.log_path();

    let uuid = |id: i64| format!("bbbbbbbb-0000-4000-8000-{id:012}");
    let took = wait_for(
        &tgt,
        "SELECT CASE WHEN COUNT(*) = 3 THEN 1 ELSE 0 END FROM nodes WHERE power_state IS NOT NULL AND reservation IS NULL AND (provision_state IS NULL OR conductor_affinity IS NOT NULL)",
        45,
        "Juno's conductor: power read and active nodes taken over",
        &log,
    )
    .await;
    let conductor = tgt.rows("SELECT CAST(id AS TEXT), hostname FROM conductors").await;
    assert_eq!(conductor.len(), 1, "{conductor:?}");
    let rows = tgt
        .rows("SELECT uuid, COALESCE(provision_state, 'NULL'), power_state, COALESCE(CAST(conductor_affinity AS TEXT), 'NULL'), COALESCE(last_error, 'NULL'), COALESCE(target_power_state, 'NULL'), instance_info FROM nodes ORDER BY id")
        .await;
    let want = [
        (1, "NULL", "power off", "NULL"),
        (3, "active", "power on", conductor[0][0].as_str()),
        (6, "active", "power off", conductor[0][0].as_str()),
    ];
    for (r, (id, prov, power, affinity)) in rows.iter().zip(want) {
        assert_eq!(r[0], uuid(id));
        // Juno takes over only `active` nodes (_sync_local_state): a free node keeps no affinity
        assert_eq!(
            (r[1].as_str(), r[2].as_str(), r[3].as_str()),
            (prov, power, affinity),
            "node {id}: provision, power (as its machine), affinity"
        );
        assert_eq!(
            (r[4].as_str(), r[5].as_str()),
            ("NULL", "NULL"),
            "node {id}: no last_error, no power action pending"
        );
    }
    // no power action reached a BMC (fakebmc.py prints each one)
    for (b, addr) in bmcs.iter().zip(BMCS) {
        assert!(b.power_actions().is_empty(), "BMC {addr} was told: {:?}", b.power_actions());
    }
    // the takeover itself (PXEDeploy.prepare): Juno asked Glance for the image's kernel and ramdisk
    // and wrote them into instance_info, fetched the four images, wrote each active node's PXE config
    for r in &rows[1..] {
        let ii: Value = serde_json::from_str(&r[6]).unwrap();
        assert_eq!((ii["kernel"].as_str(), ii["ramdisk"].as_str()), (Some(KERNEL_I), Some(RAMDISK_I)), "{}", r[6]);
        let cfg = std::fs::read_to_string(dir.join("tftpboot").join(&r[0]).join("config")).unwrap();
        assert!(cfg.contains(&format!("{}/kernel", r[0])) && cfg.contains(&format!("{}/deploy_kernel", r[0])), "{cfg}");
        // what Juno 2014.2 leaves for the next PXE boot: its takeover writes the config with
        // `default deploy` (the deploy ramdisk, not the instance's `boot` label); docs/juno.md
        assert!(cfg.starts_with("default deploy\n"), "{cfg}");
        for f in ["kernel", "ramdisk", "deploy_kernel", "deploy_ramdisk"] {
            assert!(dir.join("tftpboot").join(&r[0]).join(f).is_file(), "{}/{f}", r[0]);
        }
    }
    // and pointed each of the node's MACs at that config
    for (id, k) in [(3, 0), (3, 1), (6, 0), (6, 1)] {
        let link = dir.join(format!("tftpboot/pxelinux.cfg/01-52-55-{k:02x}-00-00-{id:02x}"));
        assert_eq!(std::fs::read_link(&link).unwrap(), dir.join("tftpboot").join(uuid(id)).join("config"));
    }
    let served = glance.api_log();
    for id in [KERNEL, RAMDISK, KERNEL_I, RAMDISK_I] {
        assert!(served.contains(&format!("\"GET /v1/images/{id} ")), "{id} not fetched from Glance");
    }
    let l = std::fs::read_to_string(&log).unwrap();
    assert!(!l.contains(" ERROR ") && !l.contains("Traceback"), "Juno's log has errors:\n{l}");
    juno_boot_fixes_the_next_boot(logs.path(), &src, &nova, &tgt, &dir.join("tftpboot"));
    eprintln!("Juno's takeover: {took:?} after it started; the test {:?}", t0.elapsed());
}

/// After Juno's takeover, `bm2ironic juno-boot` (docs/juno.md): without `--apply` nothing changes;
/// with it each active node's config boots its `label boot` with `root=UUID=<the uuid in nova
/// baremetal's config>`, as Juno's own deploy leaves it; the free node gets none; a second run
/// changes nothing.
fn juno_boot_fixes_the_next_boot(logs: &Path, src: &TestDb, nova: &TestDb, tgt: &TestDb, tftp: &Path) {
    let uuid = |id: i64| format!("bbbbbbbb-0000-4000-8000-{id:012}");
    let config = |id: i64| std::fs::read_to_string(tftp.join(uuid(id)).join("config")).unwrap();
    let before = [config(3), config(6)];
    let run = |apply: bool| {
        let mut c = cli(logs, src, nova, tgt, ["juno-boot", "--pxe-tftp-root"]).arg(tftp);
        if apply {
            c = c.arg("--apply");
        }
        let out = c.run();
        assert!(out.success(), "{}", out.text());
        out.stdout
    };
    let shown = run(false);
    assert!(shown.contains("would switch") && shown.contains("2 node(s), 0 skipped"), "{shown}");
    assert!(!shown.contains(&uuid(1)), "the free node is not looked at: {shown}");
    assert_eq!([config(3), config(6)], before, "without --apply nothing changes");

    let applied = run(true);
    assert_eq!(applied.matches("switched").count(), 2, "{applied}");
    // the root uuid nova baremetal's own config booted (the tree `migrate --tftp-root` read)
    let nova_tree = logs.join("tftpboot");
    for (id, old) in [3, 6].into_iter().zip(&before) {
        let nova_cfg =
            std::fs::read_to_string(nova_tree.join(format!("aaaaaaaa-0000-4000-8000-{id:012}/config"))).unwrap();
        let root = nova_cfg.split_whitespace().find_map(|w| w.strip_prefix("root=UUID=")).unwrap().to_string();
        let cfg = config(id);
        assert!(cfg.starts_with("default boot\n"), "{cfg}");
        let boot = cfg.split("label boot\n").nth(1).unwrap();
        let append = boot.lines().find(|l| l.starts_with("append ")).unwrap();
        assert!(append.contains(&format!(" root=UUID={root} ro ")), "node {id}: {append}");
        assert!(!cfg.contains("{{ ROOT }}"), "{cfg}");
        // everything else as Juno wrote it (its switch_pxe_config changes those two things only)
        let want = old.replacen("default deploy", "default boot", 1).replace("{{ ROOT }}", &format!("UUID={root}"));
        assert_eq!(&cfg, &want);
    }
    assert!(!tftp.join(uuid(1)).exists(), "the free node has no config");
    let again = run(true);
    assert!(again.matches("already `default boot`").count() == 2 && !again.contains("switched"), "{again}");
    assert_eq!(config(3).matches("default boot").count(), 1);
}
