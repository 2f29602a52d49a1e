//! `bm2ironic config`: the files it writes are loaded by the target release's own oslo.config
//! (scripts/conf-check.py, run in that release's venv) and every option it writes must be one the
//! release registers, its value loading with the release's own types: Juno Nova 2014.2 and Juno
//! Ironic 2014.2 (Python 2.7), Ironic 39.0.0, and a modern Nova. Then what it refuses and hides.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bm2ironic, server_env, IRONIC_VENV};

const JUNO_VENV: &str = "BM2IRONIC_TEST_JUNO_VENV";
const JUNO_NOVA_VENV: &str = "BM2IRONIC_TEST_JUNO_NOVA_VENV";
const NOVA_VENV: &str = "BM2IRONIC_TEST_NOVA_VENV";

/// A baremetal nova-compute's nova.conf as Juno left it (Keystone by host and port, Glance and
/// Neutron in `[DEFAULT]`), passwords that must never be printed.
const NOVA_CONF: &str = "\
[DEFAULT]
host = bm-compute-1
my_ip = 10.0.0.2
compute_driver = nova.virt.baremetal.driver.BareMetalDriver
scheduler_host_manager = nova.scheduler.baremetal_host_manager.BaremetalHostManager
glance_api_servers = 10.0.0.3:9292
neutron_url = http://10.0.0.4:9696
rpc_backend = fake

[database]
connection = mysql://nova:NovaDbPw1@127.0.0.1/nova

[keystone_authtoken]
auth_host = 127.0.0.1
auth_port = 35357
auth_protocol = http
auth_uri = http://127.0.0.1:5000/v2.0
admin_user = nova
admin_password = KsPassw0rd
admin_tenant_name = service

[baremetal]
sql_connection = mysql://nova:BmDbPw1@127.0.0.1/nova_bm
tftp_root = /srv/tftp
pxe_append_params = nofb nomodeset vga=normal console=ttyS0
power_manager = nova.virt.baremetal.ipmi.IPMI
virtual_power_host_pass = VpPw1
";
const PASSWORDS: [&str; 5] = ["NovaDbPw1", "KsPassw0rd", "BmDbPw1", "VpPw1", "IrDbPw1"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Writes both files for `target` into `dir`; returns the JSON answer.
fn write_files(dir: &Path, target: &str) -> serde_json::Value {
    let nova = dir.join("nova.conf");
    std::fs::write(&nova, NOVA_CONF).unwrap();
    let out = bm2ironic(dir)
        .env("BM2IRONIC_IRONIC_DB", "mysql://ironic:IrDbPw1@127.0.0.1/ironic")
        .args(["--nova-conf", nova.to_str().unwrap(), "--ironic-url", "http://127.0.0.1:6385", "config"])
        .args(["--target", target, "--json"])
        .arg("--write-nova")
        .arg(dir.join(format!("nova-{target}.conf")))
        .arg("--write-ironic")
        .arg(dir.join(format!("ironic-{target}.conf")))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for p in PASSWORDS {
        assert!(!stdout.contains(p), "a password reached the output: {stdout}");
    }
    for f in ["nova", "ironic"] {
        let mode = std::fs::metadata(dir.join(format!("{f}-{target}.conf"))).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{f}.conf must be readable by its owner only");
    }
    serde_json::from_str(&stdout).unwrap()
}

/// Every option the command wrote (set or added) into `file`, as SECTION.OPTION.
fn written(answer: &serde_json::Value, file: &str) -> Vec<String> {
    answer["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["file"] == file && !c["new"].is_null())
        .map(|c| format!("{}.{}", c["section"].as_str().unwrap(), c["option"].as_str().unwrap()))
        .collect()
}

/// scripts/conf-check.py in `python`: Ok(stdout) when every option is known and loads.
fn check(
    python: &Path,
    kind: &str,
    file: &Path,
    options: &[String],
    pythonpath: Option<&Path>,
) -> Result<String, String> {
    let mut c = Command::new(python);
    c.arg(repo().join("scripts/conf-check.py")).arg(kind).arg(file).args(options);
    if let Some(p) = pythonpath {
        c.env("PYTHONPATH", p);
    }
    let out = c.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(0) => Ok(text),
        _ => Err(text),
    }
}

/// The release rejects an option it does not know: the check is not a rubber stamp.
fn check_rejects_unknown(python: &Path, kind: &str, file: &Path, pythonpath: Option<&Path>) {
    let mut text = std::fs::read_to_string(file).unwrap();
    text.push_str("\n[DEFAULT]\nbm2ironic_no_such_option = 1\n");
    let bad = file.with_extension("unknown.conf");
    std::fs::write(&bad, text).unwrap();
    let e = check(python, kind, &bad, &["DEFAULT.bm2ironic_no_such_option".into()], pythonpath).unwrap_err();
    assert!(e.contains("UNKNOWN DEFAULT.bm2ironic_no_such_option"), "{e}");
}

fn venv_python(var: &str) -> Option<PathBuf> {
    server_env(var).map(|v| PathBuf::from(v).join("bin/python"))
}

/// Juno Nova's venv: `BM2IRONIC_TEST_JUNO_NOVA_VENV`, else the `nova-venv` scripts/juno.sh installs
/// beside the Juno Ironic's venv.
fn juno_nova_python() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(JUNO_NOVA_VENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v).join("bin/python"));
    }
    let beside = std::env::var_os(JUNO_VENV).map(|v| PathBuf::from(v).with_file_name("nova-venv").join("bin/python"));
    beside.filter(|p| p.exists()).or_else(|| venv_python(JUNO_NOVA_VENV))
}

#[test]
fn juno_files_load_in_juno_nova_and_juno_ironic() {
    let (Some(nova_py), Some(ironic_py)) = (juno_nova_python(), venv_python(JUNO_VENV)) else { return };
    // ClusteredComputeManager lives in the ironic 2014.2 package: nova-compute imports it from there
    let ironic_src = PathBuf::from(std::env::var(JUNO_VENV).unwrap()).parent().unwrap().join("src");
    let dir = tempfile::tempdir().unwrap();
    let answer = write_files(dir.path(), "juno");
    let nova_opts = written(&answer, "nova");
    for o in [
        "DEFAULT.compute_driver",
        "DEFAULT.compute_manager",
        "DEFAULT.scheduler_host_manager",
        "DEFAULT.baremetal_scheduler_default_filters",
        "DEFAULT.ram_allocation_ratio",
        "DEFAULT.reserved_host_memory_mb",
        "DEFAULT.reserved_host_disk_mb",
        "DEFAULT.firewall_driver",
        "ironic.api_endpoint",
        "ironic.admin_password",
    ] {
        assert!(nova_opts.contains(&o.to_string()), "{o} not written: {nova_opts:?}");
    }
    let nova_file = dir.path().join("nova-juno.conf");
    let ok = check(&nova_py, "juno-nova", &nova_file, &nova_opts, Some(&ironic_src)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.lines().filter(|l| l.starts_with("ok ")).count(), nova_opts.len(), "{ok}");
    check_rejects_unknown(&nova_py, "juno-nova", &nova_file, Some(&ironic_src));
    let ironic_opts = written(&answer, "ironic");
    assert!(ironic_opts.contains(&"DEFAULT.enabled_drivers".to_string()), "{ironic_opts:?}");
    let ironic_file = dir.path().join("ironic-juno.conf");
    let ok = check(&ironic_py, "juno-ironic", &ironic_file, &ironic_opts, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.lines().filter(|l| l.starts_with("ok ")).count(), ironic_opts.len(), "{ok}");
    check_rejects_unknown(&ironic_py, "juno-ironic", &ironic_file, None);
    // nova baremetal's section is commented out whole, its password with it
    let text = std::fs::read_to_string(&nova_file).unwrap();
    assert!(text.contains("# [baremetal]") && !text.lines().any(|l| l.trim() == "[baremetal]"), "{text}");
}

#[test]
fn modern_ironic_conf_loads_in_ironic_39() {
    let Some(py) = venv_python(IRONIC_VENV) else { return };
    let dir = tempfile::tempdir().unwrap();
    let answer = write_files(dir.path(), "modern");
    let opts = written(&answer, "ironic");
    for o in [
        "DEFAULT.enabled_hardware_types",
        "DEFAULT.enabled_deploy_interfaces",
        "pxe.kernel_append_params",
        "database.connection",
        "conductor.force_power_state_during_sync",
        // what a new deploy needs (#46)
        "deploy.default_boot_mode",
        "deploy.http_url",
        "deploy.http_root",
        "service_catalog.endpoint_override",
    ] {
        assert!(opts.contains(&o.to_string()), "{o} not written: {opts:?}");
    }
    let file = dir.path().join("ironic-modern.conf");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("default_boot_mode = bios") && text.contains("endpoint_override = http://127.0.0.1:6385\n"),
        "{text}"
    );
    let ok = check(&py, "ironic", &file, &opts, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.lines().filter(|l| l.starts_with("ok ")).count(), opts.len(), "{ok}");
    check_rejects_unknown(&py, "ironic", &file, None);
}

#[test]
fn modern_nova_conf_loads_in_nova() {
    let Some(py) = venv_python(NOVA_VENV) else { return };
    let dir = tempfile::tempdir().unwrap();
    let answer = write_files(dir.path(), "modern");
    let opts = written(&answer, "nova");
    assert!(opts.contains(&"ironic.auth_type".to_string()) && opts.contains(&"DEFAULT.compute_driver".to_string()));
    let file = dir.path().join("nova-modern.conf");
    let ok = check(&py, "nova", &file, &opts, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok.lines().filter(|l| l.starts_with("ok ")).count(), opts.len(), "{ok}");
    check_rejects_unknown(&py, "nova", &file, None);
    assert!(answer["next_steps"].to_string().contains("nova-manage cell_v2 discover_hosts --verbose"));
}

#[test]
fn refuses_to_overwrite_and_hides_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let nova = dir.path().join("nova.conf");
    std::fs::write(&nova, NOVA_CONF).unwrap();
    let run = |extra: &[&str]| {
        bm2ironic(dir.path())
            .args(["--nova-conf", nova.to_str().unwrap(), "--ironic-url", "http://127.0.0.1:6385", "config"])
            .args(extra)
            .output()
            .unwrap()
    };
    // the printed changes: every password masked
    let out = run(&["--target", "juno"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("admin_password") && text.contains("***"), "{text}");
    for p in PASSWORDS {
        assert!(!text.contains(p), "{p} printed: {text}");
    }
    // piped, the values are whole: they are what the operator copies (#48 item 8: before,
    // `nova.virt.ironic.…` at the 64-character cell bound)
    let driver = text.lines().find(|l| l.contains("compute_driver")).expect("compute_driver changes");
    assert!(driver.contains("nova.virt.baremetal.driver.BareMetalDriver -> nova.virt.ironic.IronicDriver"), "{driver}");
    assert!(!text.contains('…'), "nothing cut: {text}");
    // never the given nova.conf, not even with --force
    let out = run(&["--target", "juno", "--write-nova", nova.to_str().unwrap(), "--force"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&nova).unwrap(), NOVA_CONF);
    // an existing output only with --force
    let existing = dir.path().join("out.conf");
    std::fs::write(&existing, "keep").unwrap();
    let out = run(&["--target", "juno", "--write-nova", existing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
    assert!(run(&["--target", "juno", "--write-nova", existing.to_str().unwrap(), "--force"]).status.success());
    assert_eq!(std::fs::metadata(&existing).unwrap().permissions().mode() & 0o777, 0o600);
    // no target and no Ironic database to read it from: a usage error
    assert_eq!(run(&[]).status.code(), Some(2));
    // a hostile host name (an escape sequence, blanks) is refused and named, never echoed raw
    let out = run(&["--target", "juno", "--host", "evil\x1b[2Jhost name"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--host") && !err.contains('\x1b'), "{err}");
}

/// `[baremetal] tftp_root = $state_path/tftp` (or `${state_path}`) in nova.conf: oslo.config
/// substitutes nova.conf's own `[DEFAULT] state_path`. Copied as it was into ironic.conf, Ironic
/// substituted ITS state_path (another directory). The value written is the one nova read,
/// checked with the real oslo.config on both sides: nova.conf as nova's options read it, the
/// written ironic.conf as Ironic 39's registered options read it. A `$state_path` nova.conf does
/// not set cannot be known here (nova's default is its package directory): refused, naming it.
#[test]
fn tftp_root_with_state_path_is_the_directory_nova_used() {
    let Some(py) = venv_python(IRONIC_VENV) else { return };
    let nova_view = |file: &Path| {
        let script = "import sys\nfrom oslo_config import cfg\nc = cfg.ConfigOpts()\n\
            c.register_opts([cfg.StrOpt('pybasedir', default='/usr/lib/python2.7/dist-packages/nova'), cfg.StrOpt('state_path', default='$pybasedir')])\n\
            c.register_opt(cfg.StrOpt('tftp_root', default='/tftpboot'), group='baremetal')\n\
            c(args=[], default_config_files=[sys.argv[1]])\nprint(c.baremetal.tftp_root)\n";
        let out = Command::new(&py).args(["-c", script]).arg(file).env("PYTHONWARNINGS", "ignore").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let ironic_view = |file: &Path| {
        let script = "import sys\nimport ironic.conf\nc = ironic.conf.CONF\nc(args=[], default_config_files=[sys.argv[1]])\nprint(c.pxe.tftp_root)\n";
        let out = Command::new(&py).args(["-c", script]).arg(file).env("PYTHONWARNINGS", "ignore").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for root in ["$state_path/tftp", "${state_path}/tftp"] {
        let dir = tempfile::tempdir().unwrap();
        let nova = dir.path().join("nova.conf");
        let text = NOVA_CONF
            .replace("tftp_root = /srv/tftp", &format!("tftp_root = {root}"))
            .replace("[DEFAULT]\nhost = bm-compute-1\n", "[DEFAULT]\nhost = bm-compute-1\nstate_path = /srv/nova\n");
        std::fs::write(&nova, text).unwrap();
        let ironic = dir.path().join("ironic.conf");
        let out = bm2ironic(dir.path())
            .env("BM2IRONIC_IRONIC_DB", "mysql://ironic:IrDbPw1@127.0.0.1/ironic")
            .args(["--nova-conf", nova.to_str().unwrap(), "--ironic-url", "http://127.0.0.1:6385", "config"])
            .args(["--target", "modern", "--write-ironic"])
            .arg(&ironic)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(nova_view(&nova), "/srv/nova/tftp", "{root}: what nova read");
        assert_eq!(ironic_view(&ironic), "/srv/nova/tftp", "{root}: what Ironic reads from the file written");
    }
    // nova.conf does not set state_path: refused, naming the setting
    let dir = tempfile::tempdir().unwrap();
    let nova = dir.path().join("nova.conf");
    std::fs::write(&nova, NOVA_CONF.replace("tftp_root = /srv/tftp", "tftp_root = $state_path/tftp")).unwrap();
    let out = bm2ironic(dir.path())
        .args(["--nova-conf", nova.to_str().unwrap(), "--ironic-url", "http://127.0.0.1:6385", "config"])
        .args(["--target", "modern", "--write-ironic"])
        .arg(dir.path().join("ironic.conf"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("[baremetal] tftp_root = $state_path/tftp") && stderr.contains("does not set"), "{stderr}");
    assert!(!dir.path().join("ironic.conf").exists(), "nothing written on a guess");
}
