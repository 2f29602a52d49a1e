//! A load into a 3-node MariaDB Galera cluster (scripts/galera.sh, on loopback): the node being
//! written to is SIGKILLed mid-load, the survivors hold nothing of it, a rerun against a survivor
//! finishes and `verify` passes against the other; a node without quorum is refused with a message
//! that says so; a load larger than the cluster's write-set limit is refused before it starts; a
//! certification conflict is retried. Runs only with BM2IRONIC_TEST_GALERA set (scripts/test.sh
//! starts the cluster and sets it); the cluster is shared, so these tests take turns.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::cli::command;
use crate::common::process::Guard;
use crate::common::{bm, read_logs, Backend, Outcome, TestDb, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const KILL_NODES: usize = 3_000;
const CONFLICT_NODES: usize = 2_000;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/galera.sh")
}

fn galera_sh(args: &[&str]) -> Output {
    let out = Command::new("bash").arg(script()).args(args).output().unwrap();
    assert!(out.status.success(), "galera.sh {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The cluster, started (or healed) by the script; None, loudly, when the Galera tests are off.
struct Cluster {
    /// admin URLs of a fresh database on each node (index 0: node 1)
    urls: [String; 3],
}

impl Cluster {
    async fn start(tag: &str) -> Option<Cluster> {
        if !std::env::var("BM2IRONIC_TEST_GALERA").is_ok_and(|v| !v.is_empty()) {
            crate::common::skip(
                "BM2IRONIC_TEST_GALERA is not set, so the Galera test does not run: scripts/test.sh starts the cluster (scripts/galera.sh start) and sets it",
            );
            return None;
        }
        let t = Instant::now();
        let out = galera_sh(&["start"]);
        eprintln!("galera.sh start: {:?}", t.elapsed());
        let env = String::from_utf8_lossy(&out.stdout).to_string();
        let node = |n: usize| {
            let key = format!("BM2IRONIC_TEST_GALERA_NODE{n}='");
            let line = env.lines().find_map(|l| l.split_once(&key)).expect("galera.sh env").1;
            line.trim_end_matches('\'').rsplit_once('/').unwrap().0.to_string()
        };
        let name = format!("t_galera_{tag}_{}", std::process::id());
        let c = Cluster { urls: [1, 2, 3].map(|n| format!("{}/{name}", node(n))) };
        let out = c
            .client(0)
            .args(["-D", "ironic", "-e", &format!("DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let schema = crate::common::server_env(crate::common::IRONIC_MYSQL_SCHEMA)?;
        let load = c.client(0).args(["-D", &name]).stdin(std::fs::File::open(schema).unwrap()).output().unwrap();
        assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
        Some(c)
    }

    /// The mariadb client on node `i` (`-D` chooses the database).
    fn client(&self, i: usize) -> Command {
        let u = bm2ironic::core::db::url::DbUrl::parse(&self.urls[i]).unwrap();
        let mut c = Command::new("mariadb");
        c.args(["--no-defaults", "-N", "-B", "-h", &u.host, "-P", &u.port.to_string()])
            .args(["-u", u.user.as_deref().unwrap()])
            .env("MYSQL_PWD", u.password.as_ref().unwrap().expose());
        c
    }

    fn sql(&self, i: usize, sql: &str) -> String {
        let db = self.urls[i].rsplit_once('/').unwrap().1;
        let out = self.client(i).args(["-D", db, "-e", sql]).output().unwrap();
        assert!(out.status.success(), "node {}: {sql}: {}", i + 1, String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn status(&self, i: usize, var: &str) -> String {
        let v = self.sql(i, &format!("SHOW GLOBAL STATUS LIKE '{var}'"));
        v.split_once('\t').map(|(_, v)| v.to_string()).unwrap_or_default()
    }

    /// Waits until node `i` reports `var` = `want` (the survivors take ~5 s to drop a dead peer).
    fn wait_status(&self, i: usize, var: &str, want: &str) {
        let t = Instant::now();
        while self.status(i, var) != want {
            assert!(t.elapsed() < Duration::from_secs(60), "node {}: {var} is not {want}", i + 1);
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn count(&self, i: usize, table: &str) -> i64 {
        self.sql(i, &format!("SELECT COUNT(*) FROM {table}")).parse().unwrap()
    }
}

/// `migrate --via db` from `src` into `url`, with a private audit log.
fn migrate(src: &TestDb, url: &str, logs: &Path) -> Command {
    let mut c = command(logs);
    c.args(["migrate", "--via", "db", "--yes", "--json"]).args(STANDARD_RESOLUTIONS);
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", url);
    c
}

fn verify(src: &TestDb, url: &str, logs: &Path) -> Outcome {
    bm(["verify"]).logs(logs).source(src).env("BM2IRONIC_IRONIC_DB", url).run()
}

/// Runs the load, calls `at` with each progress event's `done` until it returns true; returns the
/// child's exit status and stderr.
fn run_until(mut c: Command, mut at: impl FnMut(usize, &str) -> bool) -> (Option<i32>, String) {
    let mut child = Guard::spawn(c.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let mut stderr = child.take_stderr();
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).unwrap();
        s
    });
    let mut lines = BufReader::new(child.take_stdout()).lines();
    for l in lines.by_ref() {
        let l = l.unwrap();
        let v: serde_json::Value = serde_json::from_str(&l).unwrap_or_default();
        if at(v["done"].as_u64().unwrap_or(0) as usize, &l) {
            break;
        }
    }
    let _ = lines.count();
    let status = child.wait();
    (status.code(), err.join().unwrap())
}

/// Node 1 is SIGKILLed half-way through a 3,000-node load into it: the tool ends (exit 1) naming
/// the node; nodes 2 and 3 hold nothing of the load; a rerun against node 2 finishes, `verify`
/// against node 3 passes (its reads wait for node 2's writes: wsrep_sync_wait), the source is
/// unchanged. Then node 3 is killed too: node 2, alone, has no quorum, and a load against it is
/// refused with a message naming the cluster's state. Before all that, a write-set limit smaller
/// than the load is refused up front.
#[tokio::test(flavor = "multi_thread")]
async fn the_node_written_to_killed_mid_load() {
    let _turn = CLUSTER.lock().await;
    let Some(src) = TestDb::with_fixture(Backend::MySql, "gsrc", &Fixture::generated(KILL_NODES, 10)).await else {
        return;
    };
    let Some(cluster) = Cluster::start("kill").await else { return };
    let started = Instant::now();
    let source_before = src.dump();
    let logs = tempfile::tempdir().unwrap();

    // the write set would pass wsrep_max_ws_rows: refused before anything is written
    cluster.sql(0, "SET GLOBAL wsrep_max_ws_rows = 1000");
    let out = migrate(&src, &cluster.urls[0], logs.path()).output().unwrap();
    cluster.sql(0, "SET GLOBAL wsrep_max_ws_rows = 0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("wsrep_max_ws_rows is 1000") && stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(cluster.count(0, "nodes"), 0);
    eprintln!("write set too large: {}", stderr.trim());

    // node 1 killed once half the nodes are written
    let mut done = 0;
    let (code, stderr) = run_until(migrate(&src, &cluster.urls[0], logs.path()), |d, _| {
        done = done.max(d);
        if d >= KILL_NODES / 2 {
            galera_sh(&["kill", "1"]);
            return true;
        }
        false
    });
    assert!((KILL_NODES / 2..KILL_NODES).contains(&done), "the load ended before half of it: {done}");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let node1 = cluster.urls[0].split('@').nth(1).unwrap().split('/').next().unwrap().to_string();
    assert!(stderr.contains(&node1), "the message names the node: {stderr}");
    eprintln!("node 1 killed mid-load after {done} nodes: {}", stderr.trim());

    // the survivors: nothing of the load
    for i in [1, 2] {
        cluster.wait_status(i, "wsrep_cluster_size", "2");
        assert_eq!(cluster.status(i, "wsrep_cluster_status"), "Primary");
        assert_eq!(cluster.count(i, "nodes"), 0, "node {}", i + 1);
        assert_eq!(cluster.count(i, "ports"), 0, "node {}", i + 1);
    }

    // a rerun against node 2 finishes; verify against node 3 reads what node 2 committed
    let out = migrate(&src, &cluster.urls[1], logs.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = verify(&src, &cluster.urls[2], logs.path());
    assert_eq!(v.code, 0, "{}", v.text());
    let written = cluster.count(1, "nodes");
    assert!(written > (KILL_NODES as i64) * 9 / 10, "{written}");
    assert_eq!(cluster.count(2, "nodes"), written);
    assert_eq!(cluster.count(2, "ports"), cluster.count(1, "ports"));
    assert!(src.dump() == source_before, "the source changed");

    // node 3 killed too: node 2 alone is not a primary component
    galera_sh(&["kill", "3"]);
    cluster.wait_status(1, "wsrep_cluster_status", "non-Primary");
    let out = migrate(&src, &cluster.urls[1], logs.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let node2 = cluster.urls[1].split('@').nth(1).unwrap().split('/').next().unwrap().to_string();
    assert!(
        stderr.contains(&format!("the Galera node at {node2} is not part of a primary component (no quorum"))
            && stderr.contains("wsrep_cluster_status is non-Primary")
            && stderr.contains("restore quorum"),
        "{stderr}"
    );
    assert!(!stderr.contains("1047"), "a raw error: {stderr}");
    eprintln!("no quorum: {}", stderr.trim());
    eprintln!("the Galera kill test took {:?} after the cluster was up", started.elapsed());
}

/// Another node writes (and removes) a row the load holds while the load runs: Galera's
/// certification aborts the load (ERROR 1213), which is tried again from the start and finishes.
#[tokio::test(flavor = "multi_thread")]
async fn a_certification_conflict_is_retried() {
    let _turn = CLUSTER.lock().await;
    let Some(src) = TestDb::with_fixture(Backend::MySql, "gcsrc", &Fixture::generated(CONFLICT_NODES, 10)).await else {
        return;
    };
    let Some(cluster) = Cluster::start("conflict").await else { return };
    let logs = tempfile::tempdir().unwrap();

    // the reads of a target session on a Galera node wait for the cluster's writes
    let db = bm2ironic::core::db::Db::connect(
        &bm2ironic::core::db::url::DbUrl::parse(&cluster.urls[2]).unwrap(),
        bm2ironic::core::db::Access::ReadWrite,
    )
    .await
    .unwrap();
    assert!(db.galera.as_ref().is_some_and(|g| g.is_primary() && g.cluster_size == 3), "{:?}", db.galera);
    assert_eq!(db.fetch_scalar::<i64>("SELECT CAST(@@session.wsrep_sync_wait AS SIGNED)", vec![]).await.unwrap(), 1);
    db.close().await;

    let mut first: Option<String> = None;
    let mut injected = false;
    let (code, stderr) = run_until(migrate(&src, &cluster.urls[0], logs.path()), |done, line| {
        if first.is_none() && line.contains("\"status\":\"written\"") {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            first = v["uuid"].as_str().map(String::from);
        }
        if !injected && done >= CONFLICT_NODES / 4 {
            let uuid = first.clone().expect("a written node");
            cluster.sql(
                1,
                &format!("INSERT INTO nodes (uuid) VALUES ('{uuid}'); DELETE FROM nodes WHERE uuid = '{uuid}'"),
            );
            injected = true;
        }
        false
    });
    assert!(injected, "the load ended before the conflict was made");
    assert_eq!(code, Some(0), "{stderr}");
    let log = read_logs(logs.path());
    assert!(log.contains("write conflict: the load was rolled back, trying again"), "no conflict happened: {log}");
    let written = cluster.count(0, "nodes");
    assert!(written > (CONFLICT_NODES as i64) * 9 / 10, "{written}");
    let v = verify(&src, &cluster.urls[1], logs.path());
    assert_eq!(v.code, 0, "{}", v.stdout);
}
