//! The stage of the upgrade rehearsal (tests/it/rehearsal.rs), whose runbook commands are
//! scripts/rehearse-upgrade.sh: the cloud as nova baremetal left it, once per load, on the test
//! MariaDB (a Nova database of Juno's own `nova-manage db sync` schema each), an ironic.conf (Ironic
//! 39 behind the test Keystone, a region of its own with Ironic's endpoint, a clouds.yaml) and a
//! fake BMC per live node on 127.0.<net>.<id>:623 (db: 3, api: 4). The SQL load's cloud is made by
//! nova baremetal itself (real.rs: its API enrolled the nodes, its PXE driver deployed the instances,
//! node 2's machine a QEMU VM that booted its instance; the nova.conf it ran with is the operator's);
//! the API load's is built in SQL (staged.rs: shapes nova baremetal's API cannot make, two old
//! compute hosts). The two loads share no server state, so they run at once. `Cloud::step` runs one
//! step of the script with these files given.

mod real;
mod staged;
mod world;

pub use world::{instance_uuid, mac, node_uuid, old_host, Instance, Node, Rehearsal, NEW_HOST, NODES, VM_NODE};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::bmc::Bmc;
use super::cli::Outcome;
use super::db::{sqlalchemy_url, Backend, TestDb};
use super::env::repo_file;
use super::ironic::{self, start_ironic, Ironic, IronicOptions};
use super::juno::{juno_nova_sh, JUNO_NOVA_VENV};
use super::keystone::{self, ADMIN_PASSWORD};
use super::netboot;
use super::nova;
use super::ports::port;
use super::process::{wait_port, Guard};

/// One load's cloud: its databases, config files, Ironic's settings and region.
pub struct Cloud {
    pub via: &'static str,
    /// This load's outputs (the script's OUT), its etc/ and the Ironic's work dir ironic/.
    pub dir: PathBuf,
    pub nova_bm: TestDb,
    pub nova: TestDb,
    pub ironic_db: TestDb,
    pub ironic: IronicOptions,
    pub nova_conf: PathBuf,
    pub ironic_conf: PathBuf,
    /// The nova.conf `bm2ironic config` writes for the Ironic driver's nova-compute.
    pub compute_conf: PathBuf,
    pub clouds: PathBuf,
    nova_rc: PathBuf,
    bin: PathBuf,
    osc: PathBuf,
    novaclient: PathBuf,
    kernel: String,
    ramdisk: String,
    /// Its machines' BMCs, by node id.
    pub bmcs: Vec<(i64, Bmc)>,
    /// Its nodes, and by nova_bm id each node's uuid and its instance's.
    pub nodes: Vec<Node>,
    uuids: BTreeMap<i64, (String, Option<String>)>,
    /// The node whose machine is switched off at its BMC in step 9 (a QEMU VM in the SQL load).
    pub vm_node: i64,
    /// The SQL load's: the VM's files and the network's TFTP root it boots from (a symlink).
    vm_dir: PathBuf,
    pub network_tftp: Option<PathBuf>,
    /// What must outlive the stage (the SQL load's Glance, nova baremetal's TFTP tree).
    _keep: Option<(super::glance::Glance, tempfile::TempDir)>,
}

impl Cloud {
    /// The cloud as nova baremetal left it, on fresh databases, for the load `via` (db or api).
    pub async fn stage(r: &Rehearsal, via: &'static str) -> Cloud {
        let net = if via == "db" { 3 } else { 4 };
        let dir = r.work.join(via);
        let etc = dir.join("etc");
        for d in [&etc, &dir.join("nova-compute")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let juno_nova = TestDb::create(Backend::MySql, "rhnova").await.unwrap();
        juno_nova.load_sql_file(&r.juno_dump()).await;
        let ironic_db = TestDb::create(Backend::MySql, "rhironic").await.unwrap();
        ironic_db.exec(&format!("ALTER DATABASE {} CHARACTER SET utf8mb3", ironic_db.name)).await;
        let nova_conf = etc.join("nova.conf");
        let (nova_bm, nova, tree, bmcs, keep, network_tftp, uuids, nodes, vm_node, glance);
        if via == "db" {
            let m = real::stage(r, &dir, juno_nova).await;
            (nova_bm, nova, tree, bmcs, network_tftp) = (m.nova_bm, m.nova, m.tftp, m.bmcs, Some(m.network_tftp));
            assert_eq!(m.nova_conf, nova_conf);
            (uuids, nodes, vm_node) = (m.uuids, real::REAL.to_vec(), real::REAL_VM);
            // Ironic reads the instances' images from Glance, as Keystone's admin (Keystone 12.0.3's v3)
            glance = Some((
                format!("http://127.0.0.1:{}", m.glance.port),
                format!("http://127.0.0.1:{}/v3", r.keystone_v2),
                super::juno::KEYSTONE_V2_PASSWORD.to_string(),
            ));
            keep = Some((m.glance, m.keep));
        } else {
            nova = juno_nova;
            nova_bm = TestDb::with_fixture(Backend::MySql, "rhbm", &staged::nova_bm(&r.bmc_secret, net)).await.unwrap();
            staged::juno_rows(&nova, &r.work.join("image.qcow2")).await;
            write_private(
                &nova_conf,
                &format!(
                    "[DEFAULT]\nhost = bm-compute-1\ncompute_driver = nova.virt.baremetal.driver.BareMetalDriver\n\n\
                     [database]\nconnection = {}\n\n[baremetal]\nsql_connection = {}\npower_manager = nova.virt.baremetal.ipmi.IPMI\n\
                     deploy_kernel = nova-bm-deploy-kernel\ndeploy_ramdisk = nova-bm-deploy-ramdisk\n\
                     flavor_extra_specs = cpu_arch:x86_64\ntftp_root = {}\n",
                    nova.admin_url,
                    nova_bm.reader_url,
                    r.nova_tftp.display()
                ),
            );
            (tree, bmcs, keep, network_tftp, glance) =
                (r.nova_tftp.clone(), staged::machines(r, &dir, net), None, None, None);
            let instance = |n: &Node| (n.instance != Instance::None).then(|| instance_uuid(n.id));
            uuids = NODES.iter().map(|n| (n.id, (node_uuid(n.id), instance(n)))).collect();
            (nodes, vm_node) = (NODES.to_vec(), VM_NODE);
        }
        // Ironic 39 behind Keystone, `ipmi`; power sync every 5 s, not forced; takeover every 2 s;
        // file:// images from the copied tree only (Ironic 39's adopt fails on an allowed file://
        // image_source: docs/api-and-keystone.md), the loader from the boot dir
        let port = r.ports[usize::from(via == "api")];
        let ironic = IronicOptions {
            keystone: Some(r.keystone.clone()),
            port: Some(port),
            dir: Some(dir.join("ironic")),
            sync_interval: Some(5),
            takeover_interval: Some(2),
            force_power_sync: Some(false),
            file_paths: Some(tree),
            pxe_loaders: Some(r.boot.clone()),
            glance,
            // Ironic's own default: the machines' BMCs share a loaded host (no BMC here is dead)
            ipmi_retry: Some(60),
            ..IronicOptions::new(&r.venv, &ironic_db.admin_url)
        };
        std::fs::create_dir_all(dir.join("ironic")).unwrap();
        let ironic_conf = etc.join("ironic.conf");
        std::fs::copy(ironic::write_conf(&ironic, &dir.join("ironic"), port), &ironic_conf).unwrap();
        std::fs::set_permissions(&ironic_conf, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();

        // a system-scoped cloud in this load's region
        let region = r.region(via);
        let clouds = dir.join("clouds.yaml");
        write_private(
            &clouds,
            &format!(
                "clouds:\n  rehearsal:\n    auth:\n      auth_url: {}\n      username: admin\n      password: {ADMIN_PASSWORD}\n      user_domain_name: Default\n      system_scope: all\n    region_name: {region}\n    interface: public\n    identity_api_version: 3\n",
                r.keystone
            ),
        );
        // the operator's openrc for python-novaclient: the project-scoped admin
        let nova_rc = dir.join("admin-openrc.sh");
        write_private(
            &nova_rc,
            &format!(
                "export OS_AUTH_URL={} OS_USERNAME=admin OS_PASSWORD={ADMIN_PASSWORD} OS_PROJECT_NAME=admin OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_IDENTITY_API_VERSION=3\n",
                r.keystone
            ),
        );
        Cloud {
            via,
            compute_conf: dir.join("nova-compute/nova.conf"),
            dir,
            nova_bm,
            nova,
            ironic_db,
            ironic,
            nova_conf,
            ironic_conf,
            clouds,
            nova_rc,
            bin: assert_cmd::cargo::cargo_bin!("bm2ironic").to_path_buf(),
            osc: r.osc.clone(),
            novaclient: r.novaclient.clone(),
            kernel: r.kernel.clone(),
            ramdisk: r.ramdisk.clone(),
            bmcs,
            nodes,
            uuids,
            vm_dir: r.work.join(format!("vm{vm_node}")),
            vm_node,
            network_tftp,
            _keep: keep,
        }
    }

    /// The nodes Ironic gets (all but the soft-deleted ones).
    pub fn live(&self) -> impl Iterator<Item = Node> + '_ {
        self.nodes.iter().copied().filter(|n| n.deleted != Some(true))
    }

    pub fn node_uuid(&self, id: i64) -> String {
        self.uuids[&id].0.clone()
    }

    pub fn instance_uuid(&self, id: i64) -> String {
        self.uuids[&id].1.clone().unwrap_or_else(|| panic!("{}: node {id} has no instance", self.via))
    }

    /// The compute host node `id`'s instance ran on.
    pub fn old_host(&self, id: i64) -> &'static str {
        if self.via == "db" {
            nova::HOST
        } else {
            old_host(id)
        }
    }

    /// The old compute hosts.
    pub fn old_hosts(&self) -> Vec<&'static str> {
        let mut hosts: Vec<&str> = self.live().map(|n| self.old_host(n.id)).collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }

    /// The VM's serial console (the SQL load's), as plain text.
    pub fn console(&self) -> String {
        let f = self.vm_dir.join("console.log");
        netboot::plain(&String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()))
    }

    pub fn bmc(&self, id: i64) -> &Bmc {
        &self.bmcs.iter().find(|(i, _)| *i == id).unwrap().1
    }

    /// Every power action its BMCs were asked for so far: (node, action).
    pub fn power_actions(&self) -> Vec<(i64, String)> {
        self.bmcs.iter().flat_map(|(id, b)| b.power_actions().into_iter().map(|a| (*id, a))).collect()
    }

    pub fn ironic_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ironic.port.unwrap())
    }

    pub fn ironic_log(&self) -> PathBuf {
        self.dir.join("ironic/ironic.log")
    }

    pub async fn start_ironic(&self) -> Ironic {
        start_ironic(self.ironic.clone()).await
    }

    /// The environment of scripts/rehearse-upgrade.sh for this cloud (its inputs: the top of it).
    pub fn script(&self, args: &[&str]) -> Command {
        let mut c = Command::new("bash");
        c.arg(repo_file("scripts/rehearse-upgrade.sh")).args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("OS_") || k.starts_with("BM2IRONIC_") {
                c.env_remove(k);
            }
        }
        let s = |p: &Path| p.display().to_string();
        if self.via == "api" {
            // the SQL-built nova.conf is bm-compute-1's: its flavor_extra_specs give that host's
            // cpu_arch only
            c.env("ARCH", "bm-compute-2=x86_64");
        }
        c.envs([
            ("NOVA_CONF", s(&self.nova_conf)),
            ("IRONIC_CONF", s(&self.ironic_conf)),
            ("DEPLOY_KERNEL", self.kernel.clone()),
            ("DEPLOY_RAMDISK", self.ramdisk.clone()),
            ("VIA", self.via.into()),
            ("OS_CLOUD", "rehearsal".into()),
            ("OS_CLIENT_CONFIG_FILE", s(&self.clouds)),
            ("IRONIC_URL", self.ironic_url()),
            ("IRONIC_LOG", s(&self.ironic_log())),
            ("NEW_HOST", NEW_HOST.into()),
            ("NEW_NOVA_CONF", s(&self.compute_conf)),
            ("NOVA_RC", s(&self.nova_rc)),
            ("OUT", s(&self.dir)),
            ("BM2IRONIC_BIN", s(&self.bin)),
            ("IRONIC_DBSYNC", s(&self.ironic.venv.join("bin/ironic-dbsync"))),
            ("OPENSTACK", s(&self.osc.join("bin/openstack"))),
            ("NOVA", s(&self.novaclient.join("bin/nova"))),
            ("NOVA_API_RC", s(&self.nova_api_rc())),
            ("NOVA_API", s(&nova::juno_nova_client())),
            ("PYTHONWARNINGS", "ignore".into()),
        ]);
        c
    }

    /// Runs one step of the script (`args`: the step and its argument); it must succeed.
    pub fn step(&self, args: &[&str]) -> Outcome {
        self.step_env(args, &[])
    }

    /// `step` with more inputs in its environment.
    pub fn step_env(&self, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let t0 = std::time::Instant::now();
        let out = Outcome::of(self.script(args).envs(env.iter().copied()).stdin(Stdio::null()));
        eprintln!("rehearsal: {} load, step {}: {:.1?}", self.via, args.join(" "), t0.elapsed());
        assert!(
            out.success(),
            "rehearse-upgrade.sh {} ({} load): exit {}\n{}",
            args.join(" "),
            self.via,
            out.code,
            out.text()
        );
        out
    }

    /// A file the script wrote into this load's outputs.
    pub fn output(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_else(|e| panic!("{name} ({} load): {e}", self.via))
    }

    /// Juno's Nova control plane (`juno.sh nova-all`: nova-api, -conductor, -scheduler, -network
    /// and the Ironic driver's nova-compute) on the nova.conf `bm2ironic config` wrote (step 7), with
    /// what only the rehearsal adds on top: its state and log here, its API on a loopback port
    /// behind the Keystone that serves v2.0 (common/nova.rs `api_conf`, `ApiKeystone`; the openrc
    /// of step 9c, `nova_api_rc`, is its admin's),
    /// no broker (oslo.messaging's fake transport, one process), the Nova database through PyMySQL,
    /// and a Keystone token for Ironic (Juno's driver asks Keystone v2.0, which Keystone 30 does not
    /// serve; `config` writes `noauth` with --ironic-noauth, and oslo.config takes an option's last
    /// value). Returns once its API answers; stopped when dropped.
    pub async fn nova(&self, r: &Rehearsal) -> Guard {
        let dir = self.compute_conf.parent().unwrap();
        let token = keystone::admin_token(&r.keystone).await;
        let src = PathBuf::from(std::env::var(JUNO_NOVA_VENV).unwrap()).parent().unwrap().join("nova-src");
        let api = port();
        let api_keystone = nova::ApiKeystone::register(r.keystone_v2, api).await;
        let added = format!(
            "\n# ---- added by the rehearsal on top of what bm2ironic config wrote\n[DEFAULT]\n{}{}rpc_backend = fake\n\n\
             [database]\nconnection = {}\n\n\
             [ironic]\nadmin_auth_token = {token}\napi_max_retries = 30\napi_retry_interval = 2\n\n{}",
            nova::work_conf(dir, &self.nova_log(), &src),
            nova::api_conf(dir, &src, api),
            sqlalchemy_url(&self.nova.admin_url),
            api_keystone.authtoken_conf(),
        );
        let mut conf = std::fs::read_to_string(&self.compute_conf).unwrap();
        conf.push_str(&added);
        write_private(&self.compute_conf, &conf);
        let rc: String = api_keystone.env().iter().map(|(k, v)| format!("export {k}='{v}'\n")).collect();
        write_private(&self.nova_api_rc(), &rc);
        let out = std::fs::File::create(dir.join("nova.out")).unwrap();
        let guard = Guard::spawn(
            juno_nova_sh().arg("nova-all").arg(&self.compute_conf).stdout(out.try_clone().unwrap()).stderr(out),
        );
        wait_port(api, "the rehearsal's Juno nova-api").await;
        guard
    }

    /// The log of the Nova services (`nova`).
    pub fn nova_log(&self) -> PathBuf {
        self.compute_conf.with_file_name("nova.log")
    }

    /// The openrc of step 9c for Nova's API (written by `nova`).
    fn nova_api_rc(&self) -> PathBuf {
        self.compute_conf.with_file_name("nova-api-rc.sh")
    }
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}
