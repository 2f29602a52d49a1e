//! nova baremetal's own compute host (#45): Juno's Nova control plane (`juno.sh nova-all`: nova-api,
//! -conductor, -scheduler, -network and nova-compute in one process) configured as a baremetal
//! compute host was (`BareMetalDriver`, the `PXE` driver, the `IPMI` power manager, the
//! `BaremetalHostManager` scheduler), on a nova_bm made by Juno's own `nova-baremetal-manage db sync`
//! and an empty Juno Nova database; its `os-baremetal-nodes` API (nova_bm-backed, as before the
//! upgrade) behind the Keystone v2.0 of the Juno tests, driven by Juno's own `nova` (python-novaclient
//! 2.20.0) or by HTTP as that client sends it. Also Juno's same API configured with the Ironic
//! driver (`ironic_api`), which proxies to Ironic: the third voice of the proxy's comparison.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::cli::Outcome;
use super::db::{sqlalchemy_url, Backend, TestDb};
use super::juno::{baremetal_dbsync, KEYSTONE_V2_PASSWORD};
use super::nova::{juno_nova_client, juno_nova_schema_db, ApiKeystone, NovaPlane, HOST};

/// nova baremetal's compute host: its control plane, its nova_bm, its Nova database, its TFTP root.
pub struct BaremetalHost {
    pub plane: NovaPlane,
    pub nova_bm: TestDb,
    pub nova: TestDb,
    pub tftp: tempfile::TempDir,
}

/// nova.conf of a Juno baremetal compute host (docs/juno.md): the driver, its `[baremetal]` section
/// (nova_bm at `nova_bm`, TFTP root `tftp`, no file injection), the baremetal scheduler.
pub fn baremetal_conf(nova: &TestDb, nova_bm: &TestDb, tftp: &Path) -> String {
    format!(
        "[DEFAULT]\nhost = {HOST}\nmy_ip = 127.0.0.1\n\
         compute_driver = nova.virt.baremetal.driver.BareMetalDriver\n\
         scheduler_host_manager = nova.scheduler.baremetal_host_manager.BaremetalHostManager\n\
         firewall_driver = nova.virt.firewall.NoopFirewallDriver\n\
         ram_allocation_ratio = 1.0\nreserved_host_memory_mb = 0\nrpc_backend = fake\n\n\
         [database]\nconnection = {}\n\n\
         [baremetal]\nsql_connection = {}\ndriver = nova.virt.baremetal.pxe.PXE\n\
         power_manager = nova.virt.baremetal.ipmi.IPMI\ntftp_root = {}\nuse_file_injection = false\n\
         flavor_extra_specs = cpu_arch:x86_64\n",
        sqlalchemy_url(&nova.admin_url),
        sqlalchemy_url(&nova_bm.admin_url),
        tftp.display()
    )
}

impl BaremetalHost {
    /// Starts it, its API behind the Keystone v2.0 on port `keystone_v2`.
    pub async fn start(keystone_v2: u16) -> BaremetalHost {
        BaremetalHost::start_with(keystone_v2, Backend::Sqlite, "").await
    }

    /// Starts it with nova_bm on `backend` and `more` appended to its nova.conf (sections of their
    /// own: oslo.config merges a `[DEFAULT]` given twice); a `pxelinux.cfg` directory in its TFTP
    /// root, as the operator made it (nova baremetal links each MAC's config there).
    pub async fn start_with(keystone_v2: u16, backend: Backend, more: &str) -> BaremetalHost {
        BaremetalHost::start_on(keystone_v2, backend, None, more).await
    }

    /// `start_with` on the Nova database `nova` (None: a fresh SQLite one from Juno's schema).
    pub async fn start_on(keystone_v2: u16, backend: Backend, nova: Option<TestDb>, more: &str) -> BaremetalHost {
        let nova_bm = baremetal_dbsync(backend, "bmreal").await;
        let nova = match nova {
            Some(db) => db,
            None => juno_nova_schema_db().await,
        };
        let tftp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tftp.path().join("pxelinux.cfg")).unwrap();
        let dir = tempfile::tempdir().unwrap().keep();
        let conf = dir.join("nova.conf");
        std::fs::write(&conf, baremetal_conf(&nova, &nova_bm, tftp.path()) + more).unwrap();
        // the resource tracker every 3 s (its compute_nodes rows for the nodes the test makes)
        let plane = NovaPlane::launch(dir, &conf, keystone_v2, &[("BM2_JUNO_PERIODIC_DEFAULT", "3")]).await;
        BaremetalHost { plane, nova_bm, nova, tftp }
    }
}

/// Juno's Nova API (the same control plane) as the runbook's step 7 leaves it: the Ironic driver,
/// whose `os-baremetal-nodes` proxies to the Ironic API `ironic` with Keystone v2.0 credentials (port
/// `keystone_v2`); its own empty Nova database.
pub async fn ironic_api(ironic: &str, keystone_v2: u16) -> (NovaPlane, TestDb) {
    let nova = juno_nova_schema_db().await;
    let dir = tempfile::tempdir().unwrap().keep();
    let conf = dir.join("nova.conf");
    let text = format!(
        "[DEFAULT]\nhost = ironic-compute\nmy_ip = 127.0.0.1\ncompute_driver = nova.virt.ironic.IronicDriver\n\
         compute_manager = ironic.nova.compute.manager.ClusteredComputeManager\n\
         scheduler_host_manager = nova.scheduler.ironic_host_manager.IronicHostManager\n\
         firewall_driver = nova.virt.firewall.NoopFirewallDriver\nrpc_backend = fake\n\n\
         [database]\nconnection = {}\n\n[ironic]\napi_endpoint = {ironic}\napi_version = 1\n\
         admin_username = admin\nadmin_password = {KEYSTONE_V2_PASSWORD}\nadmin_tenant_name = admin\n\
         admin_url = http://127.0.0.1:{keystone_v2}/v2.0\n",
        sqlalchemy_url(&nova.admin_url)
    );
    std::fs::write(&conf, text).unwrap();
    (NovaPlane::launch(dir, &conf, keystone_v2, &[]).await, nova)
}

/// A raw call to an `os-baremetal-nodes` API at `base` (a Nova API's `http://127.0.0.1:<port>`, or the
/// proxy's) as Juno's novaclient sends it: `/v2/<tenant>/os-baremetal-nodes<path>`, with a token of
/// `ks`'s admin. The status and the JSON body (a string when it is not JSON).
pub async fn raw(
    base: &str,
    ks: &ApiKeystone,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let (token, tenant) = ks.v2_token().await;
    let url = format!("{base}/v2/{tenant}/os-baremetal-nodes{path}");
    let mut req = reqwest::Client::new().request(method, url).header("X-Auth-Token", token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// Juno's `nova` (python-novaclient 2.20.0) as `ks`'s admin, against the compute endpoint of `ks`'s
/// region: its outcome.
pub fn juno_nova(ks: &ApiKeystone, args: &[&str]) -> Outcome {
    Outcome::of(Command::new(juno_nova_client()).args(args).envs(ks.env()).env("PYTHONWARNINGS", "ignore"))
}

/// Juno's `nova` against `plane`, which must succeed: its stdout.
pub fn nova(plane: &NovaPlane, args: &[&str]) -> String {
    let out: Outcome = plane.nova(args);
    assert!(out.success(), "nova {args:?}: {}\nlog: {}", out.text(), plane.log().display());
    out.stdout
}
