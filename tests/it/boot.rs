//! The next reboot (#24) on a real machine: a QEMU VM with a real Debian kernel, a busybox initramfs and
//! a disk laid out as nova baremetal left it (partitions, no bootloader; scripts/bootvm.sh), powered
//! through IPMI by the fake BMC (scripts/fakebmc.py --vm: IPMI power actions drive QEMU over QMP), and
//! PXE-booted by QEMU's own DHCP and TFTP from a TFTP root written here by hand the way Ironic 39's
//! `pxe` boot interface writes it for a node with the `ramdisk` deploy interface:
//!
//! ```text
//! <tftp>/pxelinux.0, <tftp>/ldlinux.c32         the loader (Ironic copies it only with [pxe]loader_file_paths)
//! <tftp>/<node uuid>/config                     pxe_config.template rendered, `default boot_ramdisk`
//! <tftp>/<node uuid>/kernel, .../ramdisk        instance_info kernel and ramdisk (cache_ramdisk_kernel)
//! <tftp>/pxelinux.cfg/01-<mac, dashes>          -> ../<node uuid>/config (a relative symlink per port)
//! ```
//!
//! The machine whose config boots `boot_ramdisk` (kernel + `root=UUID=<root> ro` from
//! instance_info/ramdisk_kernel_arguments, after the template's own `root=/dev/ram0`: the last `root=`
//! wins, for the kernel and for initramfs-tools alike) prints the instance's marker, read from its own
//! root file system, and prints it again after `power cycle`: the next reboot. And what leaves an
//! instance unbootable never prints it, though it runs at least as long as those two boots took: the
//! same config left at `default deploy` (its deploy kernel is not there), a TFTP root without any
//! config for the machine (pxelinux gives up), and no boot file at all (the machine falls back to its
//! disk, which has no bootloader). Each of these shows its own failure on the console first.
//!
//! Needs BM2IRONIC_TEST_BOOT_DIR (scripts/bootvm.sh), the Ironic test venv (pyghmi) and ipmitool.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::api_env::Killed;
use crate::common::{server_env, skip, IRONIC_VENV};

/// scripts/bootvm.sh: vmlinuz, initramfs, disk.img, root-uuid, marker, pxelinux.0, ldlinux.c32, accel.
pub const BOOT_DIR: &str = "BM2IRONIC_TEST_BOOT_DIR";
/// The Ironic node's UUID: its directory under the TFTP root.
const NODE: &str = "1be0c0de-0024-4000-8000-000000000001";
const BMC_USER: &str = "admin";
const BMC_PASSWORD: &str = "boot-test-pass";

/// What a machine's TFTP root holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tftp {
    /// Ironic's config switched to the instance (`default boot_ramdisk`), as after a ramdisk-deploy takeover.
    Instance,
    /// The same config left at `default deploy`, whose deploy kernel and ramdisk are not there.
    Deploy,
    /// The loader, the node's kernel and ramdisk, but no config for the machine.
    NoConfig,
    /// Nothing: DHCP names a boot file TFTP does not have, and the machine tries its disk.
    NoBootFile,
}

/// Ironic 39's drivers/modules/pxe_config.template rendered by its create_pxe_config for this node
/// (boot interface `pxe`, BIOS boot mode; `kernel_append_params` "nofb vga=normal console=ttyS0",
/// `instance_info/ramdisk_kernel_arguments` "root=UUID=<root> ro"). On a takeover the deploy label is
/// rendered without deploy paths (`service=True`); `deploy` fills them, as a node being deployed has.
fn ironic_pxe_config(root_uuid: &str, default: &str, deploy_paths: bool) -> String {
    let (dk, dr) = if deploy_paths {
        (format!("{NODE}/deploy_kernel"), format!("{NODE}/deploy_ramdisk"))
    } else {
        Default::default()
    };
    let append = "nofb vga=normal console=ttyS0";
    format!(
        "default {default}\n\nlabel deploy\nkernel {dk}\nappend initrd={dr} selinux=0 troubleshoot=0 text {append}\nipappend 2\n\n\
         label boot_whole_disk\nCOM32 chain.c32\nappend mbr:{{{{ DISK_IDENTIFIER }}}}\n\n\
         label boot_ramdisk\nkernel {NODE}/kernel\nappend initrd={NODE}/ramdisk root=/dev/ram0 text {append} root=UUID={root_uuid} ro\n\n\
         label boot_anaconda\nkernel {NODE}/kernel\nappend initrd={NODE}/ramdisk text {append} inst.ks= inst.stage2=\nipappend 2"
    )
}

/// The pxelinux name of a port's config: `01-` and the MAC with dashes, lower case.
fn pxe_mac_name(mac: &str) -> String {
    format!("01-{}", mac.replace(':', "-").to_lowercase())
}

fn write_tftp(dir: &Path, boot: &Path, mac: &str, root_uuid: &str, what: Tftp) {
    std::fs::create_dir_all(dir).unwrap();
    if what == Tftp::NoBootFile {
        return;
    }
    for f in ["pxelinux.0", "ldlinux.c32"] {
        std::fs::copy(boot.join(f), dir.join(f)).unwrap();
    }
    let node = dir.join(NODE);
    std::fs::create_dir_all(&node).unwrap();
    std::fs::copy(boot.join("vmlinuz"), node.join("kernel")).unwrap();
    std::fs::copy(boot.join("initramfs"), node.join("ramdisk")).unwrap();
    let config = match what {
        Tftp::Instance => ironic_pxe_config(root_uuid, "boot_ramdisk", false),
        Tftp::Deploy => ironic_pxe_config(root_uuid, "deploy", true),
        Tftp::NoConfig | Tftp::NoBootFile => return,
    };
    std::fs::write(node.join("config"), config).unwrap();
    std::fs::create_dir_all(dir.join("pxelinux.cfg")).unwrap();
    std::os::unix::fs::symlink(format!("../{NODE}/config"), dir.join("pxelinux.cfg").join(pxe_mac_name(mac))).unwrap();
}

/// The console without terminal escapes and carriage returns (pxelinux moves the cursor mid-word).
fn plain(console: &str) -> String {
    let esc = regex::Regex::new(r"\x1b(\[[0-9;?]*[A-Za-z]|[^\[])").unwrap();
    esc.replace_all(console, "").replace('\r', "")
}

/// A machine behind its own fake BMC on a loopback address.
struct Machine {
    name: &'static str,
    addr: &'static str,
    vm: PathBuf,
    powered_on: Option<Instant>,
    _bmc: Killed,
}

impl Machine {
    #[allow(clippy::too_many_arguments)]
    fn start(
        venv: &Path,
        boot: &Path,
        work: &Path,
        name: &'static str,
        addr: &'static str,
        mac: &str,
        root_uuid: &str,
        accel: &str,
        what: Tftp,
    ) -> Machine {
        let dir = work.join(name);
        let tftp = dir.join("tftp");
        write_tftp(&tftp, boot, mac, root_uuid, what);
        // each machine its own disk: QEMU locks the image it writes
        std::fs::copy(boot.join("disk.img"), dir.join("disk.img")).unwrap();
        let vm = dir.join("vm");
        let child = Command::new(venv.join("bin/python"))
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fakebmc.py"))
            .args(["623", BMC_USER, BMC_PASSWORD, addr, "off", "--vm"])
            .arg(&vm)
            .arg("--disk")
            .arg(dir.join("disk.img"))
            .arg("--tftp")
            .arg(&tftp)
            .args(["--mac", mac, "--accel", accel])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("bmc.log")).unwrap())
            .stderr(std::fs::File::create(dir.join("bmc.stderr")).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        Machine { name, addr, vm, powered_on: None, _bmc: Killed(child) }
    }

    /// ipmitool against this machine's BMC: (success, output).
    fn ipmi(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("ipmitool")
            .args(["-I", "lanplus", "-H", self.addr, "-p", "623", "-U", BMC_USER, "-P", BMC_PASSWORD])
            .args(["-R", "2", "-N", "1"])
            .args(args)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text.trim().to_string())
    }

    fn must(&self, args: &[&str]) -> String {
        let (ok, out) = self.ipmi(args);
        assert!(ok, "{}: ipmitool {} failed: {out}", self.name, args.join(" "));
        out
    }

    /// Waits until the BMC answers (pyghmi takes a moment to start).
    fn wait_bmc(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (ok, out) = self.ipmi(&["chassis", "power", "status"]);
            if ok {
                assert_eq!(out, "Chassis Power is off", "{}", self.name);
                return;
            }
            assert!(Instant::now() < deadline, "{}: the BMC on {}:623 never answered: {out}", self.name, self.addr);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// As Ironic powers on a netbooted node: boot device PXE, then power on.
    fn power_on(&mut self) {
        self.must(&["chassis", "bootdev", "pxe"]);
        assert!(self.must(&["chassis", "power", "on"]).contains("Up/On"), "{}", self.name);
        self.powered_on = Some(Instant::now());
    }

    fn console(&self) -> String {
        plain(&String::from_utf8_lossy(&std::fs::read(self.vm.join("console.log")).unwrap_or_default()))
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

    fn tail(&self) -> String {
        let c = self.console();
        let lines: Vec<&str> = c.lines().filter(|l| !l.trim().is_empty()).collect();
        let qemu = std::fs::read_to_string(self.vm.join("qemu.log")).unwrap_or_default();
        format!(
            "--- {} console (last lines) ---\n{}\n--- qemu.log ---\n{qemu}",
            self.name,
            lines[lines.len().saturating_sub(25)..].join("\n")
        )
    }
}

#[test]
fn a_netbooted_instance_boots_again_after_a_power_cycle_and_nothing_else_boots_it() {
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
    // one boot of this machine: ~3 s with KVM; ~13 s emulated (TCG) on an idle machine, and the other
    // tests share its two cores
    let per_boot = Duration::from_secs(if accel == "kvm" { 40 } else { 150 });
    let work = tempfile::tempdir().unwrap();
    let started = Instant::now();

    let mut machines = vec![
        Machine::start(
            &venv,
            &boot,
            work.path(),
            "instance",
            "127.0.24.1",
            "52:54:00:24:00:01",
            &root_uuid,
            &accel,
            Tftp::Instance,
        ),
        Machine::start(
            &venv,
            &boot,
            work.path(),
            "deploy",
            "127.0.24.2",
            "52:54:00:24:00:02",
            &root_uuid,
            &accel,
            Tftp::Deploy,
        ),
        Machine::start(
            &venv,
            &boot,
            work.path(),
            "no-config",
            "127.0.24.3",
            "52:54:00:24:00:03",
            &root_uuid,
            &accel,
            Tftp::NoConfig,
        ),
        Machine::start(
            &venv,
            &boot,
            work.path(),
            "no-boot-file",
            "127.0.24.4",
            "52:54:00:24:00:04",
            &root_uuid,
            &accel,
            Tftp::NoBootFile,
        ),
    ];
    for m in &machines {
        m.wait_bmc();
    }
    for m in &mut machines {
        m.power_on();
        assert_eq!(m.must(&["chassis", "power", "status"]), "Chassis Power is on", "{}", m.name);
    }
    let (instance, others) = machines.split_first().unwrap();

    // the first boot: PXE, the kernel and ramdisk from <node>/, the root file system found by its UUID
    let t0 = Instant::now();
    let booted = instance.wait_console(t0 + per_boot, |c| c.contains(&marker));
    assert!(booted, "the instance did not boot within {per_boot:?}\n{}", instance.tail());
    let first = t0.elapsed();
    let m = instance.markers(&marker);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains(&format!("{marker} root={root_uuid} ")), "the marker names another root: {}", m[0]);
    assert!(
        m[0].contains(&format!("root=UUID={root_uuid} ro")),
        "booted without the root on its command line: {}",
        m[0]
    );
    assert!(m[0].contains(&format!("initrd={NODE}/ramdisk")), "booted another ramdisk: {}", m[0]);

    // the next reboot: power cycle (a new QEMU: the firmware, PXE and the same config again)
    let t1 = Instant::now();
    assert!(instance.must(&["chassis", "power", "cycle"]).contains("Cycle"));
    let again = instance.wait_console(t1 + per_boot, |c| c.matches(marker.as_str()).count() >= 2);
    assert!(again, "the instance did not boot again after a power cycle within {per_boot:?}\n{}", instance.tail());
    let second = t1.elapsed();
    let console = instance.console();
    assert_eq!(console.matches("PXELINUX 6.04").count(), 2, "both boots came through PXE\n{}", instance.tail());
    let m = instance.markers(&marker);
    assert_eq!(m.len(), 2, "{m:?}");
    assert!(m[1].contains(&format!("{marker} root={root_uuid} ")), "{}", m[1]);

    // what leaves the instance unbootable: each shows its own failure, and never the instance
    let failures = [
        ("deploy", format!("{NODE}/deploy_kernel... failed")),
        ("no-config", "Unable to locate configuration file".to_string()),
        ("no-boot-file", "Booting from Hard Disk...".to_string()),
    ];
    for (m, (name, failure)) in others.iter().zip(&failures) {
        assert_eq!(m.name, *name);
        let seen = m.wait_console(Instant::now() + per_boot, |c| c.contains(failure.as_str()));
        assert!(seen, "{name}: no '{failure}' on its console\n{}", m.tail());
        let ran = m.powered_on.unwrap().elapsed();
        assert!(ran >= first + second, "{name} ran {ran:?}, less than the instance's two boots");
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
    for m in &machines {
        assert!(m.must(&["chassis", "power", "off"]).contains("Down/Off"), "{}", m.name);
        assert_eq!(m.must(&["chassis", "power", "status"]), "Chassis Power is off", "{}", m.name);
    }
    eprintln!(
        "boot test ({accel}): first boot to the marker {first:.1?}, after the power cycle {second:.1?}, whole test {:.1?}",
        started.elapsed()
    );
}
