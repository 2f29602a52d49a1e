//! The one way a test starts an Ironic: `start_ironic(IronicOptions)`. The real Ironic 39 (PyPI,
//! scripts/ironic.sh conf; API and conductor in one process, noauth or behind the test Keystone) or
//! the real Juno Ironic 2014.2 (scripts/juno.sh: its API alone, or API and conductor in one process),
//! on a test database, on a port of the allocator's; up when its API answers. Its process group is
//! stopped when the `Ironic` is dropped. Also: reading Ironic's API (the latest microversion).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::db::sqlalchemy_url;
use super::juno;
use super::keystone;
use super::ports::port;
use super::process::Guard;

/// The Ironic test venv (scripts/ironic.sh install: Ironic 39, pyghmi).
pub const IRONIC_VENV: &str = "BM2IRONIC_TEST_IRONIC_VENV";

/// Which Ironic, and how it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Release {
    /// Ironic 39 (`ironic`: API and conductor in one process), from the venv of IRONIC_VENV.
    Ironic39,
    /// Juno's `ironic-api` alone (reads need no conductor), from the Juno venv.
    JunoApi,
    /// Juno's API and conductor in one process (`juno.sh allinone-fg`), its Glance (and Keystone
    /// v2.0 token call, unless `keystone_v2_port` says where) on 127.0.0.1:`glance_port`.
    JunoAllInOne { glance_port: u16 },
}

/// What `start_ironic` starts. `IronicOptions::new` (Ironic 39) or `IronicOptions::juno`, then the
/// fields that differ from the defaults.
#[derive(Clone, Debug)]
pub struct IronicOptions {
    pub release: Release,
    /// The venv its programs come from.
    pub venv: PathBuf,
    /// The database: a test database's admin URL (given to Ironic in SQLAlchemy's form).
    pub db_url: String,
    /// Behind this Keystone (Ironic 39 only): tokens checked on every call. None: noauth.
    pub keystone: Option<String>,
    /// The API's port on 127.0.0.1; None: one of the allocator's.
    pub port: Option<u16>,
    /// Its work dir (ironic.conf, ironic.log, tftpboot/); None: a temp dir of its own, kept. Juno's
    /// all-in-one always runs in `juno.sh`'s own (`<juno base>/allinone-<port>`).
    pub dir: Option<PathBuf>,
    /// Seconds between the conductor's power-state syncs; None: the script's default.
    pub sync_interval: Option<u32>,
    /// Seconds between the conductor's takeovers of ACTIVE nodes; None: the script's default.
    pub takeover_interval: Option<u32>,
    /// Whether a machine found in another power state than recorded is put back; None: the default
    /// (yes).
    pub force_power_sync: Option<bool>,
    /// Where file:// kernels and ramdisks may come from (Ironic 39).
    pub file_paths: Option<PathBuf>,
    /// Where pxelinux.0 and ldlinux.c32 are copied from into its TFTP root (Ironic 39).
    pub pxe_loaders: Option<PathBuf>,
    /// `[pxe] pxe_append_params` (Juno's all-in-one); None: Juno's default.
    pub pxe_append: Option<String>,
    /// The port of the Keystone v2.0 token call (Juno's all-in-one); None: the Glance's port (the fake
    /// Glance answers both).
    pub keystone_v2_port: Option<u16>,
    /// New deploys (Ironic 39, #46): the host name in the API URL the agent is given, `[deploy]
    /// http_url`, cleaning after tear-down. None: the script's defaults (127.0.0.1, no cleaning).
    pub api_host: Option<String>,
    pub http_url: Option<String>,
    pub automated_clean: Option<bool>,
    /// Seconds an IPMI command is retried (`[ipmi] command_retry_timeout`); None: the script's 10 s,
    /// for the tests of dead BMCs. A QEMU machine's BMC on a loaded host can be silent for longer
    /// (a CI run's deploy:: once failed cleaning on one `power status`): those tests give Ironic's
    /// own default, 60.
    pub ipmi_retry: Option<u32>,
    /// Names (name, address) this Ironic alone resolves: it runs in a mount namespace of its own
    /// whose /etc/hosts is this machine's plus these (`unshare`; the machine's file is untouched).
    pub hosts: Vec<(String, String)>,
    /// Images from this Glance (its URL, the Keystone v3 URL and admin password it is read with).
    pub glance: Option<(String, String, String)>,
}

impl IronicOptions {
    /// Ironic 39 from `venv` on `db_url`, noauth, every other setting the script's default.
    pub fn new(venv: &Path, db_url: &str) -> IronicOptions {
        IronicOptions {
            release: Release::Ironic39,
            venv: venv.to_path_buf(),
            db_url: db_url.to_string(),
            keystone: None,
            port: None,
            dir: None,
            sync_interval: None,
            takeover_interval: None,
            force_power_sync: None,
            file_paths: None,
            pxe_loaders: None,
            pxe_append: None,
            keystone_v2_port: None,
            api_host: None,
            http_url: None,
            automated_clean: None,
            ipmi_retry: None,
            hosts: Vec::new(),
            glance: None,
        }
    }

    /// The Juno Ironic (`release`: JunoApi or JunoAllInOne) from the Juno venv `venv` on `db_url`.
    pub fn juno(venv: &Path, db_url: &str, release: Release) -> IronicOptions {
        IronicOptions { release, ..IronicOptions::new(venv, db_url) }
    }
}

/// A running Ironic: its API's URL, its work dir; stopped when dropped.
pub struct Ironic {
    pub base: String,
    pub port: u16,
    pub dir: PathBuf,
    options: IronicOptions,
    process: Option<Guard>,
}

/// Starts the Ironic `o` describes and waits (90 s at most) until its API answers: for Ironic 39,
/// until its conductor lists the `ipmi` driver (behind Keystone asked with an admin's system token).
pub async fn start_ironic(o: IronicOptions) -> Ironic {
    let port = o.port.unwrap_or_else(port);
    // a port still held (an Ironic of an earlier start shutting down) would answer for the new one
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "127.0.0.1:{port} stays in use: another Ironic runs there");
        std::thread::sleep(Duration::from_millis(200));
    }
    let db = sqlalchemy_url(&o.db_url);
    let (process, dir) = match &o.release {
        Release::Ironic39 => {
            let dir = o.dir.clone().unwrap_or_else(|| tempfile::tempdir().unwrap().keep());
            let conf = write_conf(&o, &dir, port).display().to_string();
            let program = o.venv.join("bin/ironic");
            let stderr = dir.join("ironic.stderr");
            let process = if o.hosts.is_empty() {
                serve(&program, &conf, &stderr)
            } else {
                serve_with_hosts(&program, &conf, &stderr, &dir, &o.hosts)
            };
            (process, dir)
        }
        Release::JunoApi => {
            assert!(o.keystone.is_none(), "the Juno Ironic is tested with noauth only");
            let dir = o.dir.clone().unwrap_or_else(|| tempfile::tempdir().unwrap().keep());
            let conf = conf_path(
                "juno.sh conf",
                juno::juno_sh(&o.venv, &["conf", dir.to_str().unwrap(), &db, &port.to_string()]),
            );
            (serve(&o.venv.join("bin/ironic-api"), &conf, &dir.join("stderr.log")), dir)
        }
        Release::JunoAllInOne { glance_port } => {
            assert!(o.keystone.is_none(), "the Juno Ironic is tested with noauth only");
            let base = o.venv.parent().unwrap();
            let mut c = Command::new("bash");
            c.arg(super::env::repo_file("scripts/juno.sh"))
                .args(["allinone-fg", &db, &port.to_string()])
                .env("BM2_JUNO_BASE", base)
                .env("BM2_JUNO_GLANCE", format!("127.0.0.1:{glance_port}"))
                .env("BM2_JUNO_SYNC_INTERVAL", o.sync_interval.unwrap_or(2).to_string());
            if let Some(f) = o.force_power_sync {
                c.env("BM2_JUNO_FORCE_POWER_SYNC", f.to_string());
            }
            if let Some(a) = &o.pxe_append {
                c.env("BM2_JUNO_PXE_APPEND", a);
            }
            if let Some(k) = o.keystone_v2_port {
                c.env("BM2_JUNO_KEYSTONE_V2", format!("127.0.0.1:{k}"));
                c.env("BM2_JUNO_KEYSTONE_V2_PASSWORD", super::juno::KEYSTONE_V2_PASSWORD);
            }
            let g = Guard::spawn(c.stdout(Stdio::null()).stderr(Stdio::null()));
            (g, base.join(format!("allinone-{port}")))
        }
    };
    let options = IronicOptions { port: Some(port), ..o };
    let ironic = Ironic { base: format!("http://127.0.0.1:{port}"), port, dir, options, process: Some(process) };
    ironic.wait_up().await;
    ironic
}

/// Writes the ironic.conf of the Ironic 39 `o` describes into `dir`, its API on `port`
/// (scripts/ironic.sh conf; the `ramdisk` deploy enabled): its path. `start_ironic` writes it again
/// the same way; a test that needs it before (ironic-dbsync, bm2ironic's --ironic-conf) calls this.
pub fn write_conf(o: &IronicOptions, dir: &Path, port: u16) -> PathBuf {
    let mut c = Command::new("bash");
    c.arg(super::env::repo_file("scripts/ironic.sh"))
        .arg("conf")
        .arg(dir)
        .arg(sqlalchemy_url(&o.db_url))
        .arg(port.to_string());
    let settings = [
        ("BM2_IRONIC_KEYSTONE", o.keystone.clone()),
        ("BM2_IRONIC_SYNC_INTERVAL", o.sync_interval.map(|s| s.to_string())),
        ("BM2_IRONIC_TAKEOVER_INTERVAL", o.takeover_interval.map(|s| s.to_string())),
        ("BM2_IRONIC_FORCE_POWER_SYNC", o.force_power_sync.map(|f| f.to_string())),
        ("BM2_IRONIC_FILE_PATHS", o.file_paths.as_ref().map(|p| p.display().to_string())),
        ("BM2_IRONIC_PXE_LOADERS", o.pxe_loaders.as_ref().map(|p| p.display().to_string())),
        ("BM2_IRONIC_API_HOST", o.api_host.clone()),
        ("BM2_IRONIC_HTTP_URL", o.http_url.clone()),
        ("BM2_IRONIC_AUTOMATED_CLEAN", o.automated_clean.map(|c| c.to_string())),
        ("BM2_IRONIC_IPMI_RETRY", o.ipmi_retry.map(|c| c.to_string())),
        ("BM2_IRONIC_GLANCE", o.glance.as_ref().map(|g| g.0.clone())),
        ("BM2_IRONIC_GLANCE_KEYSTONE", o.glance.as_ref().map(|g| g.1.clone())),
        ("BM2_IRONIC_GLANCE_PASSWORD", o.glance.as_ref().map(|g| g.2.clone())),
    ];
    for (k, v) in settings {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    let conf = PathBuf::from(conf_path("ironic.sh conf", c.output().unwrap()));
    enable_ramdisk_deploy(&conf);
    conf
}

/// The conf file a conf script (`what`) wrote, as it printed its path.
fn conf_path(what: &str, out: std::process::Output) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `program --config-file conf`, its stderr into the file `stderr`.
fn serve(program: &Path, conf: &str, stderr: &Path) -> Guard {
    Guard::spawn(
        Command::new(program)
            .args(["--config-file", conf])
            .env("PYTHONWARNINGS", "ignore")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr).unwrap()),
    )
}

/// `serve`, in a mount namespace of its own whose /etc/hosts (a bind mount) also names `hosts`.
fn serve_with_hosts(program: &Path, conf: &str, stderr: &Path, dir: &Path, hosts: &[(String, String)]) -> Guard {
    let mut text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    for (name, addr) in hosts {
        text.push_str(&format!("\n{addr} {name}\n"));
    }
    let file = dir.join("hosts");
    std::fs::write(&file, text).unwrap();
    let script = r#"mount --bind "$1" /etc/hosts && shift && exec "$@""#;
    Guard::spawn(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", script, "sh"])
            .arg(&file)
            .arg(program)
            .args(["--config-file", conf])
            .env("PYTHONWARNINGS", "ignore")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(stderr).unwrap()),
    )
}

impl Ironic {
    async fn wait_up(&self) {
        let juno = self.options.release != Release::Ironic39;
        let token = match &self.options.keystone {
            Some(k) => Some(keystone::admin_token(k).await),
            None => None,
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(90);
        while Instant::now() < deadline {
            let path = if juno { "/v1" } else { "/v1/drivers" };
            let mut rq = client.get(format!("{}{path}", self.base));
            if !juno {
                // Juno's API has no microversions
                rq = rq.header("X-OpenStack-Ironic-API-Version", "latest");
            }
            if let Some(t) = &token {
                rq = rq.header("X-Auth-Token", t);
            }
            if let Ok(r) = rq.send().await {
                if r.status().is_success() && (juno || r.text().await.unwrap_or_default().contains("\"ipmi\"")) {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("{:?} did not come up on {}:\n{}", self.options.release, self.base, self.log_tail());
    }

    /// Its log (ironic.log in its work dir).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("ironic.log")
    }

    /// The last lines of its log (its errors and warnings first).
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let errors: Vec<&str> = log.lines().filter(|l| l.contains(" ERROR ") || l.contains(" WARNING ")).collect();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- Ironic's errors and warnings ---\n{}\n--- its last lines ---\n{}",
            errors[errors.len().saturating_sub(15)..].join("\n"),
            lines[lines.len().saturating_sub(15)..].join("\n")
        )
    }

    /// Stops it (API and conductor), runs `stopped`, and starts it again as it was started: the same
    /// database, port and settings.
    pub async fn restart_after(&mut self, stopped: impl FnOnce()) {
        drop(self.process.take());
        stopped();
        *self = start_ironic(self.options.clone()).await;
    }
}

/// Instance nodes whose next boot was learned are written with `deploy_interface = ramdisk`
/// (docs/mapping.md, "The next boot"): the conductor must enable it (scripts/ironic.sh's conf may
/// already).
fn enable_ramdisk_deploy(conf: &Path) {
    let text = std::fs::read_to_string(conf).unwrap();
    let fixed: Vec<String> = text
        .lines()
        .map(|l| match l.strip_prefix("enabled_deploy_interfaces = ") {
            Some(v) if !v.split(',').any(|i| i.trim() == "ramdisk") => format!("{l},ramdisk"),
            _ => l.to_string(),
        })
        .collect();
    std::fs::write(conf, fixed.join("\n") + "\n").unwrap();
}

/// (status, body) of a GET (the body as JSON, or as a JSON string when it is not JSON); `versioned`:
/// at Ironic's latest microversion.
async fn request(base: &str, path: &str, versioned: bool) -> (u16, Value) {
    let mut rq = reqwest::Client::new().get(format!("{base}{path}"));
    if versioned {
        rq = rq.header("X-OpenStack-Ironic-API-Version", "latest");
    }
    let r = rq.send().await.unwrap();
    let status = r.status().as_u16();
    let body = r.text().await.unwrap();
    (status, serde_json::from_str(&body).unwrap_or(Value::String(body)))
}

/// (status, body) of a GET of Ironic's API at the latest microversion.
pub async fn get_status(base: &str, path: &str) -> (u16, Value) {
    request(base, path, true).await
}

/// The JSON body of a GET of Ironic's API at the latest microversion, whatever its status.
pub async fn get(base: &str, path: &str) -> Value {
    let (_, body) = request(base, path, true).await;
    assert!(!body.is_string(), "GET {path}: not JSON: {body}");
    body
}

/// The JSON body of a successful GET of Ironic's API at the latest microversion (panics with the
/// answer otherwise).
pub async fn get_ok(base: &str, path: &str) -> Value {
    let (status, body) = request(base, path, true).await;
    assert!((200..300).contains(&status), "GET {path}: HTTP {status}: {body}");
    body
}

/// The JSON body of a successful GET without a microversion (Juno's API has none; a proxy's), or a
/// panic with the answer.
pub async fn get_ok_unversioned(base: &str, path: &str) -> Value {
    let (status, body) = request(base, path, false).await;
    assert!((200..300).contains(&status), "GET {path}: HTTP {status}: {body}");
    body
}
