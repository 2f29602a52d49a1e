//! `bm2ironic inventory` on real SQLite, MariaDB and PostgreSQL: the JSON equals the fixture, field by
//! field, read through a SELECT-only user.

use crate::common::{bm2ironic, Backend, TestDb};
use bm2ironic::core::demo::fixture::Fixture;
use bm2ironic::core::source::model::{BmInterface, BmNode};
use serde_json::{json, Value};

fn ts(t: &Option<chrono::NaiveDateTime>) -> Value {
    t.map(|t| json!(t.format("%Y-%m-%dT%H:%M:%S").to_string())).unwrap_or(Value::Null)
}

/// What the JSON must say for a node, written out field by field (not by reusing our serialiser).
fn expected_node(n: &BmNode) -> Vec<(&'static str, Value)> {
    vec![
        ("id", json!(n.id)),
        ("uuid", json!(n.uuid)),
        ("service_host", json!(n.service_host)),
        ("task_state", json!(n.task_state)),
        ("instance_uuid", json!(n.instance_uuid)),
        ("instance_name", json!(n.instance_name)),
        ("cpus", json!(n.cpus)),
        ("memory_mb", json!(n.memory_mb)),
        ("local_gb", json!(n.local_gb)),
        ("pm_address", json!(n.pm_address)),
        ("pm_user", json!(n.pm_user)),
        ("pm_password", if n.pm_password.is_some() { json!("***") } else { Value::Null }),
        ("terminal_port", json!(n.terminal_port)),
        ("image_path", json!(n.image_path)),
        ("pxe_config_path", json!(n.pxe_config_path)),
        ("deploy_key", if n.deploy_key.is_some() { json!("***") } else { Value::Null }),
        ("root_mb", json!(n.root_mb)),
        ("swap_mb", json!(n.swap_mb)),
        ("ephemeral_mb", json!(n.ephemeral_mb)),
        ("preserve_ephemeral", json!(n.preserve_ephemeral)),
        ("created_at", ts(&n.created_at)),
        ("updated_at", ts(&n.updated_at)),
        ("deleted_at", ts(&n.deleted_at)),
        ("deleted_raw", json!(n.deleted_raw)),
        ("deleted", json!(n.deleted_raw.is_some_and(|d| d != 0))),
    ]
}

fn expected_interface(i: &BmInterface) -> Vec<(&'static str, Value)> {
    vec![
        ("id", json!(i.id)),
        ("bm_node_id", json!(i.bm_node_id)),
        ("address", json!(i.address)),
        ("address_normalized", json!(i.address_normalized)),
        ("datapath_id", json!(i.datapath_id)),
        ("port_no", json!(i.port_no)),
        ("vif_uuid", json!(i.vif_uuid)),
        ("created_at", ts(&i.created_at)),
        ("updated_at", ts(&i.updated_at)),
        ("deleted_at", ts(&i.deleted_at)),
        ("deleted_raw", json!(i.deleted_raw)),
        ("deleted", json!(i.deleted_raw.is_some_and(|d| d != 0))),
    ]
}

fn compare(what: &str, got: &Value, want: Vec<(&'static str, Value)>) {
    for (field, w) in want {
        assert_eq!(got.get(field), Some(&w), "{what}: field {field}");
    }
}

async fn inventory_json_matches_fixture(backend: Backend) {
    let fixture = Fixture::standard();
    let Some(db) = TestDb::with_fixture(backend, "inv", &fixture).await else { return };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).args(["inventory", "--json", "--nova-bm-db", &db.reader_url]).output().unwrap();
    assert!(out.status.success(), "{backend:?}: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");

    assert_eq!(doc["source"]["schema_version"], 10);
    let nodes = doc["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), fixture.nodes.len(), "every bm_nodes row, soft-deleted ones included");
    for (got, want) in nodes.iter().zip(&fixture.nodes) {
        compare(&format!("{backend:?} node {}", want.id), got, expected_node(want));
        let want_ifaces: Vec<&BmInterface> =
            fixture.interfaces.iter().filter(|i| i.bm_node_id == Some(want.id)).collect();
        let got_ifaces = got["interfaces"].as_array().unwrap();
        assert_eq!(got_ifaces.len(), want_ifaces.len(), "node {} interfaces", want.id);
        for (gi, wi) in got_ifaces.iter().zip(want_ifaces) {
            compare(&format!("{backend:?} interface {}", wi.id), gi, expected_interface(wi));
        }
    }
    let orphans = doc["orphan_interfaces"].as_array().unwrap();
    assert_eq!(orphans.len(), 1);
    compare(
        "orphan",
        &orphans[0],
        expected_interface(fixture.interfaces.iter().find(|i| i.bm_node_id == Some(999)).unwrap()),
    );

    // the cases the issue names, spelled out
    let by_id = |id: i64| nodes.iter().find(|n| n["id"] == id).unwrap();
    assert_eq!(by_id(3)["deleted"], true, "soft-deleted node is marked");
    assert_eq!(by_id(2)["deleted_raw"], Value::Null, "NULL deleted is kept as NULL ...");
    assert_eq!(by_id(2)["deleted"], false, "... and means live");
    let upper = &by_id(1)["interfaces"][1];
    assert_eq!(upper["address"], "52:54:00:AA:BB:11", "the MAC as stored");
    assert_eq!(upper["address_normalized"], "52:54:00:aa:bb:11");
    assert_eq!(by_id(1)["created_at"], "2014-05-01T10:00:00");
    assert_eq!(by_id(1)["updated_at"], "2014-06-01T10:01:00", "created/updated not swapped");

    let s = &doc["summary"];
    assert_eq!((s["nodes"].as_u64(), s["live"].as_u64(), s["soft_deleted"].as_u64()), (Some(12), Some(11), Some(1)));
    assert_eq!(s["orphan_interfaces"], 1);
    assert_eq!(s["by_state"]["active"], 2);

    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("bmc-Secret"), "BMC passwords never shown");
}

async fn inventory_table_lists_every_node(backend: Backend) {
    // one of node 1's interfaces soft-deleted in nova_bm: shown marked (it is not migrated) and counted
    let mut f = Fixture::standard();
    let gone = f.interfaces.iter_mut().find(|i| i.bm_node_id == Some(1) && i.address.is_some()).unwrap();
    gone.deleted_raw = Some(gone.id);
    gone.deleted = true;
    let gone_mac = gone.address.clone().unwrap();
    let Some(db) = TestDb::with_fixture(backend, "tab", &f).await else { return };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).env("BM2IRONIC_NOVA_BM_DB", &db.reader_url).arg("inventory").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("ID  UUID"), "{text}");
    // header + 12 nodes, every row aligned on the HOST column
    let host_col = lines[0].find("HOST").unwrap();
    for l in &lines[1..13] {
        assert!(l[host_col..].starts_with("bm-compute-"), "misaligned row: {l}");
    }
    assert!(text.contains("52:54:00:AA:BB:11"));
    assert!(text.contains("Interfaces whose node does not exist"));
    assert!(text.contains("12 nodes: 11 live, 1 soft-deleted; live by state: active 2, building 1, deleted 1, deploy failed 1, none 6"), "{text}");
    assert!(!text.contains("bmc-Secret"));
    assert!(text.contains(&format!("{gone_mac}(deleted)")), "{text}");
    assert!(text.contains(" interfaces (1 soft-deleted), "), "{text}");
}

async fn large_inventory_streams(backend: Backend) {
    let f = Fixture::generated(3000, 7);
    let Some(db) = TestDb::with_fixture(backend, "big", &f).await else { return };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path()).args(["inventory", "--json", "--nova-bm-db", &db.reader_url]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["nodes"], 3000);
    assert_eq!(doc["summary"]["interfaces"], 6000);
    assert_eq!(doc["summary"]["with_instance"], 1000);
    assert_eq!(doc["nodes"][2999]["interfaces"][1]["address"], "52:55:01:00:0b:b8");
}

per_backend! {
    inventory_json_matches_fixture => super::inventory_json_matches_fixture;
    inventory_table_lists_every_node => super::inventory_table_lists_every_node;
    large_inventory_streams => super::large_inventory_streams;
}
