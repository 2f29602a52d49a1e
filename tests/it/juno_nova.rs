//! After the window, Nova runs the cloud (#29): the REAL Juno Nova control plane (openstack/nova
//! 2014.2: nova-api, nova-conductor, nova-scheduler with `IronicHostManager` and the Exact* filters,
//! nova-compute with the Ironic driver and `ClusteredComputeManager`; one process, `juno.sh nova-all`)
//! on the nova.conf `bm2ironic config --target juno` writes, over the real Juno Ironic 2014.2 (API and
//! conductor) that took over what bm2ironic migrated, operated through Juno's own `nova` command
//! (python-novaclient 2.20.0). One test, several steps, so that the services start once.
//!
//! The machine of instance 3 is a QEMU VM (scripts/bootvm.sh: Debian's kernel, a busybox initramfs, a
//! disk as nova baremetal left it, no bootloader) behind its fake BMC (scripts/fakebmc.py --vm: IPMI
//! power drives QEMU), PXE-booted by QEMU's own DHCP and TFTP from the Juno conductor's TFTP root,
//! after `bm2ironic juno-boot --apply` switched its config to `default boot` with the instance's root.
//!
//! Checked, each against what nova_bm held (not against what Ironic says, which a wrong migration
//! would make agree with itself):
//! - `nova list`: the migrated instances, instance 3 ACTIVE/Running, instance 6 SHUTOFF/Shutdown;
//! - `nova hypervisor-stats`: one hypervisor per migrated node, its vcpus, memory_mb and local_gb
//!   the sums of nova_bm's nodes' cpus, memory_mb and local_gb (node 6 differs from the others); the
//!   used ones the two instances' flavor (Juno's resource tracker counts flavors, not nodes); and
//!   `nova hypervisor-show` of each node its own cpus, memory_mb and local_gb;
//! - `nova stop` / `nova start` of instance 3: the machine's BMC is told `power off` / `power on`,
//!   Ironic's node follows, Nova ends SHUTOFF / ACTIVE, and after the start the VM boots the instance
//!   (its marker, with its root file system's uuid, on the serial console);
//! - `nova reboot` and `nova reboot --hard`: the BMC is told to power the machine off and on again
//!   (Juno's driver maps both to Ironic's `reboot`), Nova ends ACTIVE, the VM boots the instance again;
//! - `nova delete` of instance 6: Ironic tears the node down (no instance, provision state NOSTATE,
//!   its PXE config and MAC links removed), Nova's instance is gone, the other one untouched;
//! - `nova boot` with the baremetal flavor (bm2ironic flavors updated its deploy images and
//!   cpu_arch): of the two free nodes the scheduler (IronicHostManager, Exact* filters) picks node 1,
//!   whose cpus, memory_mb and local_gb are the flavor's (node 6 is smaller); Ironic takes the deploy
//!   (instance_info, the flavor's deploy kernel and ramdisk, `wait call-back`) and powers node 1's
//!   machine on: a QEMU VM too, which PXE-boots Juno's deploy config, the deploy kernel from Glance
//!   (its command line on the console, naming the deployment and Ironic's API). It ends there: the
//!   deploy ramdisk is bootvm.sh's initramfs, not Juno's (none is built here), so nothing calls back
//!   and the instance stays BUILD/spawning;
//! - a node that no flavor fits is one the plan names: `bm2ironic plan` of this cloud names none
//!   (`no-matching-flavor`), and of the same cloud with node 6 free names node 6; a second
//!   `nova boot` of the flavor, with node 6 free by then, ends in ERROR, "No valid host": Juno's
//!   scheduler never places it there.
//!
//! Glance is a real one (scripts/glance.sh: PyPI glance==15.0.2, its v1 API, SQLite, file store): it
//! holds the images (the VM's real kernel and initramfs as the instance image's) and serves them to
//! Juno's conductor (takeover, deploy) and to Nova (boot); checked in its log.
//!
//! Keystone v2.0's token call, which Juno's conductor makes before it asks Glance for images, is
//! answered by a real Keystone that still serves v2.0 (scripts/keystone-pike.sh: PyPI keystone==12.0.3;
//! the tests' other Keystone, 30.0.0, has no v2.0). Node 6's BMC is a power state only. Not real either: Neutron
//! (nova-network's FlatManager answers Nova's network calls), the broker (oslo.messaging's fake
//! transport inside the one process), Keystone for Nova's API and Glance (noauth), and Glance is
//! Pike's, not Juno's (the package index offers none older).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::bmc::{Bmc, BmcOptions, Vm};
use crate::common::glance::Glance;
use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{
    dbsync, juno_nova_venv, juno_venv, keystone_v2, small_cloud, wait_for, IMAGE, KERNEL, KERNEL_I, RAMDISK, RAMDISK_I,
};
use crate::common::nova::{instance_uuid, juno_nova_db, migrate, node_uuid, rows, table, NovaPlane};
use crate::common::{bm, server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::source::model::BmNode;

/// The BMC addresses of this test (port 623: Juno's ipmitool driver has no port setting).
const BMCS: [&str; 3] = ["127.0.26.21", "127.0.26.22", "127.0.26.23"];

/// scripts/bootvm.sh's machine parts: vmlinuz, initramfs, disk.img, root-uuid, marker, pxelinux.0,
/// ldlinux.c32, accel.
const BOOT_DIR: &str = "BM2IRONIC_TEST_BOOT_DIR";
/// The serial console on the kernel command line: Juno's `[pxe] pxe_append_params` as nova
/// baremetal's were.
const APPEND: &str = "nofb nomodeset vga=normal console=ttyS0";

/// Node `id`'s machine: a QEMU VM behind its BMC (on 127.0.26.2x, port 623), powered `power`,
/// PXE-booting from the TFTP root `net` (its files in `work/vm<id>`).
fn vm_machine(venv: &Path, boot: &Path, work: &Path, net: &Path, id: i64, power: &str) -> Bmc {
    let accel = std::fs::read_to_string(boot.join("accel")).map(|a| a.trim().to_string()).unwrap_or("tcg".into());
    let dir = work.join(format!("vm{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(boot.join("disk.img"), dir.join("disk.img")).unwrap();
    for f in ["pxelinux.0", "ldlinux.c32"] {
        std::fs::copy(boot.join(f), net.join(f)).unwrap();
    }
    let addr = BMCS[[1, 3, 6].iter().position(|n| *n == id).unwrap()];
    let mut o = BmcOptions::new(venv, &format!("bmc-pass-{id}")).at(addr, 623).power(power);
    o.vm = Some(Vm {
        dir: dir.clone(),
        disk: dir.join("disk.img"),
        tftp: net.to_path_buf(),
        // the node's first NIC (Fixture::generated)
        mac: format!("52:55:00:00:00:{id:02x}"),
        accel,
    });
    o.stderr = Some(dir.join("bmc.stderr"));
    Bmc::start(o)
}

/// The marker lines on a VM's serial console so far.
fn markers(vm: &Path, marker: &str) -> usize {
    String::from_utf8_lossy(&std::fs::read(vm.join("console.log")).unwrap_or_default()).matches(marker).count()
}

/// Waits until the VM's console shows `n` markers; the console's end on timeout.
async fn wait_marker(vm: &Path, marker: &str, n: usize, secs: u64, what: &str) -> Duration {
    let t0 = Instant::now();
    while markers(vm, marker) < n {
        if t0.elapsed() > Duration::from_secs(secs) {
            let c = String::from_utf8_lossy(&std::fs::read(vm.join("console.log")).unwrap_or_default()).into_owned();
            let tail: String = c.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("{what}: no boot of the instance (marker {n}) on the console after {secs} s:\n{tail}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    t0.elapsed()
}

/// Node `id`'s power state in Ironic's database.
async fn node_power(tgt: &TestDb, id: i64) -> String {
    tgt.rows(&format!("SELECT COALESCE(power_state, 'NULL') FROM nodes WHERE uuid = '{}'", node_uuid(id)))
        .await
        .remove(0)
        .remove(0)
}

/// The nova_bm ids `bm2ironic plan` names with `no-matching-flavor` for `cloud`, with Nova's database
/// `nova` (its flavors) and the empty Juno Ironic `tgt`.
async fn unfit_nodes(cloud: &Fixture, nova: &TestDb, tgt: &TestDb, tree: &Path) -> Vec<i64> {
    let src = TestDb::with_fixture(Backend::Sqlite, "jnplan", cloud).await.unwrap();
    let images = ["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"];
    let out =
        bm(["plan", "--json", "--tftp-root"]).arg(tree).args(images).source(&src).nova(Some(nova)).target(tgt).run();
    let plan: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("plan: {e}: {}", out.text()));
    let conflicts = plan["conflicts"].as_array().unwrap();
    conflicts
        .iter()
        .filter(|c| c["code"] == "no-matching-flavor")
        .map(|c| c["subject"]["node"]["nova_bm_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn juno_nova_runs_the_migrated_cloud() {
    let Some(venv) = juno_venv() else { return };
    let Some(_nova_venv) = juno_nova_venv() else { return };
    let Some(ironic_venv) = server_env(IRONIC_VENV).map(PathBuf::from) else { return };
    let Some(boot) = server_env(BOOT_DIR).map(PathBuf::from) else { return };
    let read = |f: &str| std::fs::read_to_string(boot.join(f)).unwrap().trim().to_string();
    let root_uuid = read("root-uuid");
    // the marker the instance prints at each boot, with the root file system it found
    let marker = format!("{} root={root_uuid}", read("marker"));
    let t0 = Instant::now();
    // nodes 1 (free), 3 and 6 (instances); node 6 smaller, so that the sums say whose resources count
    let mut cloud = small_cloud(&BMCS);
    let n6 = cloud.nodes.iter_mut().find(|n| n.id == 6).unwrap();
    (n6.cpus, n6.memory_mb, n6.local_gb) = (Some(4), Some(12288), Some(250));
    // node 1 (free) is what the baremetal flavor (8 vcpus, 16384 MB, 40 GB) asks for, exactly
    cloud.nodes.iter_mut().find(|n| n.id == 1).unwrap().local_gb = Some(40);
    let src = TestDb::with_fixture(Backend::Sqlite, "jnsrc", &cloud).await.unwrap();
    let nova = juno_nova_db().await;
    let tgt = dbsync(&venv, Backend::Sqlite, "jntgt").await;
    let tree = tempfile::tempdir().unwrap();
    cloud.write_tftp_tree(tree.path()).unwrap();
    // instance 3's config on its compute host: the root file system of the VM's disk, its serial console
    let i3 = instance_uuid(3);
    let root = tree.path().display().to_string();
    std::fs::write(
        tree.path().join(&i3).join("config"),
        bm2ironic::core::source::pxe::nova_baremetal_config(&root, &i3, &root_uuid, APPEND),
    )
    .unwrap();
    // the plan names a free node that no flavor fits: none here (node 1 fits the baremetal flavor);
    // node 6 were it free (the `nova boot` below, with node 6 freed, is never placed on it)
    assert_eq!(unfit_nodes(&cloud, &nova, &tgt, tree.path()).await, Vec::<i64>::new(), "the cloud as it is");
    let mut freed = cloud.clone();
    let f6 = freed.nodes.iter_mut().find(|n| n.id == 6).unwrap();
    (f6.instance_uuid, f6.instance_name, f6.task_state) = (None, None, None);
    assert_eq!(unfit_nodes(&freed, &nova, &tgt, tree.path()).await, [6], "node 6 free");
    migrate(&src, &nova, &tgt, &["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK], tree.path()).await;
    // the machines: node 3's a QEMU VM, running; node 1's one too, off (the free node `nova boot`
    // deploys); node 6's BMC a power state only, off. The network's TFTP root `net` (QEMU's own TFTP
    // server) serves Juno's once it has taken over
    let work = tempfile::tempdir().unwrap();
    let net = work.path().join("net");
    std::fs::create_dir_all(&net).unwrap();
    let m3 = vm_machine(&ironic_venv, &boot, work.path(), &net, 3, "on");
    let m1 = vm_machine(&ironic_venv, &boot, work.path(), &net, 1, "off");
    let m6 = Bmc::start(BmcOptions::new(&ironic_venv, "bmc-pass-6").at(BMCS[2], 623));
    let bmcs = [m1, m6];
    m3.wait_power("on");
    // Glance, real: the instance image's kernel and ramdisk are the VM's own (bootvm.sh), and so are
    // the deploy kernel and ramdisk (what node 1's VM boots at `nova boot`)
    let Some(glance) = Glance::start_juno(&boot, "initramfs").await else { return };
    let glance_port = glance.port;
    let Some(token_port) = keystone_v2() else { return };
    // as `bm2ironic config` writes it: a machine found off stays off
    let juno = start_ironic(IronicOptions {
        force_power_sync: Some(false),
        pxe_append: Some(APPEND.into()),
        keystone_v2_port: Some(token_port),
        ..IronicOptions::juno(&venv, &tgt.admin_url, Release::JunoAllInOne { glance_port })
    })
    .await;
    wait_for(&tgt, "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM nodes WHERE conductor_affinity IS NOT NULL AND power_state IS NOT NULL", 45, "Juno's takeover", &juno.log_path()).await;
    // Juno's configs name their files by absolute path (the machine room's tftpd maps them back onto
    // its root): QEMU's TFTP server finds them under `net` at that path, and pxelinux.cfg beside
    let tftp = juno.dir.join("tftpboot");
    let mirror = net.join(tftp.strip_prefix("/").unwrap());
    std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&tftp, &mirror).unwrap();
    std::os::unix::fs::symlink(tftp.join("pxelinux.cfg"), net.join("pxelinux.cfg")).unwrap();
    // bm2ironic juno-boot --apply: node 3's config boots the instance (`default boot`, its root uuid)
    let out = bm(["--tftp-root"])
        .arg(tree.path())
        .args(["juno-boot", "--apply", "--pxe-tftp-root"])
        .arg(&tftp)
        .source(&src)
        .nova(Some(&nova))
        .target(&tgt)
        .run();
    assert!(out.success(), "juno-boot: {}", out.text());
    let cfg3 = std::fs::read_to_string(tftp.join(node_uuid(3)).join("config")).unwrap();
    assert!(cfg3.starts_with("default boot\n") && cfg3.contains(&format!("root=UUID={root_uuid} ro")), "{cfg3}");
    let vm = work.path().join("vm3");
    assert_eq!(markers(&vm, &marker), 0, "the VM booted the instance before anything pointed it at a config");
    let nodes = [1, 3, 6].map(node_uuid);
    let plane = NovaPlane::start(&nova, &juno.base, &format!("127.0.0.1:{glance_port}"), &nodes, token_port).await;
    eprintln!("Nova's control plane up {:?} after the start", t0.elapsed());
    let i6 = instance_uuid(6);

    // nova list: the migrated instances, as nova baremetal left them
    plane.wait_show(&i3, &[("status", "ACTIVE"), ("OS-EXT-STS:power_state", "1")], 30, "instance 3").await;
    let listed = rows(&plane.must(&["list", "--all-tenants"]));
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
    // and each node's own hypervisor: its nova_bm resources
    for n in &cloud.nodes {
        let shown = table(&plane.must(&["hypervisor-show", &node_uuid(n.id)]));
        let got = ["vcpus", "memory_mb", "local_gb"].map(|k| shown.get(k).cloned().unwrap_or_default());
        let want = [n.cpus, n.memory_mb, n.local_gb].map(|v| v.unwrap().to_string());
        assert_eq!(got, want, "hypervisor-show {}: {shown:?}", n.id);
    }

    // stop and start: the machine's power, Ironic's node and Nova agree
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
    let booted = wait_marker(&vm, &marker, 1, 240, "nova start").await;
    eprintln!("nova start: {took:?}, the instance booted (its marker on the console) {booted:?} later");

    // soft and hard reboot: Juno's driver asks Ironic for `reboot` either way
    for (n, (how, args)) in [("soft", vec!["reboot"]), ("hard", vec!["reboot", "--hard"])].into_iter().enumerate() {
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
        let booted = wait_marker(&vm, &marker, n + 2, 240, how).await;
        eprintln!("{how} reboot: {took:?}, the instance booted again {booted:?} later");
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
    let listed = rows(&plane.must(&["list", "--all-tenants"]));
    assert_eq!(listed.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), [i3.as_str()], "after the delete: {listed:?}");
    let i3_node = tgt
        .rows(&format!(
            "SELECT COALESCE(instance_uuid, 'NULL'), provision_state FROM nodes WHERE uuid = '{}'",
            node_uuid(3)
        ))
        .await;
    assert_eq!(i3_node, [[i3.clone(), "active".to_string()]], "node 3 untouched");
    assert!(bmcs[0].power_actions().is_empty(), "the free node's BMC was told {:?}", bmcs[0].power_actions());

    // nova boot with the baremetal flavor (bm2ironic flavors updated its deploy images and cpu_arch):
    // of the free nodes, 1 matches it exactly, 6 (freed above) does not; the scheduler picks 1, Ironic
    // accepts the deploy and powers the machine on to PXE-boot the deploy ramdisk. Nothing calls back
    // (node 1's machine is a power state only, and Juno's deploy ramdisk is not built here): the
    // deploy waits there, and so does Nova's instance (BUILD, spawning)
    let out = plane.must(&["boot", "--flavor", "bm1", "--image", IMAGE, "bm-new"]);
    let new = table(&out).get("id").cloned().unwrap_or_else(|| panic!("nova boot: no id: {out}"));
    let t = Instant::now();
    let deploying = format!("SELECT CASE WHEN instance_uuid = '{new}' AND provision_state = 'wait call-back' THEN 1 ELSE 0 END FROM nodes WHERE uuid = '{}'", node_uuid(1));
    while tgt.scalar_i64(&deploying).await != 1 {
        // the scheduler finding no node (NoValidHost) puts the instance in ERROR at once: say so
        let faults = nova.rows(&format!("SELECT message FROM instance_faults WHERE instance_uuid = '{new}'")).await;
        assert!(faults.is_empty(), "nova boot: the instance failed: {faults:?}; log {}", plane.log().display());
        assert!(t.elapsed() < Duration::from_secs(120), "nova boot: node 1 is not deploying it after 120 s");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let shown = plane.show(&new);
    assert_eq!(
        (
            shown["status"].as_str(),
            shown["OS-EXT-STS:task_state"].as_str(),
            shown["OS-EXT-SRV-ATTR:hypervisor_hostname"].as_str()
        ),
        ("BUILD", "spawning", node_uuid(1).as_str()),
        "nova boot: {shown:?}"
    );
    let ii = tgt
        .rows(&format!("SELECT instance_info, driver_info FROM nodes WHERE uuid = '{}'", node_uuid(1)))
        .await
        .remove(0);
    assert!(ii[0].contains(IMAGE) && ii[1].contains(KERNEL) && ii[1].contains(RAMDISK), "node 1: {ii:?}");
    assert_eq!(
        bmcs[0].power_actions().last().map(String::as_str),
        Some("power on"),
        "node 1's machine is powered on to deploy"
    );
    let others = tgt.scalar_i64(&format!("SELECT COUNT(*) FROM nodes WHERE instance_uuid = '{new}'")).await;
    assert_eq!(others, 1, "one node has the new instance");
    eprintln!("nova boot: scheduled onto node 1 and its deploy started {:?} after the call", t.elapsed());
    // node 1's VM PXE-boots Juno's deploy config: the deploy kernel from Glance, its command line
    // naming this deploy (deployment_id = the node, the Ironic API to call back)
    let deploy = format!("deployment_id={}", node_uuid(1));
    let console = work.path().join("vm1/console.log");
    let t = Instant::now();
    loop {
        let c = String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).into_owned();
        if let Some(line) = c.lines().find(|l| l.contains("Command line:") && l.contains(&deploy)) {
            assert!(
                line.contains(&format!("ironic_api_url={}", juno.base)) && line.contains("console=ttyS0"),
                "{line}"
            );
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(240),
            "node 1's VM did not boot the deploy kernel:\n{}",
            c.chars().rev().take(1500).collect::<String>().chars().rev().collect::<String>()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    eprintln!("nova boot: node 1's VM booted the deploy kernel {:?} after the deploy started", t.elapsed());
    // a second `nova boot` of that flavor: node 1 is taken and node 6, free since the delete, fits no
    // flavor (the plan named it above): Juno's scheduler finds no host
    let out = plane.must(&["boot", "--flavor", "bm1", "--image", IMAGE, "bm-none"]);
    let none = table(&out).get("id").cloned().unwrap_or_else(|| panic!("nova boot: no id: {out}"));
    plane.wait_show(&none, &[("status", "ERROR")], 60, "the second nova boot").await;
    let faults = nova.rows(&format!("SELECT message FROM instance_faults WHERE instance_uuid = '{none}'")).await;
    assert!(faults.concat().iter().any(|m| m.contains("No valid host")), "the second boot: {faults:?}");
    let on = tgt.scalar_i64(&format!("SELECT COUNT(*) FROM nodes WHERE instance_uuid = '{none}'")).await;
    assert_eq!(on, 0, "a node took the second instance");
    // Glance served every image (Juno's conductor at the takeover and the deploy, after its admin
    // token from the real Keystone v2.0: no token, no image; Nova's API at the boot)
    let served = glance.api_log();
    for id in [KERNEL, RAMDISK, KERNEL_I, RAMDISK_I, IMAGE] {
        assert!(served.contains(&format!("/v1/images/{id}")), "Glance was not asked for {id}");
    }
    let log = std::fs::read_to_string(plane.log()).unwrap();
    assert!(!log.contains("bmc-pass-"), "an IPMI password in Nova's log: {}", plane.log().display());
    eprintln!("juno_nova: {:?} in all", t0.elapsed());
}
