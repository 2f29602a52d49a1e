//! Keystone, real: Ironic (PyPI) with `auth_strategy = keystone` behind the test Keystone (PyPI,
//! scripts/keystone.sh), both on 127.0.0.1. A system-scoped cloud of clouds.yaml and the OS_*
//! variables both work with the endpoint taken from the catalog (each test registers its own
//! region); a project-scoped token is warned about, naming the nodes it cannot see; a wrong
//! password, an unknown cloud, a region without Ironic, an unreachable Keystone and no credentials
//! at all each get their own message (exit 1); a token revoked mid-run is renewed; no password or
//! token reaches stdout, stderr or the audit log.

use std::path::Path;

use crate::common::ironic::{start_ironic, IronicOptions};
use crate::common::keystone::{self, clear_os, ADMIN_PASSWORD, KEYSTONE_URL};
use crate::common::{bm2ironic, read_logs, server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::auth::{self, Scope, Session};
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::ironic::api::{ApiAuth, IronicApi};
use bm2ironic::core::ironic::target::TargetKind;

fn clouds_yaml(ks: &str, region: &str) -> String {
    let cloud = |name: &str, user: &str, pw: &str, scope: &str, region: &str| {
        format!(
            "  {name}:\n    auth:\n      auth_url: {ks}\n      username: {user}\n      password: {pw}\n      user_domain_name: Default\n{scope}    region_name: {region}\n    interface: public\n"
        )
    };
    let project = |p: &str| format!("      project_name: {p}\n      project_domain_name: Default\n");
    let mut y = String::from("clouds:\n");
    y += &cloud("sys", "admin", ADMIN_PASSWORD, "      system_scope: all\n", region);
    y += &cloud("admin-project", "admin", ADMIN_PASSWORD, &project("admin"), region);
    y += &cloud("demo", "demo", "demopass", &project("demo"), region);
    y += &cloud("badpw", "admin", "not-the-password", "      system_scope: all\n", region);
    y += &cloud("noironic", "admin", ADMIN_PASSWORD, "      system_scope: all\n", "RegionOne");
    y += &cloud("down", "admin", ADMIN_PASSWORD, "      system_scope: all\n", region)
        .replace(ks, "http://127.0.0.1:9/v3");
    y
}

#[tokio::test(flavor = "multi_thread")]
async fn keystone_clouds_yaml_os_vars_scope_errors_and_renewal() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(ks) = server_env(KEYSTONE_URL) else { return };
    let venv = Path::new(&venv);
    let mut f = Fixture::generated(3, 1);
    for n in &mut f.nodes {
        n.pm_address = Some("127.0.0.1".into());
    }
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "kssrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "kstgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args([
            "migrate",
            "--yes",
            "--default-arch",
            "x86_64",
            "--deploy-kernel",
            "file:///k",
            "--deploy-ramdisk",
            "file:///r",
            // about Keystone, not boots (no TFTP tree): each instance's boot is the operator's word
            "--resolve",
            "unknown-boot=local-boot",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let uuids: Vec<String> =
        tgt.rows("SELECT uuid FROM nodes ORDER BY id").await.into_iter().map(|r| r[0].clone()).collect();

    // no power sync: no BMC here
    let ironic = start_ironic(IronicOptions {
        keystone: Some(ks.clone()),
        sync_interval: Some(3600),
        ..IronicOptions::new(venv, &tgt.admin_url)
    })
    .await;
    let region = format!("bm2t-{}", std::process::id());
    keystone::register_baremetal(&ks, &region, &ironic.base).await;
    let dir = tempfile::tempdir().unwrap();
    let clouds = dir.path().join("clouds.yaml");
    std::fs::write(&clouds, clouds_yaml(&ks, &region)).unwrap();

    let outputs = std::cell::RefCell::new(String::new());
    let verify = |cloud: Option<&str>, env: &[(&str, &str)], extra: &[&str]| {
        let mut c = bm2ironic(logs.path());
        clear_os(&mut c)
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .env("OS_CLIENT_CONFIG_FILE", &clouds)
            .env("HOME", dir.path())
            .arg("verify");
        if let Some(cl) = cloud {
            c.args(["--os-cloud", cl]);
        }
        c.envs(env.iter().copied()).args(extra);
        let out = c.output().unwrap();
        let (o, e) =
            (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
        outputs.borrow_mut().push_str(&o);
        outputs.borrow_mut().push_str(&e);
        (out.status.code(), o, e)
    };

    // a system-scoped cloud: the endpoint comes from the catalog (no --ironic-url)
    let (code, o, e) = verify(Some("sys"), &[], &[]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(o.contains("and the Ironic API: 0 difference(s)"), "{o}");
    // the same with OS_CLOUD, and with the OS_* variables
    let (code, o, e) = verify(None, &[("OS_CLOUD", "sys")], &[]);
    assert_eq!(code, Some(0), "{o}{e}");
    let os_vars = [
        ("OS_AUTH_URL", ks.as_str()),
        ("OS_USERNAME", "admin"),
        ("OS_PASSWORD", ADMIN_PASSWORD),
        ("OS_USER_DOMAIN_NAME", "Default"),
        ("OS_SYSTEM_SCOPE", "all"),
        ("OS_REGION_NAME", region.as_str()),
        ("OS_INTERFACE", "public"),
    ];
    let (code, o, e) = verify(None, &os_vars, &[]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(o.contains("and the Ironic API: 0 difference(s)"), "{o}");
    // a project-scoped admin cloud: system scope is used by default where the cloud allows it
    let (code, o, e) = verify(Some("admin-project"), &[], &[]);
    assert_eq!(code, Some(0), "{o}{e}");
    assert!(!e.contains("warning"), "{e}");
    // a user with only a project role: warned, naming every node it cannot see
    let (code, o, e) = verify(Some("demo"), &[], &[]);
    assert_eq!(code, Some(4), "{o}{e}");
    assert!(e.contains("scoped to project demo") && e.contains("cannot see 3 node(s)"), "{e}");
    for u in &uuids {
        assert!(e.contains(u.as_str()), "the warning names {u}: {e}");
    }
    // wrong password, unknown cloud, no Ironic in the region, Keystone unreachable, no credentials
    let (code, _, e) = verify(Some("badpw"), &[], &[]);
    assert_eq!(code, Some(1));
    assert!(e.contains("refused the credentials of user admin") && e.contains("cloud 'badpw'"), "{e}");
    let (code, _, e) = verify(Some("nope"), &[], &[]);
    assert_eq!(code, Some(1));
    assert!(e.contains("no cloud 'nope'") && e.contains("sys"), "{e}");
    let (code, _, e) = verify(Some("noironic"), &[], &[]);
    assert_eq!(code, Some(1));
    assert!(e.contains("no baremetal endpoint") && e.contains("region RegionOne"), "{e}");
    let (code, _, e) = verify(Some("down"), &[], &[]);
    assert_eq!(code, Some(1));
    assert!(e.contains("cannot reach Keystone at http://127.0.0.1:9/v3"), "{e}");
    let (code, _, e) = verify(None, &[], &["--ironic-url", &ironic.base]);
    assert_eq!(code, Some(1));
    assert!(e.contains("asks for authentication (HTTP 401)") && e.contains("--os-cloud"), "{e}");

    // migrate --via api through the catalog with the system-scoped cloud: two more nova_bm nodes,
    // enrolled (--free-state enroll: no BMC needed), their ports created, recorded in a run file
    let more = Fixture::generated_from(52, 2, 1); // no instance among them
    let Some(src2) = TestDb::with_fixture(Backend::Sqlite, "kssrc2", &more).await else { return };
    let state = tempfile::tempdir().unwrap();
    let mut c = bm2ironic(logs.path());
    clear_os(&mut c)
        .env("BM2IRONIC_NOVA_BM_DB", &src2.reader_url)
        .env("BM2IRONIC_STATE_DIR", state.path())
        .env("OS_CLIENT_CONFIG_FILE", &clouds)
        .env("HOME", dir.path())
        .args([
            "--os-cloud",
            "sys",
            "migrate",
            "--via",
            "api",
            "--yes",
            "--free-state",
            "enroll",
            "--default-arch",
            "x86_64",
            // about Keystone, not boots (no TFTP tree): each instance's boot is the operator's word
            "--resolve",
            "unknown-boot=local-boot",
        ])
        .args(["--deploy-kernel", "file:///k", "--deploy-ramdisk", "file:///r"]);
    let out = c.output().unwrap();
    let (o, e) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
    outputs.borrow_mut().push_str(&o);
    outputs.borrow_mut().push_str(&e);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    let mut c = bm2ironic(logs.path());
    clear_os(&mut c)
        .env("BM2IRONIC_NOVA_BM_DB", &src2.reader_url)
        .env("BM2IRONIC_STATE_DIR", state.path())
        .envs(os_vars.iter().copied())
        .arg("verify");
    let out = c.output().unwrap();
    let (o, e) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
    outputs.borrow_mut().push_str(&o);
    outputs.borrow_mut().push_str(&e);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(o.contains("2 nodes, 4 ports"), "{o}");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes WHERE provision_state = 'enroll'").await, 2);
    for f in std::fs::read_dir(state.path()).unwrap().flatten() {
        outputs.borrow_mut().push_str(&std::fs::read_to_string(f.path()).unwrap());
    }

    // an application credential (made by admin in project admin: project-scoped, warned about)
    let admin_tok = keystone::token(
        &ks,
        "admin",
        ADMIN_PASSWORD,
        serde_json::json!({"project": {"name": "admin", "domain": {"id": "default"}}}),
    )
    .await;
    let http = reqwest::Client::new();
    let users: serde_json::Value = http
        .get(format!("{ks}/users?name=admin"))
        .header("X-Auth-Token", &admin_tok)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let uid = users["users"][0]["id"].as_str().unwrap().to_string();
    let ac: serde_json::Value = http
        .post(format!("{ks}/users/{uid}/application_credentials"))
        .header("X-Auth-Token", &admin_tok)
        // a name of its own: Keystone's database outlives a run (scripts/keystone.sh keeps it), and a
        // process id comes back (a name taken answers 409 Conflict)
        .json(&serde_json::json!({"application_credential": {"name": format!("bm2t-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (ac_id, ac_secret) = (
        ac["application_credential"]["id"].as_str().unwrap_or_else(|| panic!("no application credential: {ac}")),
        ac["application_credential"]["secret"].as_str().unwrap_or_else(|| panic!("no application credential: {ac}")),
    );
    let (code, o, e) = verify(
        None,
        &[
            ("OS_AUTH_URL", ks.as_str()),
            ("OS_AUTH_TYPE", "v3applicationcredential"),
            ("OS_APPLICATION_CREDENTIAL_ID", ac_id),
            ("OS_APPLICATION_CREDENTIAL_SECRET", ac_secret),
            ("OS_REGION_NAME", region.as_str()),
        ],
        &[],
    );
    assert_eq!(code, Some(4), "{o}{e}");
    assert!(e.contains("scoped to project admin") && e.contains("cannot see 3 node(s)"), "{e}");
    let ac_secret = ac_secret.to_string();

    // a token revoked mid-run is renewed once, and the run goes on
    let env = |k: &str| os_vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string());
    let cfg = auth::resolve(None, &env).unwrap().unwrap();
    let session = std::sync::Arc::new(Session::connect(cfg).await.unwrap());
    assert_eq!(session.scope().await, Scope::System);
    let url = session.endpoint("baremetal").await.unwrap();
    assert_eq!(url, ironic.base, "the endpoint of the configured region");
    let api = IronicApi::with_auth(&url, ApiAuth::Keystone(session.clone()), TargetKind::Modern, None).unwrap();
    api.negotiate(None).await.unwrap();
    assert_eq!(api.node(&uuids[0]).await.unwrap()["uuid"], uuids[0].as_str());
    let first = session.token().await.unwrap();
    keystone::revoke(&ks, first.expose()).await;
    assert_eq!(api.node(&uuids[1]).await.unwrap()["uuid"], uuids[1].as_str(), "renewed after the 401");
    assert_eq!(session.renewals(), 1);
    assert_ne!(session.token().await.unwrap(), first);
    let revoked = first.expose().to_string();

    // no password or token anywhere
    outputs.borrow_mut().push_str(&read_logs(logs.path()));
    for secret in [ADMIN_PASSWORD, "demopass", "not-the-password", revoked.as_str(), ac_secret.as_str()] {
        assert!(!outputs.borrow().contains(secret), "{secret} leaked");
    }
}
