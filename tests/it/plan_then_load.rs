//! Property: whatever `plan` lets through loads without a database error. Random hostile inventories
//! (odd states, uuids in the wrong case or not uuids, duplicate instances and MACs, negative sizes,
//! orphan and deleted interfaces) go into a real SQLite nova_bm; `migrate --yes` with a decision for
//! every conflict code must commit (exit 0) into a real Ironic schema, never fail in the database.
//! Bounded: 24 cases (each runs the binary once), SQLite only.

use crate::common::{bm2ironic, Backend, TestDb};
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::migrate::conflict::{Action, ConflictCode};
use bm2ironic::core::source::model::{BmInterface, BmNode};
use proptest::prelude::*;

const UUIDS: &[&str] = &[
    "bbbbbbbb-0000-4000-8000-000000000001",
    "BBBBBBBB-0000-4000-8000-000000000001",
    "bbbbbbbb-0000-4000-8000-000000000002",
    "not-a-uuid-at-all",
];
const INSTANCES: &[&str] = &[
    "aaaaaaaa-0000-4000-8000-000000000001",
    "AAAAAAAA-0000-4000-8000-000000000001",
    "aaaaaaaa-0000-4000-8000-000000000002",
];
const STATES: &[&str] = &["active", "Active", "building", "deploy failed", "ERROR", "deleted", "", "frobnicating"];
const MACS: &[&str] = &["52:54:00:00:00:01", "52-54-00-00-00-01", "52:54:00:00:00:02", "5254.0000.0001", "not-a-mac"];

fn row(id: i64, u: usize, i: usize, s: usize, deleted: bool, cpus: i64, port: i64) -> BmNode {
    BmNode {
        id,
        // nova_bm's unique index allows each exact value once: later rows take None
        uuid: Some(UUIDS[u % UUIDS.len()].to_string()),
        instance_uuid: (i < INSTANCES.len()).then(|| INSTANCES[i].to_string()),
        task_state: Some(STATES[s % STATES.len()].to_string()),
        service_host: Some("bm-compute-1".into()),
        cpus: Some(cpus),
        memory_mb: Some(4096),
        local_gb: Some(100),
        terminal_port: Some(port),
        pm_address: Some("127.0.0.1".into()),
        pm_user: Some("admin".into()),
        deleted,
        deleted_raw: Some(deleted as i64),
        ..Default::default()
    }
}

fn inventory() -> impl Strategy<Value = Fixture> {
    let node = (
        0usize..5,
        0usize..5,
        0usize..8,
        prop::bool::weighted(0.2),
        -2i64..3,
        prop_oneof![Just(0i64), Just(-1), Just(8001), Just(70000)],
    );
    (prop::collection::vec(node, 1..8), prop::collection::vec((1i64..10, 0usize..5, prop::bool::weighted(0.1)), 0..10))
        .prop_map(|(nodes, ifaces)| {
            let mut seen = std::collections::HashSet::new();
            let nodes: Vec<BmNode> = nodes
                .into_iter()
                .enumerate()
                .map(|(k, (u, i, s, d, c, p))| {
                    let mut n = row(k as i64 + 1, u, i, s, d, c, p);
                    if !seen.insert(n.uuid.clone()) {
                        n.uuid = None;
                    }
                    n
                })
                .collect();
            let mut seen = std::collections::HashSet::new();
            let interfaces = ifaces
                .into_iter()
                .enumerate()
                .filter(|(_, (_, m, _))| seen.insert(*m))
                .map(|(k, (node, m, deleted))| {
                    BmInterface {
                        id: k as i64 + 1,
                        bm_node_id: Some(node),
                        address: Some(MACS[m].to_string()),
                        deleted,
                        deleted_raw: Some(deleted as i64),
                        ..Default::default()
                    }
                    .normalize()
                })
                .collect();
            Fixture { schema_version: 10, nodes, interfaces }
        })
}

fn decisions(seed: u64) -> Vec<String> {
    let mut args = vec![];
    for (k, c) in ConflictCode::ALL.iter().enumerate() {
        // keep-instance is decided per node only (a code-wide one is refused)
        let acts: Vec<_> = c.actions().iter().filter(|a| **a != Action::KeepInstance).collect();
        if !acts.is_empty() {
            args.push("--resolve".to_string());
            args.push(format!("{c}={}", acts[(seed as usize >> (k % 16)) % acts.len()]));
        }
    }
    args
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: regressions!("plan_then_load"), ..ProptestConfig::default() })]

    #[test]
    fn what_plan_lets_through_loads_without_a_database_error(f in inventory(), seed in any::<u64>()) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (src, tgt) = rt.block_on(async {
            (TestDb::with_fixture(Backend::Sqlite, "src", &f).await.unwrap(), TestDb::ironic(Backend::Sqlite, "tgt").await.unwrap())
        });
        let logs = tempfile::tempdir().unwrap();
        let out = bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(["migrate", "--yes", "--default-arch", "x86_64", "--deploy-kernel", "file:///k", "--deploy-ramdisk", "file:///r"])
            .args(decisions(seed))
            .output()
            .unwrap();
        prop_assert_eq!(out.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    }
}
