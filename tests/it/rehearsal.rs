//! The upgrade rehearsed end to end (scripts/rehearse-upgrade.sh): nova_bm v10 and a Juno Nova DB on
//! the test MariaDB, fake BMCs, the real Ironic behind the real Keystone, both loads (`--via db` and,
//! on fresh databases, `--via api`), the takeover, a reboot through Ironic that boots a VM's instance
//! from the conductor's PXE config, the openstack client, `nova baremetal-node-list`
//! through `bm2ironic proxy`, Juno's nova-compute with the Ironic driver on a Juno Nova database
//! (runbook steps 7-9), the wizard in tmux, verify and rollback. The
//! script checks every step's outcome itself and exits 1 naming the step that went wrong; this test
//! runs it with the binary under test and shows its step table.

use crate::common::{server_env, IRONIC_VENV};

#[test]
fn the_upgrade_rehearsed_end_to_end_with_both_loads() {
    let (Some(_), Some(_), Some(_)) =
        (server_env("BM2IRONIC_TEST_MYSQL_ADMIN"), server_env("BM2IRONIC_TEST_KEYSTONE_URL"), server_env(IRONIC_VENV))
    else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/rehearse-upgrade.sh"))
        .arg("both")
        .env("BM2IRONIC_BIN", assert_cmd::cargo::cargo_bin!("bm2ironic"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("REHEARSAL PASSED: both"), "{stdout}");
    // every step of the table ran and came out right, for both loads
    for load in ["db", "api"] {
        for n in ["0", "1", "2", "3", "4", "5", "6", "7", "7-9", "8", "back", "10"] {
            let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with(&format!("{n}/{load} "))).collect();
            assert!(!rows.is_empty(), "no step {n}/{load} in\n{stdout}");
            assert!(rows.iter().all(|r| r.contains(" ok")), "{rows:?}");
        }
        // the wizard went through the same rehearsal (on the SQL load's databases)
        if load == "db" {
            let w = stdout.lines().find(|l| l.starts_with("0/wizard ")).unwrap_or_default();
            assert!(w.contains(" ok: ") && w.contains("nothing stayed"), "{stdout}");
        }
        // the next reboot (#24): after the SQL load's takeover, node 6's VM rebooted through Ironic
        // booted its instance from the conductor's PXE config
        if load == "db" {
            let r = stdout.lines().find(|l| l.starts_with("6/db ") && l.contains("next reboot")).unwrap_or_default();
            assert!(r.contains(" ok: booted from the conductor's PXE config"), "{stdout}");
        }
        // Juno's nova-compute took the instances over, and stopped the one whose machine was switched off
        let nova = stdout.lines().find(|l| l.starts_with(&format!("7-9/{load} "))).unwrap_or_default();
        assert!(nova.contains("7 compute_nodes rows") && nova.contains("its instance stopped"), "{stdout}");
        // on the nova.conf `bm2ironic config` wrote, after `hosts --apply` moved the instances of the
        // two old hosts to the new one; rollback put them back
        let cfg = stdout.lines().find(|l| l.starts_with(&format!("7/{load} "))).unwrap_or_default();
        assert!(cfg.contains("nova.virt.ironic.IronicDriver"), "{stdout}");
        let hosts = stdout
            .lines()
            .find(|l| l.starts_with(&format!("8/{load} ")) && l.contains("hosts --apply"))
            .unwrap_or_default();
        assert!(hosts.contains("now on ironic-compute"), "{stdout}");
        let back = stdout.lines().find(|l| l.starts_with(&format!("back/{load} "))).unwrap_or_default();
        assert!(back.contains("instances' hosts as before"), "{stdout}");
    }
    eprintln!("{stdout}");
}
