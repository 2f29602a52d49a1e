//! Scale: a 20,000-node load into a MariaDB whose `max_allowed_packet` is 4 MB (MySQL 5.6's default,
//! common under Juno-era clouds). The run record used to be one value holding every node (~14 MB
//! here), which the server refused by dropping the connection; it is now one row per node, written
//! in statements of bounded size. MySQL only: the limit is MySQL's.

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::{bm2ironic, Backend, TestDb, STANDARD_RESOLUTIONS};

#[tokio::test(flavor = "multi_thread")]
async fn a_20k_node_load_fits_a_4mb_max_allowed_packet() {
    let Some(src) = TestDb::with_fixture(Backend::MySql, "src", &Fixture::generated(20_000, 3)).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::MySql, "tgt").await else { return };
    let before = tgt.scalar_i64("SELECT CAST(@@GLOBAL.max_allowed_packet AS SIGNED)").await;
    tgt.exec("SET GLOBAL max_allowed_packet = 4194304").await;
    let run = |args: &[&str]| {
        let logs = tempfile::tempdir().unwrap();
        bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(args)
            .output()
            .unwrap()
    };
    let mut args = vec!["migrate", "--yes"];
    args.extend_from_slice(STANDARD_RESOLUTIONS);
    let out = run(&args);
    let verify = run(&["verify"]);
    let list = run(&["rollback", "--list"]);
    tgt.exec(&format!("SET GLOBAL max_allowed_packet = {before}")).await;
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 20_000);
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM bm2ironic_run_nodes").await, 20_000);
    assert_eq!(verify.status.code(), Some(0), "{}", String::from_utf8_lossy(&verify.stdout));
    assert!(String::from_utf8_lossy(&list.stdout).contains("20000"), "{}", String::from_utf8_lossy(&list.stdout));
}
