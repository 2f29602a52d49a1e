//! The next reboot (#24) on a real machine, end to end: the cloud as nova baremetal left it (a nova_bm
//! with one instance node and one free node, and the TFTP tree of its compute host), `bm2ironic migrate
//! --via db --tftp-root` into a fresh Ironic 39 database, the real Ironic 39 (API and conductor, `ipmi`
//! hardware type, `pxe` boot, noauth, SQLite) taking the nodes over, and a reboot through Ironic's API
//! that boots the instance from the PXE config Ironic's conductor wrote.
//!
//! The machine is a QEMU VM with a real Debian kernel, a busybox initramfs and a disk laid out as nova
//! baremetal left it (partitions, no bootloader; scripts/bootvm.sh), powered through IPMI by the fake
//! BMC (scripts/fakebmc.py --vm: IPMI power actions drive QEMU over QMP) and PXE-booted by QEMU's own
//! DHCP and TFTP. Its network's TFTP server is, as in the machine room, first nova baremetal's compute
//! host (the instance runs, booted by nova baremetal's own config), then Ironic's conductor: a symlink
//! the test points at the conductor's `tftp_root` after the takeover, before the reboot.
//!
//! What Ironic 39's conductor writes on the takeover of an ACTIVE node with the `ramdisk` deploy
//! interface (RamdiskDeploy.prepare -> PXEBoot.prepare_instance), and what the test checks:
//!
//! ```text
//! <tftp_root>/pxelinux.0, ldlinux.c32        the loader ([pxe]loader_file_paths, copied at start)
//! <tftp_root>/<node uuid>/config             pxe_config.template rendered, `default boot_ramdisk`
//! <tftp_root>/<node uuid>/kernel, ramdisk    instance_info kernel/ramdisk: file:// in the nova tree
//! <tftp_root>/pxelinux.cfg/01-<mac, dashes>  -> ../<node uuid>/config, one per port
//! ```
//!
//! The `boot_ramdisk` label says `root=/dev/ram0` before the node's own `root=UUID=<root> ro` (from
//! instance_info/ramdisk_kernel_arguments): the last `root=` wins, for the kernel and for the initramfs
//! alike. The instance prints its marker, read from its own root file system, at both boots. The free
//! node gets no config and no link, and the takeover makes no power action.
//!
//! And what leaves an instance unbootable never prints the marker, though it runs at least as long as
//! the instance's two boots took; TFTP roots written here by hand the way each case leaves it: Ironic's
//! config left at `default deploy` (Juno's takeover, upstream bug 1421370; its deploy kernel is not
//! there), a TFTP root without any config for the machine (what the conductor serves a node migrated
//! as a local-boot node: pxelinux gives up), and no boot file at all (the machine falls back to its
//! disk, which has no bootloader). Each shows its own failure on the console first.
//!
//! Needs BM2IRONIC_TEST_BOOT_DIR (scripts/bootvm.sh), the Ironic test venv (Ironic 39, pyghmi) and
//! ipmitool. Addresses: BMCs on 127.0.25.1-5:623, Ironic on a port of the allocator's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

mod cloud;

use crate::common::bmc::{Bmc, BmcOptions, Vm};
use crate::common::ironic::{self, start_ironic, Ironic, IronicOptions};
use crate::common::netboot::plain;
use crate::common::{bm, server_env, skip, Backend, TestDb, IRONIC_VENV};
use cloud::{
    nova_bm, pxe_mac_name, repoint, write_nova_tftp, write_tftp, Tftp, BMC_PASSWORD, BMC_USER, FREE, FREE_BMC,
    FREE_MAC, HAND_NODE, INSTANCE, NODE, NODE_BMC, NODE_MACS, NOVA_APPEND,
};

/// scripts/bootvm.sh: vmlinuz, initramfs, disk.img, root-uuid, marker, pxelinux.0, ldlinux.c32, accel.
pub const BOOT_DIR: &str = "BM2IRONIC_TEST_BOOT_DIR";

/// A fake BMC on a loopback address: a QEMU VM behind it (`tftp`: the TFTP root its network serves),
/// or, without, a power state only.
struct Machine {
    name: &'static str,
    dir: PathBuf,
    powered_on: Option<Instant>,
    bmc: Bmc,
}

impl Machine {
    fn start(
        venv: &Path,
        boot: &Path,
        work: &Path,
        name: &'static str,
        addr: &'static str,
        power: &str,
        vm: Option<(&str, &Path, &str)>,
    ) -> Machine {
        let dir = work.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut o =
            BmcOptions { user: BMC_USER.into(), ..BmcOptions::new(venv, BMC_PASSWORD).at(addr, 623).power(power) };
        o.stderr = Some(dir.join("bmc.stderr"));
        if let Some((mac, tftp, accel)) = vm {
            // each machine its own disk: QEMU locks the image it writes
            std::fs::copy(boot.join("disk.img"), dir.join("disk.img")).unwrap();
            o.vm = Some(Vm {
                dir: dir.join("vm"),
                disk: dir.join("disk.img"),
                tftp: tftp.to_path_buf(),
                mac: mac.into(),
                accel: accel.into(),
            });
        }
        let powered_on = (power == "on").then(Instant::now);
        Machine { name, dir, powered_on, bmc: Bmc::start(o) }
    }

    fn must(&self, args: &[&str]) -> String {
        self.bmc.must(args)
    }

    /// Waits until the BMC answers (pyghmi takes a moment to start) with the power state `power`.
    fn wait_bmc(&self, power: &str) {
        self.bmc.wait_power(power)
    }

    /// As Ironic powers on a netbooted node: boot device PXE, then power on.
    fn power_on(&mut self) {
        self.must(&["chassis", "bootdev", "pxe"]);
        assert!(self.must(&["chassis", "power", "on"]).contains("Up/On"), "{}", self.name);
        self.powered_on = Some(Instant::now());
    }

    /// The power actions the BMC was asked for ("power on", "power off", ...).
    fn power_actions(&self) -> Vec<String> {
        self.bmc.power_actions()
    }

    fn console(&self) -> String {
        plain(&String::from_utf8_lossy(&std::fs::read(self.dir.join("vm/console.log")).unwrap_or_default()))
    }

    /// The instance's marker lines on the console.
    fn markers(&self, marker: &str) -> Vec<String> {
        self.console().lines().filter(|l| l.contains(marker)).map(str::to_string).collect()
    }

    /// Waits until `done` holds for the console; false at the deadline.
    fn wait_console(&self, deadline: Instant, done: impl Fn(&str) -> bool) -> bool {
        while Instant::now() < deadline {
            if done(&self.console()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        done(&self.console())
    }

    /// When each marker appeared on the console, watched from now on (a thread, until `self` is gone).
    fn watch_markers(&self, marker: &str) -> std::sync::Arc<std::sync::Mutex<Vec<Instant>>> {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (s2, path, marker) = (seen.clone(), self.dir.join("vm/console.log"), marker.to_string());
        std::thread::spawn(move || {
            while std::sync::Arc::strong_count(&s2) > 1 {
                let c = String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).matches(&marker).count();
                let mut v = s2.lock().unwrap();
                while v.len() < c {
                    v.push(Instant::now());
                }
                drop(v);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        seen
    }

    fn tail(&self) -> String {
        let c = self.console();
        let lines: Vec<&str> = c.lines().filter(|l| !l.trim().is_empty()).collect();
        let qemu = std::fs::read_to_string(self.dir.join("vm/qemu.log")).unwrap_or_default();
        format!(
            "--- {} console (last lines) ---\n{}\n--- qemu.log ---\n{qemu}",
            self.name,
            lines[lines.len().saturating_sub(25)..].join("\n")
        )
    }
}

/// The real Ironic 39 on `db_url`, API and conductor in one process, its work dir `dir`; takeover
/// every 2 s, power sync every 3 s, file:// images from `files`, the loader from the boot dir.
async fn start_ironic_for_boot(venv: &Path, boot: &Path, dir: &Path, db_url: &str, files: &Path) -> Ironic {
    start_ironic(IronicOptions {
        dir: Some(dir.to_path_buf()),
        sync_interval: Some(3),
        takeover_interval: Some(2),
        file_paths: Some(files.to_path_buf()),
        pxe_loaders: Some(boot.to_path_buf()),
        // Ironic's own default: the machines' BMCs share a loaded host (no BMC here is dead)
        ipmi_retry: Some(60),
        ..IronicOptions::new(venv, db_url)
    })
    .await
}

/// The `boot_ramdisk` label of a pxelinux config: (kernel, append).
fn boot_ramdisk_label(config: &str) -> (String, String) {
    let block: Vec<&str> =
        config.split("\n\n").find(|b| b.trim_start().starts_with("label boot_ramdisk")).unwrap_or("").lines().collect();
    let field =
        |k: &str| block.iter().find_map(|l| l.trim().strip_prefix(k).map(|v| v.trim().to_string())).unwrap_or_default();
    (field("kernel "), field("append "))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_migrated_instance_boots_from_ironics_pxe_config_after_a_reboot_and_nothing_else_boots_it() {
    let (Some(boot), Some(venv)) = (server_env(BOOT_DIR), server_env(IRONIC_VENV)) else {
        return;
    };
    if Command::new("ipmitool").arg("-V").output().is_err() {
        skip("ipmitool is not installed: scripts/ironic.sh install installs it");
        return;
    }
    let (boot, venv) = (PathBuf::from(boot), PathBuf::from(venv));
    let read = |f: &str| std::fs::read_to_string(boot.join(f)).unwrap_or_else(|e| panic!("{f} in {BOOT_DIR}: {e}"));
    let (root_uuid, marker) = (read("root-uuid").trim().to_string(), read("marker").trim().to_string());
    let accel = std::fs::read_to_string(boot.join("accel")).map(|a| a.trim().to_string()).unwrap_or("tcg".into());
    // one boot of this machine: ~3 s with KVM; ~13 s emulated (TCG) on an idle machine, and Ironic and
    // the other tests share its two cores
    let per_boot = Duration::from_secs(if accel == "kvm" { 40 } else { 150 });
    let work = tempfile::tempdir().unwrap();
    let started = Instant::now();

    // the compute host's TFTP tree, copied to the conductor host at the same path; the network's TFTP
    // server serves it until the migration
    let tree = work.path().join("nova-tftpboot");
    let view = work.path().join("compute-host-tftp");
    write_nova_tftp(&tree, &view, &boot, &root_uuid);
    let net = work.path().join("network-tftp");
    std::os::unix::fs::symlink(&view, &net).unwrap();

    // the machines: the instance's, running (booting from nova baremetal's config now), the free
    // node's BMC, and the three that nothing boots
    let instance =
        Machine::start(&venv, &boot, work.path(), "instance", NODE_BMC, "on", Some((NODE_MACS[0], &net, &accel)));
    let free = Machine::start(&venv, &boot, work.path(), "free", FREE_BMC, "off", None);
    let failures = [
        ("deploy", "127.0.25.3", "52:54:00:25:00:03", Tftp::Deploy, format!("{HAND_NODE}/deploy_kernel... failed")),
        ("no-config", "127.0.25.4", "52:54:00:25:00:04", Tftp::NoConfig, "Unable to locate configuration file".into()),
        ("no-boot-file", "127.0.25.5", "52:54:00:25:00:05", Tftp::NoBootFile, "Booting from Hard Disk...".into()),
    ];
    let mut others: Vec<Machine> = failures
        .iter()
        .map(|(name, addr, mac, what, _)| {
            let tftp = work.path().join(name).join("tftp");
            write_tftp(&tftp, &boot, mac, &root_uuid, *what);
            Machine::start(&venv, &boot, work.path(), name, addr, "off", Some((mac, &tftp, &accel)))
        })
        .collect();
    let marker_times = instance.watch_markers(&marker);
    instance.wait_bmc("on");
    free.wait_bmc("off");
    for m in &mut others {
        m.wait_bmc("off");
        m.power_on();
    }

    // the migration: nova_bm and the nova tree into a fresh Ironic 39 database, by SQL
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "bootsrc", &nova_bm()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "boottgt").await else { return };
    let deploy = work.path().join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    for f in ["deploy.kernel", "deploy.initramfs"] {
        std::fs::write(deploy.join(f), b"x").unwrap();
    }
    let logs = work.path().join("audit");
    let out = bm(["migrate", "--via", "db", "--yes", "--default-arch", "x86_64"])
        .arg("--deploy-kernel")
        .arg(format!("file://{}", deploy.join("deploy.kernel").display()))
        .arg("--deploy-ramdisk")
        .arg(format!("file://{}", deploy.join("deploy.initramfs").display()))
        .arg("--tftp-root")
        .arg(&tree)
        .logs(&logs)
        .source(&src)
        .target(&tgt)
        .run();
    assert!(out.success(), "migrate exit {}\n{}", out.code, out.text());
    // the real Ironic 39 on that database takes the nodes over
    let ironic_dir = work.path().join("ironic");
    let ironic = start_ironic_for_boot(&venv, &boot, &ironic_dir, &tgt.admin_url, &tree).await;
    let base = ironic.base.clone();
    let tftp_root = ironic_dir.join("tftpboot");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        // the instance node taken over (its conductor set), both nodes' power read
        let r = tgt
            .rows(&format!(
                "SELECT CAST(conductor_affinity AS TEXT), power_state FROM nodes WHERE uuid IN ('{NODE}', '{FREE}') ORDER BY uuid"
            ))
            .await;
        if r[0][0] != "NULL" && r[0][1] != "NULL" && r[1][1] != "NULL" {
            break;
        }
        assert!(Instant::now() < deadline, "Ironic did not take the node over in 90 s: {r:?}\n{}", ironic.log_tail());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let took_over = started.elapsed();
    let node = ironic::get(&base, &format!("/v1/nodes/{NODE}")).await;
    assert_eq!(
        (&node["provision_state"], &node["power_state"], &node["maintenance"]),
        (&json!("active"), &json!("power on"), &json!(false)),
        "{node:#}"
    );
    assert!(node["last_error"].is_null() && node["fault"].is_null(), "{node:#}\n{}", ironic.log_tail());
    assert_eq!(node["deploy_interface"], "ramdisk", "{node:#}");
    assert!(instance.power_actions().is_empty(), "the takeover made power actions: {:?}", instance.power_actions());

    // what the conductor wrote: the config boots the instance's kernel and ramdisk with its root
    let config_path = tftp_root.join(NODE).join("config");
    let config = std::fs::read_to_string(&config_path).unwrap_or_else(|e| {
        panic!(
            "Ironic wrote no PXE config for the instance node ({}: {e})\n{}",
            config_path.display(),
            ironic.log_tail()
        )
    });
    assert_eq!(config.lines().next(), Some("default boot_ramdisk"), "{config}");
    let (kernel, append) = boot_ramdisk_label(&config);
    assert_eq!(kernel, format!("{NODE}/kernel"), "{config}");
    assert!(append.starts_with(&format!("initrd={NODE}/ramdisk ")), "{config}");
    let roots: Vec<&str> = append.split_whitespace().filter(|a| a.starts_with("root=")).collect();
    assert_eq!(roots.last(), Some(&format!("root=UUID={root_uuid}").as_str()), "the last root= wins: {append}");
    assert!(append.ends_with(&format!("root=UUID={root_uuid} ro {NOVA_APPEND}")), "{append}");
    for (f, from) in [("kernel", "vmlinuz"), ("ramdisk", "initramfs")] {
        let got = std::fs::read(tftp_root.join(NODE).join(f)).unwrap_or_default();
        assert!(got == std::fs::read(boot.join(from)).unwrap(), "{NODE}/{f} is not the instance's {from}");
    }
    let config_real = config_path.canonicalize().unwrap();
    for mac in NODE_MACS {
        let link = tftp_root.join("pxelinux.cfg").join(pxe_mac_name(mac));
        assert!(link.is_symlink(), "no pxelinux.cfg link for the port {mac}");
        assert_eq!(link.canonicalize().unwrap(), config_real, "{}", link.display());
    }
    // the free node: nothing, and its machine untouched
    assert!(!tftp_root.join("pxelinux.cfg").join(pxe_mac_name(FREE_MAC)).exists());
    assert!(!tftp_root.join(FREE).exists());
    let f = ironic::get(&base, &format!("/v1/nodes/{FREE}")).await;
    assert_eq!((&f["provision_state"], &f["power_state"]), (&json!("available"), &json!("power off")), "{f:#}");
    assert!(free.power_actions().is_empty(), "{:?}", free.power_actions());

    // the instance ran meanwhile: booted by nova baremetal's own config, from the compute host
    let t0 = instance.powered_on.unwrap();
    let booted = instance.wait_console(t0 + per_boot, |c| c.contains(&marker));
    assert!(booted, "the instance did not boot from nova baremetal's config within {per_boot:?}\n{}", instance.tail());
    let marker_at = |i: usize| {
        // the watcher polls every 100 ms: it has seen what the console shows within a moment
        for _ in 0..50 {
            if let Some(t) = marker_times.lock().unwrap().get(i) {
                return *t;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the marker watcher never saw marker {i}");
    };
    let first = marker_at(0) - t0;
    let m = instance.markers(&marker);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains(&format!("{marker} root={root_uuid} ")), "the marker names another root: {}", m[0]);
    assert!(m[0].contains(&format!("initrd=/tftpboot/{INSTANCE}/ramdisk root=UUID={root_uuid} ro")), "{}", m[0]);

    // the migration's end: the network's TFTP server is now the conductor's; a reboot through Ironic
    repoint(&net, &tftp_root);
    let t1 = Instant::now();
    let r = reqwest::Client::new()
        .put(format!("{base}/v1/nodes/{NODE}/states/power"))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&json!({"target": "rebooting"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 202, "{}", r.text().await.unwrap_or_default());
    let again = instance.wait_console(t1 + per_boot, |c| c.matches(marker.as_str()).count() >= 2);
    if !again {
        let n = ironic::get(&base, &format!("/v1/nodes/{NODE}")).await;
        panic!(
            "the instance did not boot again within {per_boot:?} of the reboot; the BMC was asked for {:?}; \
             Ironic's node: power {} -> {}, last_error {}\n{}\n{}",
            instance.power_actions(),
            n["power_state"],
            n["target_power_state"],
            n["last_error"],
            instance.tail(),
            ironic.log_tail()
        );
    }
    let second = marker_at(1) - t1;
    let m = instance.markers(&marker);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[1].contains(&format!("{marker} root={root_uuid} ")), "{}", m[1]);
    assert!(m[1].contains(&format!("initrd={NODE}/ramdisk root=/dev/ram0 ")), "not Ironic's config: {}", m[1]);
    assert!(m[1].contains(&format!("root=UUID={root_uuid} ro {NOVA_APPEND}")), "{}", m[1]);
    assert_eq!(
        instance.console().matches("PXELINUX 6.04").count(),
        2,
        "both boots came through PXE\n{}",
        instance.tail()
    );
    assert_eq!(
        instance.power_actions(),
        ["power off", "power on"],
        "Ironic's reboot: off, then on\n{}",
        ironic.log_tail()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = ironic::get(&base, &format!("/v1/nodes/{NODE}")).await;
        if n["target_power_state"].is_null() {
            assert_eq!(n["power_state"], "power on", "{n:#}");
            assert!(n["last_error"].is_null(), "{n:#}");
            break;
        }
        assert!(Instant::now() < deadline, "the reboot never ended in Ironic: {n:#}\n{}", ironic.log_tail());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }

    // what leaves the instance unbootable: each shows its own failure, and never the instance
    for (m, (name, .., failure)) in others.iter().zip(&failures) {
        assert_eq!(m.name, *name);
        let seen = m.wait_console(Instant::now() + per_boot, |c| c.contains(failure.as_str()));
        assert!(seen, "{name}: no '{failure}' on its console\n{}", m.tail());
        // it runs at least as long as the instance's two boots took
        let ran = m.powered_on.unwrap().elapsed();
        std::thread::sleep((first + second).saturating_sub(ran));
        assert!(m.markers(&marker).is_empty(), "{name} booted the instance after all\n{}", m.tail());
    }
    // that one tried the network first, as nova baremetal's machines did, and then its disk
    let m = &others[2];
    assert!(
        m.console().contains("pxelinux.0... No such file"),
        "{} did not try the network first\n{}",
        m.name,
        m.tail()
    );

    // power off through IPMI: QEMU is gone, the BMC says off
    for m in &mut others {
        assert!(m.must(&["chassis", "power", "off"]).contains("Down/Off"), "{}", m.name);
        assert_eq!(m.must(&["chassis", "power", "status"]), "Chassis Power is off", "{}", m.name);
    }
    eprintln!(
        "boot test ({accel}): nova baremetal's boot to the marker {first:.1?}, the takeover at {took_over:.1?}, \
         Ironic's reboot to the marker {second:.1?}, whole test {:.1?}",
        started.elapsed()
    );
}
