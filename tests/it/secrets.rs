//! Passwords never reach stdout, stderr or the audit log: database passwords (working and failing
//! connections, given by flag, environment or nova.conf) and the BMC passwords in the rows.

use crate::common::{bm2ironic, read_logs, Backend, TestDb, READER_PASSWORD};
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
    let wrong = "Wr0ng-Secret-pw";

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

    if backend == Backend::Sqlite {
        return;
    }
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
