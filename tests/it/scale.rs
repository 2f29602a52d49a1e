//! Scale: a 20,000-node load into a MariaDB whose `max_allowed_packet` is 4 MB (MySQL 5.6's default,
//! common under Juno-era clouds). The run record used to be one value holding every node (~14 MB
//! here), which the server refused by dropping the connection; it is now one row per node, written
//! in statements of bounded size. MySQL only: the limit is MySQL's. The load runs as on MySQL (no
//! `INSERT ... RETURNING`, which MariaDB has from 10.5): this is the test of that path.

use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db, DbError, Val};
use bm2ironic::core::demo::fixture::Fixture;

use crate::common::{bm2ironic, Backend, TestDb, STANDARD_RESOLUTIONS};

#[tokio::test(flavor = "multi_thread")]
async fn a_20k_node_load_fits_a_4mb_max_allowed_packet() {
    let Some(src) = TestDb::with_fixture(Backend::MySql, "src", &Fixture::generated(20_000, 3)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::MySql, "tgt").await else { return };
    // the session value is read-only: only the global one can be lowered; new connections take it.
    // Put back when the guard drops, even if the test panics (no other test sends a statement near 4 MB)
    let before = tgt.scalar_i64("SELECT CAST(@@GLOBAL.max_allowed_packet AS SIGNED)").await;
    let _restore = GlobalPacket { admin_url: tgt.admin_url.clone(), before };
    tgt.exec("SET GLOBAL max_allowed_packet = 4194304").await;
    let logs = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            // as MySQL 5.6 would: no INSERT ... RETURNING, the ids looked up by uuid
            .env("BM2IRONIC_NO_RETURNING", "1")
            .args(args)
            .output()
            .unwrap()
    };
    let mut args = vec!["migrate", "--yes"];
    args.extend_from_slice(STANDARD_RESOLUTIONS);
    let out = run(&args);
    let verify = run(&["verify"]);
    let list = run(&["rollback", "--list"]);
    drop(_restore);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 20_000);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM bm2ironic_run_nodes").await, 20_000);
    assert_eq!(verify.status.code(), Some(0), "{}", String::from_utf8_lossy(&verify.stdout));
    assert!(String::from_utf8_lossy(&list.stdout).contains("20000"), "{}", String::from_utf8_lossy(&list.stdout));
    // MySQL's path was the one taken
    let audit: String = std::fs::read_dir(logs.path())
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(audit.contains("looked up by uuid"), "the load did not run as on MySQL");
}

/// Sets the server's global max_allowed_packet back when dropped.
struct GlobalPacket {
    admin_url: String,
    before: i64,
}

impl Drop for GlobalPacket {
    fn drop(&mut self) {
        let (url, before) = (self.admin_url.clone(), self.before);
        // a runtime of its own: drop may run inside the test's runtime, or while it unwinds
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let db = Db::connect(&DbUrl::parse(&url).unwrap(), Access::Create).await.unwrap();
                db.execute(&format!("SET GLOBAL max_allowed_packet = {before}"), vec![]).await.unwrap();
                db.close().await;
            })
        })
        .join()
        .unwrap();
    }
}

/// A statement larger than the server's max_allowed_packet is reported as that, not as "cannot
/// reach" the server (MariaDB drops the connection, which reads as a reset).
#[tokio::test(flavor = "multi_thread")]
async fn a_statement_over_max_allowed_packet_says_so() {
    let Some(t) = TestDb::create(Backend::MySql, "packet").await else { return };
    let db = t.admin().await;
    let limit = db.max_packet.expect("max_allowed_packet read at connect");
    assert!(db.max_statement_bytes() < limit as usize);
    let big = "x".repeat(limit as usize + 1024 * 1024);
    let e = db.execute("SELECT ?", vec![Val::from(big)]).await.unwrap_err();
    assert!(matches!(e, DbError::PacketTooLarge { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("max_allowed_packet") && !msg.contains("cannot reach"), "{msg}");
    db.close().await;
}
