//! The Juno (2014.2) Nova side of the Juno tests: a Juno Nova database holding what nova baremetal
//! left (Juno's own `nova-manage db sync` schema, `juno.sh nova-schema`), bm2ironic migrating the
//! small cloud and its flavors, and the REAL Juno Nova control plane on the nova.conf `bm2ironic
//! config --target juno` writes: nova-api, nova-conductor, nova-scheduler and nova-compute in one
//! process (`juno.sh nova-all`, scripts/juno-nova-all.py: oslo.messaging's fake transport, no broker),
//! operated through Juno's own `nova` command (python-novaclient 2.20.0, from the Nova venv) as an
//! operator's admin would: through Keystone (`ApiKeystone`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::{bm, Outcome};
use super::db::{Backend, TestDb};
use super::juno::{juno_nova_sh, wait_for, IMAGE, JUNO_NOVA_VENV, KERNEL_I, KEYSTONE_V2_PASSWORD, RAMDISK_I};
use super::keystone;
use super::ports::port;
use super::process::{wait_port, Guard};

/// The compute host nova baremetal's nova-compute ran as, and the Ironic driver's nova-compute runs as.
pub const HOST: &str = "bm-compute-1";
const TS: &str = "'2014-11-20 10:00:00'";
/// The project the migrated instances belong to (a tenant's, not the admin's: `nova list` needs
/// `--all-tenants` to show them, as the runbook says).
pub const PROJECT: &str = "demo-project";

/// Node `id`'s uuid in `juno::small_cloud` (nova_bm's node uuid, kept by the migration).
pub fn node_uuid(id: i64) -> String {
    format!("bbbbbbbb-0000-4000-8000-{id:012}")
}
/// The uuid of the instance on node `id`.
pub fn instance_uuid(id: i64) -> String {
    format!("aaaaaaaa-0000-4000-8000-{id:012}")
}

/// A Juno Nova database: the schema Juno's `nova-manage db sync` made (`juno.sh nova-schema`,
/// copied), with what nova baremetal left: its nova-compute service (stopped long ago), the
/// compute_nodes rows of the baremetal driver, a baremetal flavor, and the instances of nodes 3
/// (active, running) and 6 (stopped).
pub async fn juno_nova_db() -> TestDb {
    let t = juno_nova_schema_db().await;
    let mut sql = vec![
        format!("INSERT INTO services (created_at, updated_at, id, host, \"binary\", topic, report_count, disabled, deleted) VALUES ({TS}, {TS}, 1, '{HOST}', 'nova-compute', 'compute', 100, 0, 0)"),
        format!("INSERT INTO instance_types (created_at, name, id, memory_mb, vcpus, swap, flavorid, rxtx_factor, root_gb, ephemeral_gb, disabled, is_public, deleted) VALUES ({TS}, 'baremetal', 6, 16384, 8, 0, 'bm1', 1.0, 40, 0, 0, 1, 0)"),
        format!("INSERT INTO instance_type_extra_specs (created_at, instance_type_id, \"key\", value, deleted) VALUES ({TS}, 6, 'cpu_arch', 'x86_64', 0), ({TS}, 6, 'baremetal:deploy_kernel_id', 'old-nova-bm-kernel', 0), ({TS}, 6, 'baremetal:deploy_ramdisk_id', 'old-nova-bm-ramdisk', 0)"),
    ];
    for id in [1, 3, 6] {
        let used = id != 1;
        sql.push(format!(
            "INSERT INTO compute_nodes (created_at, updated_at, service_id, vcpus, memory_mb, local_gb, vcpus_used, memory_mb_used, local_gb_used, hypervisor_type, hypervisor_version, cpu_info, free_ram_mb, free_disk_gb, current_workload, running_vms, hypervisor_hostname, deleted) VALUES ({TS}, {TS}, 1, 8, 16384, 500, {}, {}, {}, 'baremetal', 1, 'baremetal cpu', 0, 0, 0, {}, '{}', 0)",
            if used { 8 } else { 0 },
            if used { 16384 } else { 0 },
            if used { 40 } else { 0 },
            u8::from(used),
            node_uuid(id)
        ));
    }
    for (id, active) in [(3, true), (6, false)] {
        let (u, node, name) = (instance_uuid(id), node_uuid(id), format!("bm-instance-{id}"));
        let i = OldInstance {
            uuid: &u,
            node: &node,
            host: HOST,
            active,
            name: &name,
            project: PROJECT,
            image: IMAGE,
            kernel: (KERNEL_I, RAMDISK_I),
            flavor: ("baremetal", "bm1"),
            root_gb: 40,
            reservation: &format!("r-bm00000{id}"),
        };
        sql.extend(i.rows(TS, '"'));
    }
    for s in sql {
        t.exec(&s).await;
    }
    t
}

/// An empty Juno Nova database (SQLite): a copy of the schema Juno's `nova-manage db sync` made
/// (`juno.sh nova-schema`).
pub async fn juno_nova_schema_db() -> TestDb {
    let out = Outcome::from(juno_nova_sh().arg("nova-schema").output().unwrap());
    assert!(out.success(), "juno.sh nova-schema: {}", out.text());
    let schema = out.stdout.trim().to_string();
    let t = TestDb::create(Backend::Sqlite, "jcnova").await.unwrap();
    std::fs::copy(&schema, t.admin_url.trim_start_matches("sqlite://")).unwrap();
    t
}

/// One instance as nova baremetal's nova-compute left it in a Juno Nova database, built with flavor
/// 6 (16384 MB, 8 vCPUs): [`OldInstance::rows`] are the statements that write it. Held against the
/// instances nova baremetal itself made (juno_baremetal::deployed, docs/mapping.md 7): the same
/// columns and system metadata but for its image's `architecture` and `os_type` properties.
pub struct OldInstance<'a> {
    pub uuid: &'a str,
    /// its node (nova_bm's node uuid, Nova's `instances.node`)
    pub node: &'a str,
    /// the compute host it ran on (`host`, `launched_on`)
    pub host: &'a str,
    /// active and running; else stopped (power state 4, shutdown)
    pub active: bool,
    /// its hostname and display name
    pub name: &'a str,
    pub project: &'a str,
    pub image: &'a str,
    /// the image's kernel and ramdisk (Glance ids): nova baremetal's PXE driver needs both, and Nova
    /// keeps them in `instances.kernel_id` / `ramdisk_id` and the `image_*` system metadata
    pub kernel: (&'a str, &'a str),
    /// the flavor's name and flavorid
    pub flavor: (&'a str, &'a str),
    pub root_gb: i64,
    pub reservation: &'a str,
}

impl OldInstance<'_> {
    /// Its row, its info cache, its extra row, and its flavor in its system metadata as Juno keeps
    /// it; `ts`: the time (an SQL literal), `q`: the quote of the column named `key` on the backend.
    pub fn rows(&self, ts: &str, q: char) -> Vec<String> {
        let OldInstance { uuid: u, node, host, name, project, image, reservation, root_gb, kernel: (k, r), .. } = self;
        let (vm, power) = if self.active { ("active", 1) } else { ("stopped", 4) };
        let mut sql = vec![
            format!("INSERT INTO instances (created_at, updated_at, user_id, project_id, image_ref, kernel_id, ramdisk_id, launch_index, power_state, vm_state, task_state, memory_mb, vcpus, root_gb, ephemeral_gb, hostname, host, node, launched_on, display_name, instance_type_id, uuid, launched_at, scheduled_at, locked, shutdown_terminate, disable_terminate, cleaned, deleted, config_drive, architecture, os_type, reservation_id, progress, root_device_name, availability_zone) VALUES ({ts}, {ts}, 'demo-user', '{project}', '{image}', '{k}', '{r}', 0, {power}, '{vm}', NULL, 16384, 8, {root_gb}, 0, '{name}', '{host}', '{node}', '{host}', '{name}', 6, '{u}', {ts}, NULL, 0, 0, 0, 0, 0, '', 'x86_64', 'linux', '{reservation}', 0, '/dev/sda', 'nova')"),
            format!("INSERT INTO instance_info_caches (created_at, network_info, instance_uuid, deleted) VALUES ({ts}, '[]', '{u}', 0)"),
            format!("INSERT INTO instance_extra (created_at, deleted, instance_uuid) VALUES ({ts}, 0, '{u}')"),
        ];
        let root = root_gb.to_string();
        let meta = [
            ("instance_type_id", Some("6")),
            ("instance_type_name", Some(self.flavor.0)),
            ("instance_type_memory_mb", Some("16384")),
            ("instance_type_vcpus", Some("8")),
            ("instance_type_root_gb", Some(root.as_str())),
            ("instance_type_ephemeral_gb", Some("0")),
            ("instance_type_flavorid", Some(self.flavor.1)),
            ("instance_type_swap", Some("0")),
            ("instance_type_rxtx_factor", Some("1.0")),
            ("instance_type_vcpu_weight", None),
            ("image_base_image_ref", Some(*image)),
            ("image_kernel_id", Some(*k)),
            ("image_ramdisk_id", Some(*r)),
            ("image_disk_format", Some("ami")),
            ("image_container_format", Some("ami")),
            ("image_min_disk", Some(root.as_str())),
            ("image_min_ram", Some("0")),
            ("network_allocated", Some("True")),
        ];
        for (k, v) in meta {
            let v = v.map_or("NULL".to_string(), |v| format!("'{v}'"));
            sql.push(format!("INSERT INTO instance_system_metadata (created_at, instance_uuid, {q}key{q}, value, deleted) VALUES ({ts}, '{u}', '{k}', {v}, 0)"));
        }
        sql
    }
}

/// bm2ironic migrates the small cloud (and the flavors) with `args`; `tree`: the copy of nova
/// baremetal's TFTP tree its instances' next boot is learned from (it must outlive the test: an
/// Ironic 39 reads it).
pub async fn migrate(src: &TestDb, nova: &TestDb, tgt: &TestDb, args: &[&str], tree: &Path) {
    let run = |a: &[&str]| bm(a).args(args).source(src).env("BM2IRONIC_NOVA_DB", &nova.admin_url).target(tgt).run();
    let out = run(&["flavors", "--apply", "--yes"]);
    assert!(out.success(), "flavors: {}", out.text());
    let tree = tree.to_str().unwrap();
    let out = run(&["migrate", "--via", "db", "--yes", "--default-arch", "x86_64", "--tftp-root", tree]);
    assert!(out.success(), "migrate: {}", out.text());
}

/// The Juno Nova control plane (`juno.sh nova-all`), stopped when dropped.
pub struct NovaPlane {
    _process: Guard,
    /// Its work dir: nova.conf, nova.log, state/.
    pub dir: PathBuf,
    /// The API's port on 127.0.0.1 (osapi_compute, v2, behind Keystone).
    pub port: u16,
    /// Where the `nova` command authenticates.
    pub keystone: ApiKeystone,
}

/// The nova.conf of nova baremetal's compute host that `bm2ironic config` reads: the Nova database,
/// Glance, Keystone (v2.0, on port `keystone`: Nova's service user, as a Juno compute host has it),
/// the baremetal driver and its section.
fn baremetal_nova_conf(nova: &TestDb, glance: &str, keystone: u16) -> String {
    format!(
        "[DEFAULT]\nhost = {HOST}\nmy_ip = 127.0.0.1\ncompute_driver = nova.virt.baremetal.driver.BareMetalDriver\n\
         scheduler_host_manager = nova.scheduler.baremetal_host_manager.BaremetalHostManager\n\
         glance_api_servers = {glance}\nrpc_backend = fake\n\n[database]\nconnection = {}\n\n\
         [keystone_authtoken]\nidentity_uri = http://127.0.0.1:{keystone}\nauth_uri = http://127.0.0.1:{keystone}/v2.0\n\
         admin_user = admin\nadmin_password = {KEYSTONE_V2_PASSWORD}\nadmin_tenant_name = admin\n\n\
         [baremetal]\nsql_connection = sqlite:////nonexistent/nova_bm.sqlite\ntftp_root = /tftpboot\n\
         power_manager = nova.virt.baremetal.ipmi.IPMI\n",
        nova.admin_url
    )
}

impl NovaPlane {
    /// Writes nova.conf with `bm2ironic config --target juno --ironic-noauth` from a baremetal
    /// nova.conf on `nova` (Glance at `glance`, host:port), adds only what a test machine needs on
    /// top (work dirs, the API on a loopback port behind the Keystone on port `keystone_v2`, no
    /// quota on cores and memory, fast periodic tasks, nova-network's FlatManager in place of
    /// Neutron), starts the control plane against the Ironic API `ironic` and waits for its API and
    /// for nova-compute's compute_nodes rows of `nodes` (the Ironic driver's).
    pub async fn start(nova: &TestDb, ironic: &str, glance: &str, nodes: &[String], keystone_v2: u16) -> NovaPlane {
        let dir = tempfile::tempdir().unwrap().keep();
        let bm_conf = dir.join("baremetal-nova.conf");
        std::fs::write(&bm_conf, baremetal_nova_conf(nova, glance, keystone_v2)).unwrap();
        let conf = dir.join("nova.conf");
        let out = bm(["--nova-conf"])
            .arg(&bm_conf)
            .args(["--ironic-url", ironic, "config", "--target", "juno", "--ironic-noauth", "--host", HOST])
            .arg("--write-nova")
            .arg(&conf)
            .run();
        assert!(out.success(), "bm2ironic config: {}", out.text());
        let plane = NovaPlane::launch(dir, &conf, keystone_v2, &[]).await;
        let list = nodes.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ");
        let rows = format!("SELECT CASE WHEN COUNT(DISTINCT hypervisor_hostname) = {} THEN 1 ELSE 0 END FROM compute_nodes WHERE deleted = 0 AND hypervisor_type = 'ironic' AND hypervisor_hostname IN ({list})", nodes.len());
        wait_for(nova, &rows, 90, "Juno nova-compute's compute_nodes", &plane.log()).await;
        plane
    }

    /// Adds to the nova.conf `conf` (in `dir`) what a test machine needs on top (work dirs, the API
    /// on a loopback port behind the Keystone on port `keystone_v2`, fast periodic tasks,
    /// nova-network's FlatManager in place of Neutron), starts the control plane (`juno.sh nova-all`)
    /// and waits for its API; `env`: more of the process's environment.
    pub async fn launch(dir: PathBuf, conf: &Path, keystone_v2: u16, env: &[(&str, &str)]) -> NovaPlane {
        let venv = PathBuf::from(std::env::var(JUNO_NOVA_VENV).expect("the Juno Nova venv"));
        let src = venv.parent().unwrap().join("nova-src");
        let port = port();
        let keystone = ApiKeystone::register(keystone_v2, port).await;
        let extra = format!(
            "\n# ---- added by the tests on top of what bm2ironic config wrote: work dirs, the API (behind\n\
             # Keystone, a loopback port), fast periodic tasks, nova-network (FlatManager) in place of Neutron\n\
             [DEFAULT]\n{}{}\n[ironic]\napi_max_retries = 30\napi_retry_interval = 2\n\n{}",
            work_conf(&dir, &dir.join("nova.log"), &src),
            api_conf(&dir, &src, port),
            keystone.authtoken_conf(),
        );
        let mut text = std::fs::read_to_string(conf).unwrap();
        text.push_str(&extra);
        std::fs::write(conf, text).unwrap();
        let process = Guard::spawn(
            juno_nova_sh()
                .arg("nova-all")
                .arg(conf)
                .envs(env.iter().copied())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap()),
        );
        let plane = NovaPlane { _process: process, dir, port, keystone };
        wait_port(port, "Juno nova-api").await;
        plane
    }

    /// nova.log (every service's).
    pub fn log(&self) -> PathBuf {
        self.dir.join("nova.log")
    }

    /// Juno's `nova` command (python-novaclient 2.20.0) against this API, as Keystone's admin.
    pub fn nova(&self, args: &[&str]) -> Outcome {
        Outcome::of(
            Command::new(juno_nova_client()).args(args).envs(self.keystone.env()).env("PYTHONWARNINGS", "ignore"),
        )
    }

    /// `nova` that must succeed; its stdout.
    pub fn must(&self, args: &[&str]) -> String {
        let out = self.nova(args);
        assert!(out.success(), "nova {args:?}: {}\nlog: {}", out.text(), self.log().display());
        out.stdout
    }

    /// The fields of `nova show --minimal ID` (name -> value, the table's two columns; no image or
    /// flavor lookup).
    pub fn show(&self, id: &str) -> std::collections::BTreeMap<String, String> {
        table(&self.must(&["show", "--minimal", id]))
    }

    /// Waits until `nova show ID` has every (field, value) of `want`; the last table on timeout.
    pub async fn wait_show(&self, id: &str, want: &[(&str, &str)], secs: u64, what: &str) -> Duration {
        let t0 = Instant::now();
        loop {
            let s = self.show(id);
            if want.iter().all(|(k, v)| s.get(*k).map(String::as_str) == Some(*v)) {
                return t0.elapsed();
            }
            if t0.elapsed() > Duration::from_secs(secs) {
                panic!("{what}: not {want:?} after {secs} s: {s:?}; log {}", self.log().display());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

/// What any Juno Nova service of the tests needs beyond the nova.conf `bm2ironic config` wrote, in
/// [DEFAULT]: its state, locks and instances under `dir`, its log `log` (debug; the libraries' at
/// WARN/INFO), rootwrap from Juno's sources `src`, and periodic tasks every 3 s (power sync and
/// resources; no image cache or info-cache healing).
pub fn work_conf(dir: &Path, log: &Path, src: &Path) -> String {
    for sub in ["state/lock", "state/instances"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let (d, s) = (dir.display(), src.display());
    format!(
        "state_path = {d}/state\nlock_path = {d}/state/lock\ninstances_path = {d}/state/instances\n\
         log_file = {}\ndebug = true\n\
         default_log_levels = amqp=WARN,amqplib=WARN,boto=WARN,qpid=WARN,sqlalchemy=WARN,suds=INFO,oslo.messaging=INFO,iso8601=WARN,requests.packages.urllib3.connectionpool=WARN,urllib3.connectionpool=WARN,websocket=WARN,keystonemiddleware=WARN,routes.middleware=WARN,stevedore=WARN,ironicclient=INFO,keystoneclient=INFO,glanceclient=INFO\n\
         rootwrap_config = {s}/etc/nova/rootwrap.conf\n\
         sync_power_state_interval = 3\nupdate_resources_interval = 3\nperiodic_fuzzy_delay = 0\n\
         heal_instance_info_cache_interval = -1\nimage_cache_manager_interval = -1\n",
        log.display()
    )
}

/// What a test machine's Juno Nova control plane (`nova-all`) needs beyond the nova.conf `bm2ironic
/// config` wrote, in [DEFAULT]: its API on loopback `port` behind Keystone (Juno's api-paste.ini,
/// keystonemiddleware 1.2.0; `ApiKeystone::authtoken_conf` says where Keystone is), the API's paste
/// and policy files (copied into `dir` from Juno's sources `src`), no rate limit, no quota on cores
/// and memory (the tests' flavors are whole machines), and nova-network's FlatManager in place of
/// Neutron.
pub fn api_conf(dir: &Path, src: &Path, port: u16) -> String {
    for f in ["policy.json", "api-paste.ini"] {
        std::fs::copy(src.join("etc/nova").join(f), dir.join(f)).unwrap();
    }
    let d = dir.display();
    format!(
        "auth_strategy = keystone\nenabled_apis = osapi_compute\nosapi_compute_listen = 127.0.0.1\n\
         osapi_compute_listen_port = {port}\napi_paste_config = {d}/api-paste.ini\npolicy_file = {d}/policy.json\n\
         api_rate_limit = false\nquota_cores = -1\nquota_ram = -1\n\
         network_api_class = nova.network.api.API\nnetwork_manager = nova.network.manager.FlatManager\n"
    )
}

/// Juno's `nova` command (python-novaclient 2.20.0, in the Juno Nova venv).
pub fn juno_nova_client() -> PathBuf {
    PathBuf::from(std::env::var(JUNO_NOVA_VENV).expect("the Juno Nova venv")).join("bin/nova")
}

/// A Juno Nova API in the Keystone of the Juno tests (scripts/keystone-pike.sh: Keystone 12.0.3,
/// which still serves v2.0, the only identity API Juno's `nova` and keystonemiddleware 1.2.0 ask
/// for a token). Each API is the `compute` endpoint of a region of its own, so that two control
/// planes running at once are two endpoints the client tells apart by `OS_REGION_NAME`.
pub struct ApiKeystone {
    port: u16,
    region: String,
    /// the admin's v2.0 token and project id, once asked for (`v2_token`)
    v2: tokio::sync::OnceCell<(String, String)>,
}

impl ApiKeystone {
    /// Registers the API on `api_port` in the Keystone on `port` (through its v3 API, as the admin
    /// of project admin: Keystone 12.0.3 has no system scope).
    pub async fn register(port: u16, api_port: u16) -> ApiKeystone {
        // a region of its own even in a Keystone that outlived earlier runs (a port comes back)
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let region = format!("nova-{api_port}-{nanos:x}");
        let v3 = format!("http://127.0.0.1:{port}/v3");
        let scope = serde_json::json!({"project": {"name": "admin", "domain": {"id": "default"}}});
        let token = keystone::token(&v3, "admin", KEYSTONE_V2_PASSWORD, scope).await;
        let url = format!("http://127.0.0.1:{api_port}/v2/$(project_id)s");
        keystone::register_endpoint(&v3, &token, &region, ("compute", "nova"), &url).await;
        ApiKeystone { port, region, v2: tokio::sync::OnceCell::new() }
    }

    /// An operator's openrc for this API: Keystone's admin, project admin, v2.0, the API's region.
    pub fn env(&self) -> [(&'static str, String); 6] {
        [
            ("OS_AUTH_URL", format!("http://127.0.0.1:{}/v2.0", self.port)),
            ("OS_USERNAME", "admin".into()),
            ("OS_TENANT_NAME", "admin".into()),
            ("OS_PASSWORD", KEYSTONE_V2_PASSWORD.into()),
            ("OS_REGION_NAME", self.region.clone()),
            ("OS_NO_CACHE", "1".into()),
        ]
    }

    /// A token of Keystone's admin on project admin from v2.0, as Juno's novaclient gets one, and that
    /// project's id (the `{tenant_id}` of the API's paths); asked for once, then reused.
    pub async fn v2_token(&self) -> (String, String) {
        self.v2.get_or_init(|| self.ask_v2_token()).await.clone()
    }

    async fn ask_v2_token(&self) -> (String, String) {
        let body = serde_json::json!({"auth": {"tenantName": "admin",
            "passwordCredentials": {"username": "admin", "password": KEYSTONE_V2_PASSWORD}}});
        let url = format!("http://127.0.0.1:{}/v2.0/tokens", self.port);
        let r: serde_json::Value =
            reqwest::Client::new().post(url).json(&body).send().await.unwrap().json().await.unwrap();
        let t = &r["access"]["token"];
        (t["id"].as_str().unwrap().to_string(), t["tenant"]["id"].as_str().unwrap().to_string())
    }

    /// nova.conf's `[keystone_authtoken]` for keystonemiddleware 1.2.0: its own token from v2.0
    /// (the only way 1.2.0 gets one), the users' tokens checked through v3 (Keystone 12.0.3's public
    /// application serves no v2.0 token validation; left to choose, 1.2.0 would pick v2.0, as it
    /// looks for "v3.0" among versions Keystone lists as "v3.8").
    pub fn authtoken_conf(&self) -> String {
        let p = self.port;
        format!(
            "[keystone_authtoken]\nauth_uri = http://127.0.0.1:{p}/v2.0\nidentity_uri = http://127.0.0.1:{p}\n\
             auth_version = v3.0\nadmin_user = admin\nadmin_password = {KEYSTONE_V2_PASSWORD}\nadmin_tenant_name = admin\n"
        )
    }
}

/// The rows of a prettytable `nova` printed: the first two columns of each body row.
pub fn table(out: &str) -> std::collections::BTreeMap<String, String> {
    out.lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells.len() >= 2).then(|| (cells[0].to_string(), cells[1].to_string()))
        })
        .collect()
}

/// Each body row of a prettytable, all its cells.
pub fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .filter(|l| l.starts_with("| "))
        .skip(1)
        .map(|l| l.trim().trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect()
}
