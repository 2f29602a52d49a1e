//! What both loads of the upgrade rehearsal share (common/rehearsal.rs): the servers and clients,
//! the work dir, the Juno Nova schema, each load's Ironic port and Keystone region; and the nodes of
//! the SQL-built cloud (`NODES`) with the names both clouds give a node (MAC, BMC address).

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::common::cli::Outcome;
use crate::common::db::{sqlalchemy_url, Backend, TestDb, MYSQL_ADMIN};
use crate::common::env::{repo_file, server_env};
use crate::common::ironic::IRONIC_VENV;
use crate::common::juno::{juno_nova_sh, juno_nova_venv};
use crate::common::keystone::{self, KEYSTONE_URL};
use crate::common::netboot;
use crate::common::ports::port;
use crate::common::proxy::NOVACLIENT_VENV;

/// The host the Ironic driver's nova-compute runs as (the old ones: bm-compute-1 and -2).
pub const NEW_HOST: &str = "ironic-compute";
/// The SQL-built cloud's node whose machine is switched off at its BMC in runbook step 9.
pub const VM_NODE: i64 = 6;
/// The timestamp of the rows nova baremetal wrote.
pub(super) const T: &str = "'2014-05-01 10:00:00'";

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

/// The SQL-built cloud's nodes (the API load's).
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
    pub(super) osc: PathBuf,
    pub(super) novaclient: PathBuf,
    /// The BMC passwords' prefix, and the deploy images (file:// URLs).
    pub bmc_secret: String,
    pub kernel: String,
    pub ramdisk: String,
    /// The instance's root and the marker it prints on the console at each boot (scripts/bootvm.sh).
    pub root_uuid: String,
    pub marker: String,
    /// The SQL-built cloud's TFTP tree (its nova.conf's tftp_root).
    pub nova_tftp: PathBuf,
    /// Each load's Ironic port: db, api.
    pub(super) ports: [u16; 2],
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
        server_env(crate::common::glance::GLANCE_VENV)?;
        let keystone_v2 = crate::common::juno::keystone_v2()?;
        server_env(MYSQL_ADMIN)?;
        if !crate::common::tmux::have_tmux() {
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
        // the SQL-built compute host's TFTP tree as nova baremetal leaves it
        let view = r.work.join("compute-host-tftp");
        let instances: Vec<String> = NODES
            .iter()
            .filter(|n| n.instance != Instance::None && n.deleted != Some(true))
            .map(|n| instance_uuid(n.id))
            .collect();
        let names: Vec<&str> = instances.iter().map(String::as_str).collect();
        let vm = instance_uuid(VM_NODE);
        netboot::write_nova_tftp(&r.nova_tftp, &view, &r.boot, &r.root_uuid, &names, (&mac(VM_NODE), &vm));
        // Keystone: a region of each load's own with its Ironic's endpoint (one after the other: the
        // first creates the `baremetal` service)
        for (via, port) in ["db", "api"].iter().zip(r.ports) {
            keystone::register_baremetal(&r.keystone, &r.region(via), &format!("http://127.0.0.1:{port}")).await;
        }
        Some(r)
    }

    pub(super) fn region(&self, via: &str) -> String {
        format!("Rehearsal-{}-{via}", self.work.file_name().unwrap().to_string_lossy())
    }

    /// The Juno Nova schema's dump, once Juno's db sync is done.
    pub(super) fn juno_dump(&self) -> PathBuf {
        self.juno_dump
            .get_or_init(|| {
                let sync = self.juno_schema.lock().unwrap().take().unwrap();
                sync.join().expect("Juno's nova-manage db sync")
            })
            .clone()
    }
}
