//! After the window the cloud provisions again (#46): on the real Ironic 39, after `bm2ironic migrate`,
//! a **free migrated node** is deployed with a whole-disk image from Glance through Ironic's API
//! (`direct` deploy, ironic-python-agent in a ramdisk built here, scripts/ipa-ramdisk.sh) -> `active`,
//! and its machine boots the written image from its own disk (the image's marker on the console); torn
//! down with automated cleaning (the disks' metadata erased) -> `available`; deployed again with
//! another image.
//! Then a **migrated instance's node** (its next boot learned: `ramdisk` deploy, taken over by the
//! conductor) is torn down, as Nova's delete asks, and cleaned -> `available`, its PXE files gone.
//!
//! The machines are QEMU VMs (TCG here: no KVM) behind fake IPMI BMCs (scripts/fakebmc.py), one
//! running at a time. They PXE-boot the conductor's TFTP root through QEMU's user network: the tree
//! served over HTTP on this host's loopback (the NIC's iPXE loads pxelinux.0 from it, and pxelinux its
//! config, kernel and initrd through iPXE: the agent's 70 MB ramdisk crawled over QEMU's lock-step
//! TFTP on a loaded machine), the same files pxelinux reads over TFTP. The network also carries the
//! agent's traffic: the agent reaches Ironic's API and the image server on this host's
//! loopback at 10.0.2.2, and the conductor reaches the agent at 127.0.0.1:<port> (a `hostfwd`). A URL
//! both sides use (Ironic's API, `[deploy] http_url`) names `bm2-deploy-host`: 127.0.0.1 for the
//! conductor (its /etc/hosts in a mount namespace of its own), 10.0.2.2 inside the VM (the ramdisk's
//! /init). The host never sends to a 10.x address.
//!
//! The machines boot BIOS (SeaBIOS, pxelinux), as nova baremetal's did: Ironic 39 deploys them only
//! because every migrated node carries `capabilities` `boot_mode:bios` (docs/mapping.md 2.13). Without
//! it Ironic writes a UEFI (GRUB) deploy config the machine never loads: the check at the free node's
//! `wait call-back` fails then (and, before it, the check of the rows the migration wrote).
//!
//! Needs BM2IRONIC_TEST_IPA_DIR (scripts/ipa-ramdisk.sh), BM2IRONIC_TEST_BOOT_DIR (scripts/bootvm.sh:
//! pxelinux, the instance's kernel and disk, kvm or tcg), the Ironic test venv, ipmitool, unshare, and
//! the Juno tests' Glance and Keystone 12.0.3 (common/glance.rs: PyPI glance==15.0.2, v2 API too).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

mod cloud;

use crate::common::glance::Glance;
use crate::common::ironic::{self, start_ironic, IronicOptions};
use crate::common::juno::{keystone_v2, KEYSTONE_V2_PASSWORD};
use crate::common::netboot::{pxe_mac_name, write_nova_tftp};
use crate::common::ports::port;
use crate::common::process::{wait_port, Guard};
use crate::common::{bm, server_env, skip, Backend, TestDb, IRONIC_VENV};
use cloud::{
    has_partitions, nova_bm, patch, provision, Machine, States, FREE, FREE_BMC, FREE_MAC, HOST_NAME, INSTANCE, NODE,
    NODE_BMC, NODE_MAC, VM_HOST_ADDR,
};

/// scripts/bootvm.sh: pxelinux.0, ldlinux.c32, vmlinuz, initramfs, disk.img, root-uuid, accel.
const BOOT_DIR: &str = "BM2IRONIC_TEST_BOOT_DIR";

/// scripts/ipa-ramdisk.sh: deploy.kernel, deploy.initramfs, image-first.raw, image-second.raw (and
/// their .sha256), image-marker.
pub const IPA_DIR: &str = "BM2IRONIC_TEST_IPA_DIR";

/// The two whole-disk images in Glance (the IPA dir's image-first.raw and image-second.raw).
const IMAGES: [(&str, &str); 2] =
    [("first", "0046f157-0000-4000-8000-000000000001"), ("second", "0046f157-0000-4000-8000-000000000002")];

/// What Nova's driver gives a node to deploy: the Glance image and the flavor's root disk. Ironic
/// reads the image from Glance (whole-disk: no kernel_id / ramdisk_id), caches it, serves it at
/// `[deploy] http_url`; the agent checks Glance's md5 `checksum` (Glance 15 has no os_hash_*).
fn image_info(name: &str) -> serde_json::Value {
    let id = IMAGES.iter().find(|(n, _)| *n == name).unwrap().1;
    json!({"image_source": id, "root_gb": 1})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_migrated_free_node_is_deployed_cleaned_and_redeployed_and_an_instance_node_torn_down() {
    let (Some(ipa), Some(boot), Some(venv)) = (server_env(IPA_DIR), server_env(BOOT_DIR), server_env(IRONIC_VENV))
    else {
        return;
    };
    if Command::new("ipmitool").arg("-V").output().is_err() {
        skip("ipmitool is not installed: scripts/ironic.sh install installs it");
        return;
    }
    let (ipa, boot, venv) = (PathBuf::from(ipa), PathBuf::from(boot), PathBuf::from(venv));
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap().trim().to_string();
    let (root_uuid, marker) = (read(&boot, "root-uuid"), read(&ipa, "image-marker"));
    let accel = read(&boot, "accel");
    // one deploy under TCG took ~143 s on an idle machine; the other tests share its two cores
    let slow = if accel == "kvm" { 1 } else { 4 };
    let step = Duration::from_secs(180 * slow);
    let work = tempfile::tempdir().unwrap();
    let started = Instant::now();

    // Ironic's work dir and its TFTP root, which the machines' network serves from the start
    let ironic_dir = work.path().join("ironic");
    let tftp_root = ironic_dir.join("tftpboot");
    std::fs::create_dir_all(&tftp_root).unwrap();
    // the instance's boot as nova baremetal left it (a copy of the compute host's tree)
    let tree = work.path().join("nova-tftpboot");
    write_nova_tftp(&tree, &work.path().join("compute-view"), &boot, &root_uuid, &[INSTANCE], (NODE_MAC, INSTANCE));

    // the migration, by SQL, into a fresh Ironic 39 database
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "deploysrc", &nova_bm()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "deploytgt").await else { return };
    let out = bm(["migrate", "--via", "db", "--yes", "--default-arch", "x86_64"])
        .arg("--deploy-kernel")
        .arg(format!("file://{}", ipa.join("deploy.kernel").display()))
        .arg("--deploy-ramdisk")
        .arg(format!("file://{}", ipa.join("deploy.initramfs").display()))
        .arg("--tftp-root")
        .arg(&tree)
        .logs(&work.path().join("audit"))
        .source(&src)
        .target(&tgt)
        .run();
    assert!(out.success(), "migrate exit {}\n{}", out.code, out.text());
    let caps = tgt.rows(&format!("SELECT uuid, properties FROM nodes WHERE uuid IN ('{NODE}', '{FREE}')")).await;
    for row in &caps {
        let props: serde_json::Value = serde_json::from_str(&row[1]).unwrap();
        assert_eq!(props["capabilities"], "boot_mode:bios", "no BIOS boot mode written: {row:?}");
    }

    // Glance (behind Keystone 12.0.3) with the images, as an operator uploads them
    let Some(glance) = Glance::start(&[]).await else { return };
    let Some(keystone) = keystone_v2() else { return };
    for (name, id) in IMAGES {
        glance.upload_disk(id, &ipa.join(format!("image-{name}.raw"))).await;
    }

    // the image server ([deploy] http_root) and the real Ironic 39, the machines' name for this host
    // its own; automated cleaning on
    let http = port();
    std::fs::create_dir_all(ironic_dir.join("httpboot")).unwrap();
    let _http = Guard::spawn(
        Command::new(venv.join("bin/python"))
            .args(["-m", "http.server", &http.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(ironic_dir.join("httpboot"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.path().join("http.log")).unwrap()),
    );
    wait_port(http, "the image server").await;
    let ironic = start_ironic(IronicOptions {
        dir: Some(ironic_dir.clone()),
        sync_interval: Some(5),
        takeover_interval: Some(2),
        force_power_sync: Some(false),
        // file:// images only from these: the test's files and the IPA dir (the deploy images, the images)
        file_paths: Some(PathBuf::from(format!("{},{}", work.path().display(), ipa.display()))),
        pxe_loaders: Some(boot.clone()),
        api_host: Some(HOST_NAME.into()),
        http_url: Some(format!("http://{HOST_NAME}:{http}")),
        automated_clean: Some(true),
        // Ironic's own default: the machines' BMCs share a loaded host (no BMC here is dead)
        ipmi_retry: Some(60),
        hosts: vec![(HOST_NAME.into(), "127.0.0.1".into())],
        glance: Some((
            format!("http://127.0.0.1:{}", glance.port),
            format!("http://127.0.0.1:{keystone}/v3"),
            KEYSTONE_V2_PASSWORD.into(),
        )),
        ..IronicOptions::new(&venv, &tgt.admin_url)
    })
    .await;
    let base = ironic.base.clone();
    let log = || ironic.log_tail();

    // the conductor's PXE tree over HTTP too: the machines' iPXE loads pxelinux from it, and pxelinux
    // the config, kernel and initrd through iPXE (the agent's ramdisk, 70 MB, crosses four times; over
    // QEMU's TFTP, lock-step, it crawled under TCG on a loaded machine)
    let pxe_http = port();
    let _pxe_http = Guard::spawn(
        Command::new(venv.join("bin/python"))
            .args(["-m", "http.server", &pxe_http.to_string(), "--bind", "127.0.0.1", "--directory"])
            .arg(&tftp_root)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.path().join("pxe-http.log")).unwrap()),
    );
    wait_port(pxe_http, "the PXE tree's HTTP server").await;
    // the machines, powered off (one runs at a time): the instance's disk as nova baremetal left it
    let net = (tftp_root.as_path(), pxe_http, accel.as_str());
    let free = Machine::start(&venv, work.path(), "free", (FREE_BMC, FREE_MAC), net, None, port());
    let inst =
        Machine::start(&venv, work.path(), "instance", (NODE_BMC, NODE_MAC), net, Some(&boot.join("disk.img")), port());
    assert!(has_partitions(&inst.mbr()), "the instance's disk has no partitions to erase");
    for m in [&free, &inst] {
        let args = format!(
            "nofb vga=normal console=ttyS0 ipa-advertise-host=127.0.0.1 ipa-advertise-port={} bm2.host={HOST_NAME}={VM_HOST_ADDR}",
            m.agent_port
        );
        let node = if m.name == "free" { FREE } else { NODE };
        patch(&base, node, json!([{"op": "add", "path": "/driver_info/kernel_append_params", "value": args}])).await;
    }
    // the conductor has taken the instance node over (its PXE config written) and read both powers
    let deadline = Instant::now() + Duration::from_secs(90);
    while !tftp_root.join(NODE).join("config").exists() {
        assert!(Instant::now() < deadline, "no takeover of the instance node in 90 s\n{}", log());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // 1. the free node deployed with the first image, as Nova's driver asks: instance_info, then active
    let t = Instant::now();
    patch(&base, FREE, json!([{"op": "add", "path": "/instance_info", "value": image_info("first")}])).await;
    provision(&base, FREE, "active").await;
    let mut deploy1 = States::new();
    let mut checked_pxe = false;
    let link = tftp_root.join("pxelinux.cfg").join(pxe_mac_name(FREE_MAC));
    let ctx = || format!("{}\n{}", free.tail(), log());
    deploy1
        .wait(
            &base,
            FREE,
            "active",
            step * 2,
            |n| {
                // BIOS: the deploy's PXE config is pxelinux's, linked from the MAC; with UEFI Ironic
                // writes GRUB's instead and the BIOS machine never finds one
                if !checked_pxe && n["provision_state"] == "wait call-back" {
                    let config = std::fs::read_to_string(&link).unwrap_or_default();
                    assert!(
                        config.starts_with("default deploy")
                            && config.contains(&format!("kernel {FREE}/deploy_kernel")),
                        "no BIOS (pxelinux) deploy config for the free node at {}: {config:?}\ntftp root: {:?}\n{}",
                        link.display(),
                        std::fs::read_dir(&tftp_root).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>(),
                        log()
                    );
                    checked_pxe = true;
                }
            },
            ctx,
        )
        .await;
    let deployed1 = t.elapsed();
    assert!(checked_pxe, "the deploy never waited for the agent: {}", deploy1.line());
    assert!(free.wait_console(&marker, 1, step), "the deployed image did not boot\n{}", free.tail());
    let booted1 = t.elapsed();
    let m = free.lines(&marker);
    assert!(m[0].contains("bm2.image=first"), "{m:?}");
    assert!(free.count("BM2IRONIC-IPA-STARTING") >= 1, "{}", free.tail());
    assert!(has_partitions(&free.mbr()), "the image's partition table is not on the disk");
    let from_glance = format!("GET /v2/images/{}/file", IMAGES[0].1);
    assert!(glance.api_log().contains(&from_glance), "the conductor did not read the image from Glance");

    // 2. torn down with automated cleaning: the metadata erased, available
    let t = Instant::now();
    provision(&base, FREE, "deleted").await;
    let mut clean1 = States::new();
    clean1.wait(&base, FREE, "available", step * 2, |_| {}, || format!("{}\n{}", free.tail(), log())).await;
    let cleaned1 = t.elapsed();
    assert!(clean1.seen.iter().any(|(s, _)| s == "cleaning" || s == "clean wait"), "no cleaning: {}", clean1.line());
    assert!(!has_partitions(&free.mbr()), "cleaning left the partition table: {:?}", &free.mbr()[440..512]);
    assert_eq!(free.count("BM2IRONIC-IPA-STARTING"), 2, "the agent booted once for cleaning\n{}", free.tail());

    // 3. deployed again, with the second image
    let t = Instant::now();
    patch(&base, FREE, json!([{"op": "add", "path": "/instance_info", "value": image_info("second")}])).await;
    provision(&base, FREE, "active").await;
    let mut deploy2 = States::new();
    deploy2.wait(&base, FREE, "active", step * 2, |_| {}, || format!("{}\n{}", free.tail(), log())).await;
    assert!(free.wait_console(&marker, 2, step), "the second image did not boot\n{}", free.tail());
    let redeployed = t.elapsed();
    let m = free.lines(&marker);
    assert!(m[1].contains("bm2.image=second"), "{m:?}");
    // one machine at a time: this one off now
    let (status, body) = cloud::call(
        &base,
        reqwest::Method::PUT,
        &format!("/v1/nodes/{FREE}/states/power"),
        json!({"target": "power off"}),
    )
    .await;
    assert_eq!(status, 202, "{body}");

    // 4. the migrated instance's node torn down (Nova's delete) and cleaned
    let node = ironic::get(&base, &format!("/v1/nodes/{NODE}")).await;
    assert_eq!(
        (&node["provision_state"], &node["deploy_interface"]),
        (&json!("active"), &json!("ramdisk")),
        "{node:#}"
    );
    let t = Instant::now();
    provision(&base, NODE, "deleted").await;
    let mut teardown = States::new();
    teardown.wait(&base, NODE, "available", step * 2, |_| {}, || format!("{}\n{}", inst.tail(), log())).await;
    let torn_down = t.elapsed();
    assert!(teardown.seen.iter().any(|(s, _)| s == "clean wait"), "no cleaning: {}", teardown.line());
    assert_eq!(inst.count("BM2IRONIC-IPA-STARTING"), 1, "{}", inst.tail());
    assert!(!has_partitions(&inst.mbr()), "cleaning left nova baremetal's partition table");
    let node = ironic::get(&base, &format!("/v1/nodes/{NODE}")).await;
    assert!(node["instance_uuid"].is_null() && node["last_error"].is_null(), "{node:#}");
    assert!(!tftp_root.join(NODE).exists(), "the instance's PXE files are still there");
    assert!(!tftp_root.join("pxelinux.cfg").join(pxe_mac_name(NODE_MAC)).exists(), "its MAC link is still there");

    eprintln!(
        "deploy test ({accel}): deploy {:.0?} (states: {}), booted from disk at {:.0?}; undeploy + clean {:.0?} ({}); \
         redeploy to the marker {:.0?} ({}); instance node torn down + cleaned {:.0?} ({}); whole test {:.0?}",
        deployed1,
        deploy1.line(),
        booted1,
        cleaned1,
        clean1.line(),
        redeployed,
        deploy2.line(),
        torn_down,
        teardown.line(),
        started.elapsed()
    );
}
