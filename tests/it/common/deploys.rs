//! nova baremetal deploying for real (#45; docs/juno.md, "nova baremetal itself"): its compute host
//! (common/baremetal.rs) with a real Glance holding the deploy kernel and ramdisk (scripts/bootvm.sh's
//! kernel and `deploy-ramdisk`) and the instance image with its kernel and ramdisk, and Juno's own
//! `nova-baremetal-deploy-helper` (scripts/juno-deploy-helper.py: only its disk write and notify are
//! stubbed; the stub returns the root file system's uuid already on the machine's disk). A machine
//! is a QEMU VM behind a fake BMC that PXE-boots nova baremetal's tree (`view`, `machine`), or a BMC
//! only whose deploy ramdisk's one request the test sends (`Deployer::post`). Used by
//! juno_baremetal::deployed and by the rehearsal's SQL load (common/rehearsal.rs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::baremetal::{nova, BaremetalHost};
use super::bmc::{Bmc, BmcOptions, DeployVm, Vm};
use super::glance::Glance;
use super::juno::{juno_nova_sh, wait_for};
use super::netboot::plain;
use super::nova::{table, NovaPlane};
use super::ports::port;
use super::process::{wait_port, Guard};
use super::{Backend, TestDb};

/// nova baremetal's `pxe_append_params` here: its default and the serial console (the deploy
/// helper's port follows: `Deployer::append`).
pub const APPEND: &str = "nofb nomodeset vga=normal console=ttyS0";

/// The flavor nova baremetal's instances are built with (8 vCPUs, 16384 MB, 40 GB).
pub const FLAVOR: &str = "bm.juno";

/// nova baremetal's compute host, Glance and the deploy helper, up.
pub struct Deployer {
    pub host: BaremetalHost,
    pub glance: Glance,
    pub helper_port: u16,
    /// The helper's work dir: deploy-helper.conf, deploy-helper.log, stderr.log.
    pub helper_dir: PathBuf,
    helper: Option<Guard>,
}

impl Deployer {
    /// Starts Glance with the images of `boot` (scripts/bootvm.sh's dir), nova baremetal's compute
    /// host (nova_bm on MariaDB, its Nova database `nova` or a fresh SQLite one, its API behind the
    /// Keystone v2.0 on port `ks`), and the deploy helper, which hands the machines' disks the root
    /// uuid `root_uuid`. `defaults`: more `[DEFAULT]` lines of its nova.conf. None (after a loud
    /// skip) without Glance.
    pub async fn start(
        ks: u16,
        nova_db: Option<TestDb>,
        boot: &Path,
        root_uuid: &str,
        defaults: &str,
    ) -> Option<Deployer> {
        let glance = Glance::start_juno(boot, "deploy-ramdisk").await?;
        let helper_port = port();
        let more = format!(
            "\n[DEFAULT]\nglance_api_servers = 127.0.0.1:{}\n{defaults}\n[baremetal]\n\
             pxe_append_params = {APPEND} bm2.deploy_port={helper_port}\npxe_deploy_timeout = 900\n",
            glance.port
        );
        let host = BaremetalHost::start_on(ks, Backend::MySql, nova_db, &more).await;
        let helper_dir = tempfile::tempdir().unwrap().keep();
        let conf = helper_dir.join("deploy-helper.conf");
        std::fs::write(
            &conf,
            format!(
                "[DEFAULT]\nrpc_backend = fake\nlog_file = {}\ndebug = true\n\n[baremetal]\nsql_connection = {}\n",
                helper_dir.join("deploy-helper.log").display(),
                super::db::sqlalchemy_url(&host.nova_bm.admin_url)
            ),
        )
        .unwrap();
        let helper = Guard::spawn(
            juno_nova_sh()
                .args(["deploy-helper", conf.to_str().unwrap(), &helper_port.to_string()])
                .env("BM2_STUB_ROOT_UUID", root_uuid)
                .stdout(std::process::Stdio::null())
                .stderr(std::fs::File::create(helper_dir.join("stderr.log")).unwrap()),
        );
        wait_port(helper_port, "nova baremetal's deploy helper").await;
        Some(Deployer { host, glance, helper_port, helper_dir, helper: Some(helper) })
    }

    /// The `pxe_append_params` nova baremetal writes into its PXE configs here.
    pub fn append(&self) -> String {
        format!("{APPEND} bm2.deploy_port={}", self.helper_port)
    }

    /// The helper's log so far.
    pub fn helper_log(&self) -> String {
        std::fs::read_to_string(self.helper_dir.join("deploy-helper.log")).unwrap_or_default()
    }

    /// Stops the deploy helper.
    pub fn stop_helper(&mut self) {
        self.helper = None;
    }

    /// Node `id`'s deploy ramdisk's one request, as the machines' ramdisk sends it
    /// (scripts/bootvm.sh), for a machine that is a BMC only: once nova baremetal has written the
    /// deployment's key and powered the machine on (`prepared`).
    pub async fn post(&self, id: i64) {
        let prepared = format!("SELECT CASE WHEN COUNT(*) = 1 THEN 1 ELSE 0 END FROM bm_nodes WHERE id = {id} AND task_state = 'prepared' AND deploy_key IS NOT NULL");
        let log = self.host.plane.log();
        wait_for(&self.host.nova_bm, &prepared, 600, &format!("node {id} prepared for its deploy"), &log).await;
        let r =
            self.host.nova_bm.rows(&format!("SELECT deploy_key, instance_uuid FROM bm_nodes WHERE id = {id}")).await;
        let (key, inst) = (&r[0][0], &r[0][1]);
        let posted = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{}/", self.helper_port))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("i={id}&k={key}&a=127.0.0.1&n=iqn-{inst}&e="))
            .send()
            .await
            .unwrap();
        assert_eq!(posted.status().as_u16(), 200, "the deploy helper took node {id}'s deployment");
    }
}

/// Node `id`'s machine: a QEMU VM (reaching this host's loopback at 10.0.2.2, for the deploy helper)
/// behind its BMC on `bmc`:623 (password `password`), MAC `mac`, off, PXE-booting from the TFTP root
/// `net`; its files in `work`/vm`id`.
pub fn machine(
    venv: &Path,
    boot: &Path,
    work: &Path,
    net: &Path,
    (id, bmc, mac): (i64, &str, &str),
    password: &str,
) -> Bmc {
    let accel = std::fs::read_to_string(boot.join("accel")).map(|a| a.trim().to_string()).unwrap_or("tcg".into());
    let dir = work.join(format!("vm{id}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(boot.join("disk.img"), dir.join("disk.img")).unwrap();
    let mut o = BmcOptions::new(venv, password).at(bmc, 623);
    o.vm = Some(Vm { dir: dir.clone(), disk: dir.join("disk.img"), tftp: net.to_path_buf(), mac: mac.into(), accel });
    o.deploy = Some(DeployVm { memory_mib: 256, disk_gib: 0, hostfwd: vec![], reach_host: true, boot_http: None });
    o.stderr = Some(dir.join("bmc.stderr"));
    Bmc::start(o)
}

/// A TFTP server's view (QEMU's) of a PXE tree whose configs name files by absolute path: the loader,
/// `pxelinux.cfg` of the tree, and the tree itself at its own absolute path under the view.
pub fn view(view: &Path, tree: &Path, boot: &Path) {
    std::fs::create_dir_all(view).unwrap();
    for f in ["pxelinux.0", "ldlinux.c32"] {
        std::fs::copy(boot.join(f), view.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(tree.join("pxelinux.cfg"), view.join("pxelinux.cfg")).unwrap();
    let mirror = view.join(tree.strip_prefix("/").unwrap());
    std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(tree, &mirror).unwrap();
}

/// A VM's serial console (its dir `vm`), as plain text.
pub fn console(vm: &Path) -> String {
    plain(&String::from_utf8_lossy(&std::fs::read(vm.join("console.log")).unwrap_or_default()))
}

/// Waits until the VM's console shows `marker` `n` times; the console's end on timeout.
pub async fn wait_marker(vm: &Path, marker: &str, n: usize, secs: u64, what: &str) -> Duration {
    let t0 = Instant::now();
    while console(vm).matches(marker).count() < n {
        if t0.elapsed() > Duration::from_secs(secs) {
            let c = console(vm);
            let tail: String = c.chars().rev().take(3000).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("{what}: no boot of the instance (marker {n}) on {} after {secs} s:\n{tail}", vm.display());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    t0.elapsed()
}

/// Waits until `nova show NAME` has every (field, value) of `want`, or its status is ERROR.
pub async fn wait_status(p: &NovaPlane, name: &str, want: &[(&str, &str)], secs: u64) -> Duration {
    let t0 = Instant::now();
    loop {
        let s = table(&nova(p, &["show", name]));
        if want.iter().all(|(k, v)| s.get(*k).map(String::as_str) == Some(*v)) {
            return t0.elapsed();
        }
        if s.get("status").map(String::as_str) == Some("ERROR") || t0.elapsed() > Duration::from_secs(secs) {
            panic!("{name}: not {want:?} after {:?}: {s:?}; log {}", t0.elapsed(), p.log().display());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
