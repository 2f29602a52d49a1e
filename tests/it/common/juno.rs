//! What the tests of the real Juno Ironic and nova-compute (2014.2, scripts/juno.sh; docs/juno.md)
//! share: the Juno venvs, `juno.sh`, a database with the schema Juno's own `ironic-dbsync` makes, the
//! small clouds they migrate and the Nova database beside them, bm2ironic with those given, the real
//! Keystone v2.0 (scripts/keystone-pike.sh) Juno's conductor gets a token from before it asks Glance
//! for images, and waiting on a database.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bm2ironic::core::demo::fixture::Fixture;

use super::bmc::{Bmc, BmcOptions};
use super::cli::{bm, Bm};
use super::db::{sqlalchemy_url, Backend, TestDb};
use super::env::{repo_file, server_env, skip};

/// The Juno Ironic's venv (scripts/juno.sh env).
pub const JUNO_VENV: &str = "BM2IRONIC_TEST_JUNO_VENV";
/// Juno nova-compute's venv (scripts/juno.sh nova-env).
pub const JUNO_NOVA_VENV: &str = "BM2IRONIC_TEST_JUNO_NOVA_VENV";

/// The deploy kernel and ramdisk (Glance image ids) the Juno tests migrate with.
pub const KERNEL: &str = "2bcb0e2e-1d8e-4b3a-9a67-6b0f7c2f1a11";
pub const RAMDISK: &str = "7c1f4f8e-52b0-4a7e-8a2d-0e0a2f7d3b22";

/// The Juno venv, or None after a loud skip (a failure in CI).
pub fn juno_venv() -> Option<PathBuf> {
    match std::env::var(JUNO_VENV) {
        Ok(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            skip(&format!(
                "{JUNO_VENV} is not set, so the real Juno Ironic is not here: scripts/test.sh installs it (scripts/juno.sh env; docs/juno.md)"
            ));
            None
        }
    }
}

/// Juno nova-compute's venv, or None after a loud skip (a failure in CI).
pub fn juno_nova_venv() -> Option<PathBuf> {
    match std::env::var(JUNO_NOVA_VENV) {
        Ok(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            skip(&format!("{JUNO_NOVA_VENV} is not set: scripts/test.sh installs Juno's nova-compute (scripts/juno.sh nova-env; docs/juno.md)"));
            None
        }
    }
}

/// scripts/juno.sh with the venv `venv` (its parent is juno.sh's base).
pub fn juno_sh(venv: &Path, args: &[&str]) -> std::process::Output {
    Command::new("bash")
        .arg(repo_file("scripts/juno.sh"))
        .args(args)
        .env("BM2_JUNO_BASE", venv.parent().unwrap())
        .output()
        .unwrap()
}

/// scripts/juno.sh with the Juno Nova venv the environment names (its parent is juno.sh's base).
pub fn juno_nova_sh() -> Command {
    let mut c = Command::new("bash");
    c.arg(repo_file("scripts/juno.sh"));
    if let Some(base) =
        std::env::var_os(JUNO_NOVA_VENV).map(PathBuf::from).and_then(|v| v.parent().map(Path::to_path_buf))
    {
        c.env("BM2_JUNO_BASE", base);
    }
    c
}

/// A fresh database with the schema Juno's own `ironic-dbsync upgrade` makes.
pub async fn dbsync(venv: &Path, backend: Backend, tag: &str) -> TestDb {
    let db = TestDb::create(backend, tag).await.expect("database server configured");
    let out = juno_sh(venv, &["dbsync", &sqlalchemy_url(&db.admin_url)]);
    assert!(out.status.success(), "juno.sh dbsync: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "487deb87cc9d", "Juno's alembic head");
    db
}

/// The small clean cloud of these tests: six nodes on two hosts, IPMI at 127.0.0.1; nodes 3 and 6
/// run instances (their first NIC bound to a VIF); the others are free (node 1's first NIC still
/// names a VIF, which a free node does not keep). Two NICs each.
pub fn inventory() -> Fixture {
    let mut f = Fixture::generated(6, 2);
    for (iface, vif) in [
        (1, "cccccccc-0000-4000-8000-000000000001"),
        (5, "cccccccc-0000-4000-8000-000000000005"),
        (11, "cccccccc-0000-4000-8000-000000000011"),
    ] {
        f.interfaces.iter_mut().find(|i| i.id == iface).unwrap().vif_uuid = Some(vif.into());
    }
    f
}

/// A Nova database (SQLite) with the instances of `instances`: (nova_bm id, image_ref, root_gb),
/// and the two baremetal nova-computes, stopped long ago.
pub async fn nova_db(instances: &[(i64, Option<&str>, Option<i64>)]) -> TestDb {
    let t = TestDb::create(Backend::Sqlite, "jnova").await.unwrap();
    let mut sql = vec![
        "CREATE TABLE instances (id INTEGER NOT NULL PRIMARY KEY, uuid VARCHAR(36) NOT NULL, image_ref VARCHAR(255), root_gb INTEGER, ephemeral_gb INTEGER, node VARCHAR(255), host VARCHAR(255), vm_state VARCHAR(255), power_state INTEGER, deleted INTEGER)".to_string(),
        "CREATE TABLE services (id INTEGER NOT NULL PRIMARY KEY, host VARCHAR(255), \"binary\" VARCHAR(255), topic VARCHAR(255), report_count INTEGER NOT NULL, disabled BOOLEAN, deleted INTEGER, created_at DATETIME, updated_at DATETIME)".to_string(),
        "INSERT INTO services VALUES (1, 'bm-compute-1', 'nova-compute', 'compute', 9, 0, 0, '2014-09-01 00:00:00', '2014-09-01 00:00:00'), (2, 'bm-compute-2', 'nova-compute', 'compute', 9, 0, 0, '2014-09-01 00:00:00', '2014-09-01 00:00:00')".to_string(),
    ];
    let q = |v: Option<&str>| v.map_or("NULL".to_string(), |v| format!("'{v}'"));
    for (id, image, root) in instances {
        sql.push(format!(
            "INSERT INTO instances VALUES ({id}, 'aaaaaaaa-0000-4000-8000-{id:012}', {}, {}, 0, 'bbbbbbbb-0000-4000-8000-{id:012}', 'bm-compute-{}', 'active', 1, 0)",
            q(*image),
            root.map_or("NULL".to_string(), |r| r.to_string()),
            (id - 1) % 2 + 1
        ));
    }
    for s in sql {
        t.exec(&s).await;
    }
    t
}

/// The copy of nova baremetal's TFTP tree of `inventory()`'s instances, beside the audit log.
fn tftp_tree(logs: &Path) -> PathBuf {
    let tree = logs.join("tftpboot");
    if !tree.exists() {
        inventory().write_tftp_tree(&tree).unwrap();
    }
    tree
}

/// bm2ironic with nova_bm, Nova and the Ironic database given, its audit log (and the TFTP tree of
/// `inventory()`) in `logs`; `args` first.
pub fn cli<S: AsRef<std::ffi::OsStr>>(
    logs: &Path,
    src: &TestDb,
    nova: &TestDb,
    tgt: &TestDb,
    args: impl IntoIterator<Item = S>,
) -> Bm {
    bm(["--tftp-root"]).arg(tftp_tree(logs)).args(args).logs(logs).source(src).nova(Some(nova)).target(tgt)
}

/// Image ids in Glance (common/glance.rs): the instances' image and its kernel and ramdisk.
pub const IMAGE: &str = "11111111-0000-4000-8000-00000000000a";
pub const KERNEL_I: &str = "11111111-0000-4000-8000-00000000000b";
pub const RAMDISK_I: &str = "11111111-0000-4000-8000-00000000000c";

/// The real Keystone v2.0 of the Juno tests (scripts/keystone-pike.sh: Keystone 12.0.3, admin /
/// `KEYSTONE_V2_PASSWORD` on project admin), where Juno's conductor gets the admin token it hands to
/// Glance: its port, or None after a loud skip (a failure in CI).
pub fn keystone_v2() -> Option<u16> {
    let at = server_env(KEYSTONE_V2)?;
    Some(at.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{KEYSTONE_V2}={at}: no port")))
}

/// Where scripts/keystone-pike.sh serves (host:port).
pub const KEYSTONE_V2: &str = "BM2IRONIC_TEST_KEYSTONE_V2";
/// Its admin's password (scripts/keystone-pike.sh).
pub const KEYSTONE_V2_PASSWORD: &str = "adminpass";

/// Nodes 1 (free), 3 (an instance, its machine running) and 6 (an instance, its machine stopped) of
/// `Fixture::generated(6, 1)`, each with its own BMC (`bmcs[i]`, password `bmc-pass-<id>`).
pub fn small_cloud(bmcs: &[&str; 3]) -> Fixture {
    let mut f = Fixture::generated(6, 1);
    f.nodes.retain(|n| [1, 3, 6].contains(&n.id));
    f.interfaces.retain(|i| i.bm_node_id.is_some_and(|n| [1, 3, 6].contains(&n)));
    for (n, addr) in f.nodes.iter_mut().zip(bmcs) {
        n.pm_address = Some(addr.to_string());
        n.pm_password = Some(bm2ironic::core::db::secret::Secret::new(format!("bmc-pass-{}", n.id)));
    }
    f
}

/// The machines of `small_cloud(addrs)`, each a fake BMC on port 623 of its address (run by the Ironic
/// test venv `ironic_venv`): node 1 free and off, node 3's running, node 6's stopped.
pub fn small_cloud_machines(ironic_venv: &Path, addrs: &[&str; 3]) -> Vec<Bmc> {
    [(1, "off"), (3, "on"), (6, "off")]
        .iter()
        .zip(addrs)
        .map(|((id, power), addr)| {
            Bmc::start(BmcOptions::new(ironic_venv, &format!("bmc-pass-{id}")).at(addr, 623).power(power))
        })
        .collect()
}

/// Waits until `sql` (one row, one column) says "1", or panics with the log.
pub async fn wait_for(db: &TestDb, sql: &str, secs: u64, what: &str, log: &Path) -> Duration {
    let t0 = Instant::now();
    loop {
        if db.scalar_i64(sql).await == 1 {
            return t0.elapsed();
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let l = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = l.lines().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
            panic!("{what}: not after {secs} s; {}:\n{}", log.display(), tail.join("\n"));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A fresh database holding the nova_bm schema Juno's own `nova-baremetal-manage db sync` makes
/// (`juno.sh baremetal-dbsync`: nova baremetal's migrations 001-010), readable by the SELECT-only user.
pub async fn baremetal_dbsync(backend: Backend, tag: &str) -> TestDb {
    let db = TestDb::create(backend, tag).await.expect("database server configured");
    let out = juno_nova_sh()
        .args(["baremetal-dbsync", "env"])
        .env("BM2_JUNO_DB_URL", sqlalchemy_url(&db.admin_url))
        .output()
        .unwrap();
    assert!(out.status.success(), "juno.sh baremetal-dbsync: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "10", "nova_bm's migrate version");
    let admin = db.admin().await;
    db.grant_reader(&admin).await;
    admin.close().await;
    db
}
