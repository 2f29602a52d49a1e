//! Passwords never reach stdout, stderr or the audit log: database passwords (working and failing
//! connections, given by flag, environment or nova.conf) and the BMC passwords in the rows.

use crate::common::{bm2ironic, read_logs, Backend, TestDb, READER_PASSWORD, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

const BMC_PASSWORD_PREFIX: &str = "bmc-Secret-";

fn assert_nothing_leaks(what: &str, stdout: &[u8], stderr: &[u8], logs: &std::path::Path, secrets: &[&str]) {
    let log_text = read_logs(logs);
    assert!(log_text.contains("command started"), "{what}: the audit log was written");
    for (name, text) in [
        ("stdout", String::from_utf8_lossy(stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(stderr).into_owned()),
        ("audit log", log_text),
    ] {
        for s in secrets {
            assert!(!text.contains(s), "{what}: '{s}' appears in {name}:\n{text}");
        }
    }
}

async fn no_password_in_outputs_or_audit_log(backend: Backend) {
    let Some(db) = TestDb::with_fixture(backend, "leak", &Fixture::standard()).await else { return };

    // working connection, password on the command line, everything mirrored to stderr
    let logs = tempfile::tempdir().unwrap();
    let out =
        bm2ironic(logs.path()).args(["-vvv", "inventory", "--json", "--nova-bm-db", &db.reader_url]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let secrets: Vec<&str> =
        if backend == Backend::Sqlite { vec![BMC_PASSWORD_PREFIX] } else { vec![READER_PASSWORD, BMC_PASSWORD_PREFIX] };
    assert_nothing_leaks("working, flag", &out.stdout, &out.stderr, logs.path(), &secrets);
    let log_text = read_logs(logs.path());
    assert!(log_text.contains("connected"), "connections are audited");
    if backend != Backend::Sqlite {
        assert!(String::from_utf8_lossy(&out.stderr).contains("visible to other local users"), "the ps warning");
        assert!(log_text.contains("bm_reader:***@"), "the audit log shows the redacted URL:\n{log_text}");
    }

    // the table too
    let logs = tempfile::tempdir().unwrap();
    let out =
        bm2ironic(logs.path()).env("BM2IRONIC_NOVA_BM_DB", &db.reader_url).args(["-v", "inventory"]).output().unwrap();
    assert!(out.status.success());
    assert_nothing_leaks("working, env, table", &out.stdout, &out.stderr, logs.path(), &secrets);
}

/// Servers only (SQLite has no login).
async fn no_password_in_outputs_or_audit_log_when_the_login_fails(backend: Backend) {
    let Some(db) = TestDb::with_fixture(backend, "leakpw", &Fixture::standard()).await else { return };
    let wrong = "Wr0ng-Secret-pw";

    // failing connection: wrong password, by flag and by environment
    let bad = db.reader_url_with_password(wrong);
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).args(["-vvv", "inventory", "--nova-bm-db", &bad]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_nothing_leaks("failing, flag", &out.stdout, &out.stderr, logs.path(), &[wrong]);
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).env("BM2IRONIC_NOVA_BM_DB", &bad).args(["-vvv", "inventory"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_nothing_leaks("failing, env", &out.stdout, &out.stderr, logs.path(), &[wrong]);
}

async fn nova_conf_passwords_stay_hidden(backend: Backend) {
    let Some(db) = TestDb::with_fixture(backend, "conf", &Fixture::standard()).await else { return };
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nova.conf");
    std::fs::write(
        &conf,
        format!(
            "[DEFAULT]\nhost = bm-compute-1\n\n[baremetal]\nsql_connection = {}\npower_manager = nova.virt.baremetal.virtual_power_driver.VirtualPowerManager\nvirtual_power_host_pass = SshHost-Secret-9\n",
            db.reader_url
        ),
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).args(["-vvv", "inventory", "--json", "--nova-conf"]).arg(&conf).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut secrets = vec!["SshHost-Secret-9", BMC_PASSWORD_PREFIX];
    if backend != Backend::Sqlite {
        secrets.push(READER_PASSWORD);
    }
    assert_nothing_leaks("nova.conf", &out.stdout, &out.stderr, logs.path(), &secrets);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("visible to other local users"),
        "a config file is not ps-visible"
    );
}

/// The run report (`migrate --report`, Markdown and JSON) names the databases without their passwords.
async fn the_run_report_names_no_password(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "rsrc", &Fixture::generated(4, 1)).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "rtgt").await else { return };
    let admin = bm2ironic::core::db::url::DbUrl::parse(&tgt.admin_url).unwrap();
    let admin_pw = admin.password.as_ref().map(|p| p.expose().to_string());
    let mut secrets = vec![BMC_PASSWORD_PREFIX.to_string()];
    if backend != Backend::Sqlite {
        secrets.push(READER_PASSWORD.into());
        secrets.extend(admin_pw.filter(|p| !p.is_empty()));
    }
    let dir = tempfile::tempdir().unwrap();
    for name in ["run.md", "run.json"] {
        let path = dir.path().join(name);
        let logs = tempfile::tempdir().unwrap();
        let out = bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args([
                "migrate",
                "--rehearse",
                "--default-arch",
                "x86_64",
                "--deploy-kernel",
                "k",
                "--deploy-ramdisk",
                "r",
                // about secrets, not boots (no TFTP tree): each instance's boot is the operator's word
                "--resolve",
                "unknown-boot=local-boot",
            ])
            .arg("--report")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = std::fs::read_to_string(&path).unwrap();
        for s in &secrets {
            assert!(!text.contains(s.as_str()), "{name}: '{s}' in the report:\n{text}");
        }
        if backend != Backend::Sqlite {
            assert!(text.contains(":***@"), "{name}: the URLs are there, redacted:\n{text}");
        }
    }
}

per_backend! {
    no_password_in_outputs_or_audit_log => super::no_password_in_outputs_or_audit_log;
    [servers] no_password_in_outputs_or_audit_log_when_the_login_fails => super::no_password_in_outputs_or_audit_log_when_the_login_fails;
    nova_conf_passwords_stay_hidden => super::nova_conf_passwords_stay_hidden;
    the_run_report_names_no_password => super::the_run_report_names_no_password;
}

#[test]
fn clap_errors_do_not_echo_passwords() {
    let logs = tempfile::tempdir().unwrap();
    // a misplaced URL becomes an "unexpected argument" that clap quotes back
    let out = bm2ironic(logs.path()).args(["inventory", "mysql://nova:Clap-Secret-1@db/nova_bm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nova:***@db"), "{err}");
    assert!(!err.contains("Clap-Secret-1"));
}

#[test]
fn demo_never_shows_bmc_passwords() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).args(["demo", "--no-tui", "--dir"]).arg(dir.path().join("sb")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_nothing_leaks("demo", &out.stdout, &out.stderr, logs.path(), &[BMC_PASSWORD_PREFIX]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("BM2IRONIC_IRONIC_DB"));
    // without a terminal and without --no-tui: exit 2, one clear line
    let out = bm2ironic(logs.path()).args(["demo", "--dir"]).arg(dir.path().join("sb2")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-tui"));
}

/// Every channel at once (MariaDB): distinctive secrets planted in every input (a password in a
/// URL's userinfo, one in a URL's query string, nova.conf's, the BMC passwords in the rows, an
/// Ironic token and an OpenStack password in the environment) and looked for in every output of a
/// whole session (stdout and stderr of inventory, plan, migrate, verify, rollback, watch; the audit
/// log; the run report; the run record in the Ironic database; the state directory; the wizard's
/// screens in a real terminal; the output of a panic): none is found.
#[tokio::test(flavor = "multi_thread")]
async fn no_secret_in_any_channel() {
    let Some(src) = TestDb::with_fixture(Backend::MySql, "ssrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::MySql, "stgt").await else { return };
    let n = std::process::id();
    let (reader_pw, writer_pw, conf_pw, token, os_pw) =
        ("Q7-Reader-Secret", "W9-Writer-Secret", "C4-Conf-Secret", "T5-Token-Secret", "O3-Os-Secret");
    tgt.exec(&format!("CREATE USER 'sr{n}'@'127.0.0.1' IDENTIFIED BY '{reader_pw}'")).await;
    tgt.exec(&format!("GRANT SELECT ON {}.* TO 'sr{n}'@'127.0.0.1'", src.name)).await;
    tgt.exec(&format!("CREATE USER 'sw{n}'@'127.0.0.1' IDENTIFIED BY '{writer_pw}'")).await;
    tgt.exec(&format!("GRANT ALL ON {}.* TO 'sw{n}'@'127.0.0.1'", tgt.name)).await;
    let hostport = tgt.admin_url.split('@').nth(1).unwrap().split('/').next().unwrap().to_string();
    // the reader's password in the query string (as libpq and SQLAlchemy take it), the writer's in userinfo
    let src_url = format!("mysql://sr{n}@{hostport}/{}?password={reader_pw}", src.name);
    let tgt_url = format!("mysql://sw{n}:{writer_pw}@{hostport}/{}", tgt.name);
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("nova.conf");
    std::fs::write(
        &conf,
        format!("[DEFAULT]\nhost = bm-compute-1\n\n[baremetal]\nsql_connection = {src_url}\nvirtual_power_host_pass = {conf_pw}\n"),
    )
    .unwrap();
    let ironic_log = dir.path().join("ironic.log");
    std::fs::write(&ironic_log, "2014-09-01 00:00:00.000 1 ERROR ironic.conductor.manager [-] something\n").unwrap();
    let logs = dir.path().join("audit");
    let state = dir.path().join("state");
    let report = dir.path().join("run.md");
    let secrets = [reader_pw, writer_pw, conf_pw, token, os_pw, BMC_PASSWORD_PREFIX];

    let run = |args: &[&str], env_src: bool| {
        let mut c = bm2ironic(&logs);
        c.env("BM2IRONIC_IRONIC_DB", &tgt_url)
            .env("BM2IRONIC_IRONIC_TOKEN", token)
            .env("OS_PASSWORD", os_pw)
            .env("BM2IRONIC_STATE_DIR", &state);
        if env_src {
            c.env("BM2IRONIC_NOVA_BM_DB", &src_url);
        } else {
            c.arg("--nova-conf").arg(&conf);
        }
        let out = c.arg("-vvv").args(args).output().unwrap();
        (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    };
    let mut outputs = Vec::new();
    fn with_res<'a>(a: &[&'a str]) -> Vec<&'a str> {
        [a, STANDARD_RESOLUTIONS].concat()
    }
    let watch_log = format!("ironic={}", ironic_log.display());
    for (args, env_src, want) in [
        (vec!["inventory"], true, Some(0)),
        (vec!["inventory", "--json"], false, Some(0)),
        (with_res(&["plan"]), true, Some(0)),
        (with_res(&["plan", "--json"]), false, Some(0)),
        (with_res(&["migrate", "--yes", "--json", "--report", report.to_str().unwrap()]), true, Some(0)),
        (vec!["verify"], false, Some(0)),
        (vec!["rollback", "--list"], true, Some(0)),
        (vec!["watch", "--from-start", "--for", "1s", "--log", &watch_log], true, None),
    ] {
        let (code, text) = run(&args, env_src);
        if want.is_some() {
            assert_eq!(code, want, "{args:?}: {text}");
        }
        outputs.push((format!("{args:?}"), text));
    }
    // a failing login: the wrong password is not echoed either
    let wrong = format!("mysql://sw{n}:Wrong-Secret-8@{hostport}/{}", tgt.name);
    let out =
        bm2ironic(&logs).env("BM2IRONIC_IRONIC_DB", &wrong).args(["-vvv", "rollback", "--list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    outputs.push((
        "wrong password".into(),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    ));

    // the run record, the report, the state directory, the audit log
    outputs.push((
        "run record".into(),
        tgt.rows("SELECT CAST(CONCAT_WS('|', id, status, source, written) AS CHAR) FROM bm2ironic_runs")
            .await
            .concat()
            .join("\n"),
    ));
    outputs.push((
        "run record nodes".into(),
        tgt.rows("SELECT CAST(CONCAT_WS('|', run_id, uuid, record) AS CHAR) FROM bm2ironic_run_nodes")
            .await
            .concat()
            .join("\n"),
    ));
    outputs.push(("report".into(), std::fs::read_to_string(&report).unwrap()));
    outputs.push(("audit log".into(), read_logs(&logs)));
    for e in walk(&state) {
        outputs.push((e.display().to_string(), String::from_utf8_lossy(&std::fs::read(&e).unwrap()).into_owned()));
    }

    // the wizard in a real terminal (connections, inventory with the detail pane), then a panic
    if std::process::Command::new("tmux").arg("-V").output().is_ok() {
        let bin = assert_cmd::cargo::cargo_bin("bm2ironic");
        for (name, extra) in [("wiz", ""), ("panic", "BM2IRONIC_TEST_PANIC_IN_TASK=1")] {
            let sock = format!("bm2ironic-secrets-{n}-{name}");
            let cmd = format!(
                "env -u NO_COLOR {extra} TERM=xterm-256color BM2IRONIC_NOVA_BM_DB='{src_url}' BM2IRONIC_IRONIC_DB='{tgt_url}' BM2IRONIC_IRONIC_TOKEN={token} {} --log-dir {} wizard --rehearse --deploy-kernel k --deploy-ramdisk r --default-arch x86_64; echo EXIT=$?; sleep 30",
                bin.display(),
                logs.display()
            );
            let tmux = |a: &[&str]| {
                let o = std::process::Command::new("tmux").args(["-L", &sock]).args(a).output().unwrap();
                String::from_utf8_lossy(&o.stdout).into_owned()
            };
            tmux(&["new-session", "-d", "-s", name, "-x", "160", "-y", "50", &cmd]);
            let mut screens = String::new();
            for (key, until) in [("", "Connections and options"), ("Enter", "nova_bm:"), ("Tab", "nova_bm:")] {
                if !key.is_empty() && name == "wiz" {
                    tmux(&["send-keys", "-t", name, key]);
                }
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                loop {
                    let s = tmux(&["capture-pane", "-p", "-t", name]);
                    if s.contains(until) || s.contains("EXIT=") || std::time::Instant::now() > deadline {
                        screens.push_str(&s);
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                if name == "panic" {
                    break;
                }
            }
            if name == "panic" {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while !tmux(&["capture-pane", "-p", "-t", name]).contains("EXIT=") {
                    assert!(std::time::Instant::now() < deadline, "the panic run did not end");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                let s = tmux(&["capture-pane", "-p", "-t", name]);
                assert!(s.contains("internal error"), "{s}");
                screens.push_str(&s);
            } else {
                assert!(screens.contains("nova_bm:"), "the wizard reached the inventory:\n{screens}");
            }
            tmux(&["kill-server"]);
            outputs.push((format!("tmux {name}"), screens));
        }
    }

    let mut found = Vec::new();
    for (channel, text) in &outputs {
        for s in secrets {
            if text.contains(s) {
                found.push(format!("'{s}' in {channel}"));
            }
        }
    }
    eprintln!("{} channels searched for {} secrets: {} found", outputs.len(), secrets.len(), found.len());
    assert!(found.is_empty(), "{found:#?}\n{outputs:#?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
