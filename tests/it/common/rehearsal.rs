//! The stage of the upgrade rehearsal (tests/it/rehearsal.rs), whose runbook commands are
//! scripts/rehearse-upgrade.sh: the cloud as nova baremetal left it, built once per load on the test
//! MariaDB (nova_bm v10 from a `Fixture`, a Nova database made by Juno's own `nova-manage db sync` with
//! the baremetal flavor and the instances, a nova.conf whose `[baremetal]` points at nova_bm), an
//! ironic.conf (Ironic 39 behind the test Keystone, a region of its own with Ironic's endpoint, a
//! clouds.yaml) and its machines: a fake BMC per live node on 127.0.<net>.<id>:623 (db: 3, api: 4),
//! powered like its machine; in the SQL load node 6's machine is a QEMU VM netbooting its instance
//! from the compute host's TFTP tree (shared, as is the Juno Nova schema). The two loads share no
//! server state, so they run at once. `Cloud::step` runs one step of the script with these files given.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::source::model::{BmInterface, BmNode};

use super::bmc::{Bmc, BmcOptions, Vm};
use super::cli::Outcome;
use super::db::{sqlalchemy_url, Backend, TestDb, MYSQL_ADMIN};
use super::env::{repo_file, server_env};
use super::ironic::{self, start_ironic, Ironic, IronicOptions, IRONIC_VENV};
use super::juno::{juno_nova_sh, juno_nova_venv, JUNO_NOVA_VENV};
use super::keystone::{self, ADMIN_PASSWORD, KEYSTONE_URL};
use super::netboot;
use super::nova::{self, OldInstance};
use super::ports::port;
use super::process::{wait_port, Guard};
use super::proxy::NOVACLIENT_VENV;

/// The host the Ironic driver's nova-compute runs as (the old ones: bm-compute-1 and -2).
pub const NEW_HOST: &str = "ironic-compute";
/// The node whose machine is the QEMU VM.
pub const VM_NODE: i64 = 6;
/// The timestamp of the rows nova baremetal wrote.
const T: &str = "'2014-05-01 10:00:00'";

/// What a node's instance is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Instance {
    None,
    Running,
    Stopped,
}

/// A node of the cloud: nova_bm id, its machine's power, its instance, nova_bm's `deleted` (NULL
/// for nodes enrolled the way the original job did).
#[derive(Clone, Copy, Debug)]
pub struct Node {
    pub id: i64,
    pub power: &'static str,
    pub instance: Instance,
    pub deleted: Option<bool>,
}

pub const NODES: [Node; 8] = [
    Node { id: 1, power: "off", instance: Instance::None, deleted: None },
    Node { id: 2, power: "off", instance: Instance::None, deleted: None },
    Node { id: 3, power: "off", instance: Instance::None, deleted: None },
    Node { id: 4, power: "off", instance: Instance::None, deleted: Some(false) },
    Node { id: 5, power: "on", instance: Instance::Running, deleted: Some(false) },
    Node { id: 6, power: "on", instance: Instance::Running, deleted: Some(false) },
    // its instance is stopped: the machine is off and must stay off
    Node { id: 7, power: "off", instance: Instance::Stopped, deleted: Some(false) },
    // soft-deleted
    Node { id: 8, power: "off", instance: Instance::None, deleted: Some(true) },
];

/// The nodes Ironic gets (all but the soft-deleted one).
pub fn live() -> impl Iterator<Item = Node> {
    NODES.into_iter().filter(|n| n.deleted != Some(true))
}

pub fn node_uuid(id: i64) -> String {
    format!("bbbbbbbb-0000-4000-8000-{id:012}")
}
pub fn instance_uuid(id: i64) -> String {
    format!("aaaaaaaa-0000-4000-8000-{id:012}")
}
pub fn mac(id: i64) -> String {
    format!("52:54:00:00:03:{id:02}")
}
/// A node's BMC address on the loopback network `net`.
pub fn bmc_addr(net: u8, id: i64) -> String {
    format!("127.0.{net}.{id}")
}
/// The two old baremetal compute hosts (docs/hosts.md): odd nodes on bm-compute-1, even ones on -2.
pub fn old_host(id: i64) -> &'static str {
    if id % 2 == 1 {
        "bm-compute-1"
    } else {
        "bm-compute-2"
    }
}

/// nova_bm as nova baremetal left it: the nodes of `NODES` (one interface each), BMCs on the network
/// `net`, BMC passwords `<prefix>-<id>`.
pub fn nova_bm(prefix: &str, net: u8) -> Fixture {
    let t = chrono::NaiveDate::from_ymd_opt(2014, 5, 1).and_then(|d| d.and_hms_opt(10, 0, 0));
    let mut f = Fixture { schema_version: 10, nodes: vec![], interfaces: vec![] };
    for n in NODES {
        let with = n.instance != Instance::None;
        f.nodes.push(BmNode {
            id: n.id,
            uuid: Some(node_uuid(n.id)),
            service_host: Some(old_host(n.id).into()),
            cpus: Some(8),
            memory_mb: Some(16384),
            local_gb: Some(500),
            pm_address: Some(bmc_addr(net, n.id)),
            pm_user: Some("admin".into()),
            pm_password: Some(Secret::new(format!("{prefix}-{}", n.id))),
            instance_uuid: with.then(|| instance_uuid(n.id)),
            task_state: if n.deleted == Some(true) { Some("deleted".into()) } else { with.then(|| "active".into()) },
            instance_name: with.then(|| format!("instance-{:08}", n.id)),
            root_mb: with.then_some(20480),
            swap_mb: Some(1024),
            ephemeral_mb: Some(0),
            preserve_ephemeral: Some(false),
            created_at: t,
            deleted_raw: n.deleted.map(i64::from),
            ..Default::default()
        });
        f.interfaces.push(
            BmInterface {
                id: n.id,
                bm_node_id: Some(n.id),
                address: Some(mac(n.id)),
                vif_uuid: with.then(|| format!("cccccccc-0000-4000-8000-{:012}", n.id)),
                created_at: t,
                deleted_raw: Some(i64::from(n.deleted == Some(true))),
                ..Default::default()
            }
            .normalize(),
        );
    }
    f
}

/// What both loads share: the servers and clients, the work dir, the TFTP tree, the Juno Nova schema,
/// each load's Ironic port (their Keystone endpoints registered one after the other).
pub struct Rehearsal {
    pub work: PathBuf,
    pub keystone: String,
    /// The Keystone that still serves v2.0, where the operator's Juno `nova` and Nova's API ask
    /// (scripts/keystone-pike.sh): its port.
    pub keystone_v2: u16,
    pub venv: PathBuf,
    pub boot: PathBuf,
    osc: PathBuf,
    novaclient: PathBuf,
    /// The BMC passwords' prefix, and the deploy images (file:// URLs).
    pub bmc_secret: String,
    pub kernel: String,
    pub ramdisk: String,
    /// The instance's root and the marker it prints on the console at each boot (scripts/bootvm.sh).
    pub root_uuid: String,
    pub marker: String,
    /// nova baremetal's TFTP tree (nova.conf's tftp_root) and the network's TFTP root (a symlink).
    pub nova_tftp: PathBuf,
    pub network_tftp: PathBuf,
    /// Each load's Ironic port: db, api.
    ports: [u16; 2],
    /// The dump of a Nova database Juno's `nova-manage db sync` made (each load's is a copy).
    juno_schema: Mutex<Option<std::thread::JoinHandle<PathBuf>>>,
    juno_dump: OnceLock<PathBuf>,
}

impl Rehearsal {
    /// The stage both loads share, or None (after a loud skip) when a server or client is missing.
    pub async fn stage() -> Option<Rehearsal> {
        let keystone = server_env(KEYSTONE_URL)?;
        let venv = PathBuf::from(server_env(IRONIC_VENV)?);
        let boot = PathBuf::from(server_env("BM2IRONIC_TEST_BOOT_DIR")?);
        let novaclient = PathBuf::from(server_env(NOVACLIENT_VENV)?);
        juno_nova_venv()?;
        let keystone_v2 = super::juno::keystone_v2()?;
        server_env(MYSQL_ADMIN)?;
        if !super::tmux::have_tmux() {
            return None;
        }
        let out = Outcome::of(Command::new("bash").arg(repo_file("scripts/clients.sh")).arg("osc"));
        assert!(out.success(), "scripts/clients.sh osc: {}", out.text());
        let osc = PathBuf::from(out.stdout.trim());
        let work = tempfile::Builder::new().prefix("bm2ironic-rehearsal.").tempdir().unwrap().keep();
        let run = format!(
            "{:x}",
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 0xffffff
        );
        // one Nova database by Juno's own db sync (about 50 s), made meanwhile
        let juno = TestDb::create(Backend::MySql, "rhjuno").await.unwrap();
        let dump = work.join("juno-nova.sql");
        let juno_schema = std::thread::spawn(move || {
            let out = Outcome::of(
                juno_nova_sh().args(["nova-dbsync", "env"]).env("BM2_JUNO_DB_URL", sqlalchemy_url(&juno.admin_url)),
            );
            assert!(out.success(), "juno.sh nova-dbsync: {}", out.text());
            std::fs::write(&dump, juno.dump()).unwrap();
            dump
        });
        for f in ["deploy.kernel", "deploy.initramfs"] {
            std::fs::write(work.join(f), b"").unwrap();
        }
        std::fs::write(work.join("image.qcow2"), b"image\n").unwrap();
        let read = |f: &str| std::fs::read_to_string(boot.join(f)).unwrap().trim().to_string();
        let r = Rehearsal {
            kernel: format!("file://{}", work.join("deploy.kernel").display()),
            ramdisk: format!("file://{}", work.join("deploy.initramfs").display()),
            root_uuid: read("root-uuid"),
            marker: read("marker"),
            nova_tftp: work.join("nova-tftpboot"),
            network_tftp: work.join("network-tftp"),
            bmc_secret: format!("bmc-secret-{run}"),
            ports: [port(), port()],
            juno_schema: Mutex::new(Some(juno_schema)),
            juno_dump: OnceLock::new(),
            work,
            keystone,
            keystone_v2,
            venv,
            boot,
            osc,
            novaclient,
        };
        // the compute host's TFTP tree as nova baremetal left it, and the network's view of it
        let view = r.work.join("compute-host-tftp");
        let instances: Vec<String> =
            live().filter(|n| n.instance != Instance::None).map(|n| instance_uuid(n.id)).collect();
        let names: Vec<&str> = instances.iter().map(String::as_str).collect();
        let vm = instance_uuid(VM_NODE);
        netboot::write_nova_tftp(&r.nova_tftp, &view, &r.boot, &r.root_uuid, &names, (&mac(VM_NODE), &vm));
        std::os::unix::fs::symlink(&view, &r.network_tftp).unwrap();
        // Keystone: a region of each load's own with its Ironic's endpoint (one after the other: the
        // first creates the `baremetal` service)
        for (via, port) in ["db", "api"].iter().zip(r.ports) {
            keystone::register_baremetal(&r.keystone, &r.region(via), &format!("http://127.0.0.1:{port}")).await;
        }
        Some(r)
    }

    fn region(&self, via: &str) -> String {
        format!("Rehearsal-{}-{via}", self.work.file_name().unwrap().to_string_lossy())
    }

    /// The VM's serial console, as plain text.
    pub fn console(&self) -> String {
        let f = self.work.join(format!("vm{VM_NODE}/console.log"));
        netboot::plain(&String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()))
    }

    /// The Juno Nova schema's dump, once Juno's db sync is done.
    fn juno_dump(&self) -> PathBuf {
        self.juno_dump
            .get_or_init(|| {
                let sync = self.juno_schema.lock().unwrap().take().unwrap();
                sync.join().expect("Juno's nova-manage db sync")
            })
            .clone()
    }
}

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
        let nova_bm = TestDb::with_fixture(Backend::MySql, "rhbm", &nova_bm(&r.bmc_secret, net)).await.unwrap();
        let nova = TestDb::create(Backend::MySql, "rhnova").await.unwrap();
        nova.load_sql_file(&r.juno_dump()).await;
        juno_rows(&nova, &r.work.join("image.qcow2")).await;
        let ironic_db = TestDb::create(Backend::MySql, "rhironic").await.unwrap();
        ironic_db.exec(&format!("ALTER DATABASE {} CHARACTER SET utf8mb3", ironic_db.name)).await;

        let nova_conf = etc.join("nova.conf");
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
            file_paths: Some(r.nova_tftp.clone()),
            pxe_loaders: Some(r.boot.clone()),
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
        let bmcs = machines(r, &dir, net);
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
        }
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
        c.envs([
            ("NOVA_CONF", s(&self.nova_conf)),
            ("IRONIC_CONF", s(&self.ironic_conf)),
            ("DEPLOY_KERNEL", self.kernel.clone()),
            ("DEPLOY_RAMDISK", self.ramdisk.clone()),
            // the nova.conf is bm-compute-1's: its flavor_extra_specs give that host's cpu_arch only
            ("ARCH", "bm-compute-2=x86_64".into()),
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

/// A fake BMC per live node on the network `net`, powered like its machine; on network 3 (the SQL
/// load's) node 6's is a QEMU VM netbooting its instance from the network's TFTP root.
fn machines(r: &Rehearsal, dir: &Path, net: u8) -> Vec<(i64, Bmc)> {
    let mut bmcs = vec![];
    for n in live() {
        let mut o = BmcOptions::new(&r.venv, &format!("{}-{}", r.bmc_secret, n.id))
            .at(&bmc_addr(net, n.id), 623)
            .power(n.power);
        o.stderr = Some(dir.join(format!("bmc{}.stderr", n.id)));
        if n.id == VM_NODE && net == 3 {
            let disk = r.work.join(format!("vm{}.img", n.id));
            std::fs::copy(r.boot.join("disk.img"), &disk).unwrap();
            let accel = std::fs::read_to_string(r.boot.join("accel")).unwrap().trim().to_string();
            let dir = r.work.join(format!("vm{}", n.id));
            o.vm = Some(Vm { dir, disk, tftp: r.network_tftp.clone(), mac: mac(n.id), accel });
        }
        bmcs.push((n.id, Bmc::start(o)));
    }
    for (id, b) in &bmcs {
        b.wait_power(NODES[*id as usize - 1].power);
    }
    bmcs
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

/// What Juno's Nova holds beside its schema's own rows: a baremetal flavor (and a spec on m1.small),
/// the instances nova baremetal ran (images a URL Ironic can validate here: there is no Glance) with
/// what Juno reads of them, the baremetal driver's compute_nodes, and the two baremetal
/// nova-computes, stopped an hour ago.
async fn juno_rows(nova: &TestDb, image: &Path) {
    let image = format!("file://{}", image.display());
    let mut sql = vec![
        format!("INSERT INTO instance_types (created_at, name, id, memory_mb, vcpus, swap, flavorid, rxtx_factor, root_gb, ephemeral_gb, disabled, is_public, deleted) VALUES ({T}, 'bm.large', 6, 16384, 8, 0, 'bm.large', 1.0, 20, 0, 0, 1, 0)"),
        format!("INSERT INTO instance_type_extra_specs (instance_type_id, `key`, value, deleted, created_at) VALUES (6, 'cpu_arch', 'x86_64', 0, {T}), (6, 'baremetal:deploy_kernel_id', 'nova-bm-deploy-kernel', 0, {T}), (6, 'baremetal:deploy_ramdisk_id', 'nova-bm-deploy-ramdisk', 0, {T}), ((SELECT id FROM instance_types WHERE name = 'm1.small'), 'hw:cpu_policy', 'shared', 0, {T})"),
        format!("INSERT INTO services (created_at, updated_at, id, host, `binary`, topic, report_count, disabled, deleted) VALUES ({T}, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 1, 'bm-compute-1', 'nova-compute', 'compute', 100, 0, 0), ({T}, UTC_TIMESTAMP() - INTERVAL 1 HOUR, 2, 'bm-compute-2', 'nova-compute', 'compute', 100, 0, 0)"),
    ];
    for n in live() {
        let used = i64::from(n.instance != Instance::None);
        sql.push(format!(
            "INSERT INTO compute_nodes (created_at, updated_at, service_id, vcpus, memory_mb, local_gb, vcpus_used, memory_mb_used, local_gb_used, hypervisor_type, hypervisor_version, cpu_info, free_ram_mb, free_disk_gb, current_workload, running_vms, hypervisor_hostname, deleted) VALUES ({T}, {T}, {}, 8, 16384, 500, {}, {}, {}, 'baremetal', 1, 'baremetal cpu', 0, 0, 0, {used}, '{}', 0)",
            2 - n.id % 2,
            used * 8,
            used * 16384,
            used * 20,
            node_uuid(n.id)
        ));
        if n.instance == Instance::None {
            continue;
        }
        let (u, node, host, name) =
            (instance_uuid(n.id), node_uuid(n.id), old_host(n.id), format!("instance-{:08}", n.id));
        let i = OldInstance {
            uuid: &u,
            node: &node,
            host,
            active: n.instance != Instance::Stopped,
            name: &name,
            project: "demo-project",
            image: &image,
            // the image's kernel and ramdisk in the old cloud's Glance (Ironic 39 deploys none of them)
            kernel: (super::juno::KERNEL_I, super::juno::RAMDISK_I),
            flavor: ("bm.large", "bm.large"),
            root_gb: 20,
            reservation: &format!("r-{:08}", n.id),
        };
        sql.extend(i.rows(T, '`'));
    }
    let db = nova.admin().await;
    for s in sql {
        db.execute(&s, vec![]).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    db.close().await;
}
