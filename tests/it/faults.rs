//! Faults during a load by SQL, on real SQLite, MariaDB and PostgreSQL: the tool SIGKILLed at 20
//! points spread over a 6,000-node load (from before the first line it prints to after its
//! summary), and another session holding a lock the load needs. After each: the target holds
//! nothing of the load or all of it (never a part), the source is byte for byte as before, and a
//! rerun finishes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use std::time::Instant;

use crate::common::cli::command;
use crate::common::process::Guard;
use crate::common::{bm2ironic, Backend, TestDb, Tmpfs, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;

/// Six batches of the load (`load_sql::BATCH`): kill points land between every two of them. (It was
/// 20,000 nodes: the same points, three times the time, a quarter of the CI run's test time.)
const NODES: usize = 6_000;
const SERVER_KILL_NODES: usize = 5_000;

fn migrate_cmd(src: &TestDb, tgt: &TestDb, logs: &std::path::Path) -> Command {
    let mut c = command(logs);
    c.args(["migrate", "--yes", "--json"]).args(STANDARD_RESOLUTIONS);
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", &tgt.admin_url);
    c
}

/// The node count once the server has discarded a killed session's transaction (it may take a
/// moment to notice the closed connection).
async fn settled_nodes(tgt: &TestDb, complete: i64) -> i64 {
    let mut n = -1;
    for _ in 0..100 {
        n = tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await;
        if n == 0 || n == complete {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    n
}

/// Runs the load and SIGKILLs it right after the `line`-th line of its output (0: before any).
/// Returns how many lines it had printed.
fn kill_after_line(mut c: Command, line: usize) -> usize {
    let mut child = Guard::spawn(c.stdout(Stdio::piped()).stderr(Stdio::null()));
    let mut seen = 0;
    if line == 0 {
        std::thread::sleep(Duration::from_millis(30));
    } else {
        let out = child.take_stdout();
        for l in BufReader::new(out).lines() {
            if l.is_err() {
                break;
            }
            seen += 1;
            if seen >= line {
                break;
            }
        }
    }
    child.kill(); // SIGKILL
    seen
}

async fn sigkill_at_spread_points(backend: Backend, points: usize) {
    let Some(src) = TestDb::with_fixture(backend, "fsrc", &Fixture::generated(NODES, 10)).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "ftgt").await else { return };
    let source_before = src.dump();
    let logs = tempfile::tempdir().unwrap();

    // the uninterrupted load: how much it writes and how many lines it prints; then undone
    let out = migrate_cmd(&src, &tgt, logs.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    let complete = tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await;
    assert!(complete > (NODES as i64) * 9 / 10, "{complete}");
    let undo =
        bm2ironic(logs.path()).env("BM2IRONIC_IRONIC_DB", &tgt.admin_url).args(["rollback", "--yes"]).output().unwrap();
    assert!(undo.status.success(), "{}", String::from_utf8_lossy(&undo.stderr));
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0);

    // kill points spread from before the first line to after the last
    let (mut untouched, mut whole) = (0, 0);
    for i in 0..points {
        // the last point lands after the summary (the process may have ended: the load is whole)
        let at = i * (lines + 1) / (points - 1);
        let t = Instant::now();
        let printed = kill_after_line(migrate_cmd(&src, &tgt, logs.path()), at);
        let n = settled_nodes(&tgt, complete).await;
        eprintln!("{backend:?}: kill point {i} (after line {at}): {n} nodes after {:?}", t.elapsed());
        assert!(
            n == 0 || n == complete,
            "{backend:?}: killed after line {printed} of {lines}: {n} of {complete} nodes"
        );
        let ports = tgt.scalar_i64("SELECT COUNT(*) FROM ports").await;
        if n == 0 {
            untouched += 1;
            assert_eq!(ports, 0, "{backend:?}: no nodes but {ports} ports after line {printed}");
        } else {
            whole += 1;
            // committed before the kill: the whole run is there and verifies; undo it for the next point
            let v = bm2ironic(logs.path())
                .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
                .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
                .arg("verify")
                .output()
                .unwrap();
            assert_eq!(v.status.code(), Some(0), "{}", String::from_utf8_lossy(&v.stdout));
            let undo = bm2ironic(logs.path())
                .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
                .args(["rollback", "--yes"])
                .output()
                .unwrap();
            assert!(undo.status.success(), "{}", String::from_utf8_lossy(&undo.stderr));
        }
    }
    eprintln!("{backend:?}: {points} SIGKILLs over {lines} lines: {untouched} left the target untouched, {whole} after the commit, 0 partial");
    assert!(untouched > 0, "no kill landed before the commit");

    // a rerun finishes, and the source was only read
    let out = migrate_cmd(&src, &tgt, logs.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, complete);
    assert!(src.dump() == source_before, "the source changed");
}

/// 20 kill points over the three backends.
async fn sigkill_at_20_points(backend: Backend) {
    let points = match backend {
        Backend::Sqlite => 6,
        Backend::MySql | Backend::Postgres => 7,
    };
    sigkill_at_spread_points(backend, points).await
}

/// Another session holds a lock on Ironic's `nodes` table (a table lock; on SQLite a write
/// transaction): the load gives up after BM2IRONIC_LOCK_TIMEOUT seconds with a message that says
/// so, nothing is written, and once the lock is gone a rerun finishes.
async fn a_lock_held_by_another_session(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "lsrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "ltgt").await else { return };
    let source_before = src.dump();
    let logs = tempfile::tempdir().unwrap();
    let holder = tgt.admin().await;
    let mut tx = holder.begin().await.unwrap();
    let lock = match backend {
        Backend::MySql => "LOCK TABLES nodes WRITE",
        Backend::Postgres => "LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE",
        Backend::Sqlite => "CREATE TABLE bm2ironic_test_lock_holder (x INTEGER)",
    };
    tx.execute(lock, vec![]).await.unwrap();

    let started = std::time::Instant::now();
    let out = migrate_cmd(&src, &tgt, logs.path()).env("BM2IRONIC_LOCK_TIMEOUT", "2").output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("another session held a lock we waited for more than 2 s"), "{stderr}");
    assert!(stderr.contains("nothing of it was written"), "{stderr}");
    assert!(took < Duration::from_secs(30), "gave up after {took:?}, not after the 2 s asked");

    if backend == Backend::MySql {
        tx.execute("UNLOCK TABLES", vec![]).await.unwrap();
    }
    tx.rollback().await.unwrap();
    holder.close().await;
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0);
    let out = migrate_cmd(&src, &tgt, logs.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await > 0);
    assert!(src.dump() == source_before, "the source changed");
}

per_backend! {
    sigkill_at_20_points => super::sigkill_at_20_points;
    a_lock_held_by_another_session => super::a_lock_held_by_another_session;
}

/// The audit log's disk is full: a load refuses to start without its audit trail (nothing written,
/// the message says why and what to do); when its writes fail after the start, the load finishes
/// and says the audit log stopped being written; with the log elsewhere the rerun finishes.
#[tokio::test(flavor = "multi_thread")]
async fn the_audit_logs_disk_full() {
    let f = Fixture::generated(2_000, 5);
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "asrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "atgt").await else { return };
    let Some(full) = Tmpfs::mount("64k") else { return };
    let _ = std::fs::write(full.path().join("filler"), vec![0u8; 128 * 1024]);
    let out = migrate_cmd(&src, &tgt, full.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the audit log cannot be written") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was done") && stderr.contains("--log-dir"), "{stderr}");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0);

    // every write to the audit file fails with ENOSPC once the load has started (the day's file is
    // /dev/full's device: a tmpfs's last page would take a few more records first): the load goes
    // on, and says from when the log is missing records
    let logs = tempfile::tempdir().unwrap();
    let day = logs.path().join(format!("bm2ironic.log.{}", chrono::Utc::now().format("%Y-%m-%d")));
    let made = Command::new("mknod").arg(&day).args(["c", "1", "7"]).status().unwrap();
    assert!(made.success(), "mknod (root) for a /dev/full device");
    let out = migrate_cmd(&src, &tgt, logs.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: the audit log stopped being written at "), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let n = tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await;
    assert!(n > 1_000, "the load finished: {n}");

    // the log elsewhere: a rerun finishes (nothing left to do) without a warning
    let logs = tempfile::tempdir().unwrap();
    let out = migrate_cmd(&src, &tgt, logs.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("audit log"), "{stderr}");
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, n);
}

/// A private MariaDB (scripts/test-services.sh start-mariadb) on a port of its own, stopped and
/// removed when dropped: this test kills its server.
struct PrivateMariaDb {
    base: tempfile::TempDir,
    port: u16,
}
impl PrivateMariaDb {
    fn script(&self, cmd: &str) -> std::process::Output {
        Command::new("bash")
            .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test-services.sh"))
            .arg(cmd)
            .env("BM2_SVC_BASE", self.base.path())
            .env("BM2_MYSQL_PORT", self.port.to_string())
            .output()
            .unwrap()
    }
    fn start() -> PrivateMariaDb {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        // the server runs as mysql: it must reach its directory
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let db = PrivateMariaDb { base, port };
        let out = db.script("start-mariadb");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        db
    }
    fn sql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("mariadb")
            .args(["--no-defaults", "-N", "-uroot", "-S"])
            .arg(self.base.path().join("mariadb/mysqld.sock"))
            .args([db, "-e", sql])
            .output()
            .unwrap();
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
    fn kill_server(&self) {
        let pid = std::fs::read_to_string(self.base.path().join("mariadb/mysqld.pid")).unwrap();
        let st = Command::new("kill").args(["-KILL", pid.trim()]).status().unwrap();
        assert!(st.success());
        std::thread::sleep(Duration::from_millis(500));
    }
}
impl Drop for PrivateMariaDb {
    fn drop(&mut self) {
        let _ = self.script("stop-mariadb");
    }
}

/// The target's database server is SIGKILLed in the middle of a 5,000-node load: the tool ends
/// with a message naming that server (no panic); restarted, the server holds nothing of the load
/// (its crash recovery undid the open transaction); a rerun finishes and verifies; the source is
/// unchanged. MariaDB only: a private server, since this kills it.
#[tokio::test(flavor = "multi_thread")]
async fn the_target_server_killed_mid_load() {
    let Some(schema) = crate::common::server_env(crate::common::IRONIC_MYSQL_SCHEMA) else { return };
    let Some(src) = TestDb::with_fixture(Backend::MySql, "ksrc", &Fixture::generated(SERVER_KILL_NODES, 10)).await
    else {
        return;
    };
    let source_before = src.dump();
    let server = PrivateMariaDb::start();
    // (the script made the nova_bm, nova and ironic databases and the bm2admin user)
    let load = Command::new("bash")
        .arg("-c")
        .arg("mariadb --no-defaults -uroot -S \"$1\" ironic < \"$2\"")
        .arg("load")
        .arg(server.base.path().join("mariadb/mysqld.sock"))
        .arg(&schema)
        .output()
        .unwrap();
    assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    let url = format!("mysql://bm2admin:adminpass@127.0.0.1:{}/ironic", server.port);
    let tgt_url = |c: &mut Command| {
        c.env("BM2IRONIC_IRONIC_DB", &url);
    };
    let logs = tempfile::tempdir().unwrap();

    // kill the server once half the nodes are written
    let mut c = command(logs.path());
    c.args(["migrate", "--yes", "--json"]).args(STANDARD_RESOLUTIONS);
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url);
    tgt_url(&mut c);
    let mut child = Guard::spawn(c.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let mut lines = BufReader::new(child.take_stdout()).lines();
    let mut done = 0;
    for l in lines.by_ref() {
        let l = l.unwrap();
        if l.contains("\"event\":\"progress\"") {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            done = v["done"].as_u64().unwrap_or(0) as usize;
            if done >= SERVER_KILL_NODES / 2 {
                break;
            }
        }
    }
    assert!((SERVER_KILL_NODES / 2..SERVER_KILL_NODES).contains(&done), "the load ended before half of it: {done}");
    server.kill_server();
    let drain = std::thread::spawn(move || lines.count());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.take_stderr(), &mut stderr).unwrap();
    let status = child.wait();
    drain.join().unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{}", server.port)), "the message names the server: {stderr}");
    eprintln!("killed mid-load: {}", stderr.trim());

    // restarted: nothing of the load; a rerun finishes and verifies
    let out = server.script("start-mariadb");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.sql("ironic", "SELECT COUNT(*) FROM nodes"), "0");
    assert_eq!(server.sql("ironic", "SELECT COUNT(*) FROM ports"), "0");
    let mut c = bm2ironic(logs.path());
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", &url);
    let out = c.args(["migrate", "--yes"]).args(STANDARD_RESOLUTIONS).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut c = bm2ironic(logs.path());
    c.env("BM2IRONIC_NOVA_BM_DB", &src.reader_url).env("BM2IRONIC_IRONIC_DB", &url);
    let v = c.arg("verify").output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{}", String::from_utf8_lossy(&v.stdout));
    assert!(src.dump() == source_before, "the source changed");
}
