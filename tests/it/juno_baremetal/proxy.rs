//! The old API as the proxy's oracle (#45): what nova baremetal's own `os-baremetal-nodes` answered
//! before the upgrade, what `bm2ironic proxy` answers after `bm2ironic migrate` moved those very rows
//! into Juno's Ironic, and what Juno Nova's own Ironic-backed extension answers there: the same
//! requests, raw and through Juno's `nova`, side by side (docs/proxy.md, "Three voices").

use std::path::Path;
use std::time::Instant;

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::baremetal::{ironic_api, juno_nova, raw, BaremetalHost};
use crate::common::ironic::{start_ironic, IronicOptions, Release};
use crate::common::juno::{dbsync, KERNEL, RAMDISK};
use crate::common::nova::ApiKeystone;
use crate::common::proxy::start_proxy;
use crate::common::{bm, Backend};

/// nova baremetal's answers before the upgrade: the raw list and show of node 1, and what Juno's
/// `nova` prints for `baremetal-node-list`, `baremetal-node-show 1`, `baremetal-interface-list 1`.
pub struct Oracle {
    pub list: Value,
    pub show1: Value,
    pub cli: [String; 3],
}

/// After the upgrade: the real nova_bm migrated into Juno's Ironic, the proxy and Juno's own
/// Ironic-backed API asked what nova baremetal was asked (`oracle`).
pub async fn proxy_answers_as_nova_baremetal(venv: &Path, host: BaremetalHost, oracle: Oracle, ks: u16) {
    let t0 = Instant::now();
    let BaremetalHost { plane, nova_bm, nova, tftp: _tftp } = host;
    let tgt = dbsync(venv, Backend::Sqlite, "bmtgt").await;
    // nova baremetal's nova-compute stops (runbook step 3); the plan right after it: its heartbeat is
    // seconds old (the report interval is 10 s, a service counts as down after 60 s)
    drop(plane);
    let args = ["--deploy-kernel", KERNEL, "--deploy-ramdisk", RAMDISK, "--default-arch", "x86_64"];
    let out = bm(["plan", "--json"]).args(args).source(&nova_bm).nova(Some(&nova)).target(&tgt).run();
    assert_eq!(out.code, 3, "{}", out.text());
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    let n = |id: i64| json!({"node": {"nova_bm_id": id}});
    let host = json!({"host": {"host": "bm-compute-1"}});
    let want = [
        ("deleted-node", n(3)),
        ("no-matching-flavor", n(1)),
        ("no-matching-flavor", n(2)),
        ("nova-compute-running", host),
    ];
    assert_eq!(plan_names(&plan), want.map(|(c, s)| (c.to_string(), s)), "the plan of nova baremetal's own nova_bm");
    let out = bm(["migrate", "--via", "db", "--yes", "--resolve", "nova-compute-running=ignore"])
        .args(args)
        .source(&nova_bm)
        .nova(Some(&nova))
        .target(&tgt)
        .run();
    assert!(out.success(), "migrate: {}", out.text());
    // nova baremetal's own rows: the two live nodes, updated_at NULL as the API left it, stays NULL
    let rows = tgt.rows("SELECT uuid, COALESCE(updated_at, 'NULL') FROM nodes ORDER BY uuid").await;
    let mut want = nova_bm.rows("SELECT uuid, 'NULL' FROM bm_nodes WHERE deleted = 0 ORDER BY uuid").await;
    want.sort();
    assert_eq!(rows, want, "the migrated nodes");
    let ironic = start_ironic(IronicOptions::juno(venv, &tgt.admin_url, Release::JunoApi)).await;
    let proxy = start_proxy(&["--auth", "noauth", "--ironic-url", &ironic.base], &[]).await;
    let pport: u16 = proxy.addr.rsplit(':').next().unwrap().parse().unwrap();
    let pks = ApiKeystone::register(ks, pport).await;
    let (jplane, _jnova) = ironic_api(&ironic.base, ks).await;
    let jbase = format!("http://127.0.0.1:{}", jplane.port);
    eprintln!("after the migration, the proxy and Juno's Ironic-backed API up after {:?}", t0.elapsed());
    let uuids: Vec<String> = nova_bm
        .rows("SELECT uuid FROM bm_nodes WHERE deleted = 0 ORDER BY id")
        .await
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let voices = [("proxy", proxy.base.as_str(), &pks), ("juno-ironic", jbase.as_str(), &jplane.keystone)];
    the_lists(&oracle, &uuids, &voices).await;
    the_shows(&oracle, &uuids, &voices).await;
    the_clients(&oracle, &uuids, &voices);
    the_mutations(&uuids[1], &voices).await;
    eprintln!("the three voices compared {:?} after the migration", t0.elapsed());
}

/// A voice: its name, its API's base URL, its Keystone region.
type Voice<'a> = (&'a str, &'a str, &'a ApiKeystone);

/// The plan of the real nova_bm, right after nova baremetal's nova-compute stopped: what an operator
/// expects, and nothing else: the service's heartbeat is seconds old (`nova-compute-running`, blocking:
/// the service is down, but not for 60 s yet), node 3 was deleted through the API (`deleted-node`,
/// skipped), and no flavor of this Nova (Juno's defaults: no baremetal flavor was made) fits nodes 1
/// and 2 (`no-matching-flavor`).
fn plan_names(plan: &Value) -> Vec<(String, Value)> {
    let mut v: Vec<(String, Value)> = plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["code"].as_str().unwrap().to_string(), c["subject"].clone()))
        .collect();
    v.sort_by_key(|(c, s)| (c.clone(), s.to_string()));
    v
}

/// The lists: the same live nodes in the same order, the same cpus, memory and disk (nova_bm's
/// `local_gb` is the others' `disk_gb`); the fields each voice has (docs/proxy.md, "Three voices").
async fn the_lists(oracle: &Oracle, uuids: &[String], voices: &[Voice<'_>]) {
    let old = oracle.list["nodes"].as_array().unwrap();
    assert_eq!(old.iter().map(|n| n["uuid"].clone()).collect::<Vec<_>>(), uuids, "nova baremetal's list");
    assert_eq!(old.iter().map(|n| n["id"].clone()).collect::<Vec<_>>(), [json!(1), json!(2)]);
    assert_eq!(keys(&old[0]), OLD_KEYS, "nova baremetal's node");
    for (name, base, ks) in voices {
        let (status, list) = raw(base, ks, Method::GET, "", None).await;
        assert_eq!(status, 200, "{name}: {list}");
        let nodes = list["nodes"].as_array().unwrap();
        assert_eq!(nodes.iter().map(|n| n["id"].clone()).collect::<Vec<_>>(), uuids, "{name}: ids are uuids");
        for (n, o) in nodes.iter().zip(old) {
            assert_eq!((&n["cpus"], &n["memory_mb"], &n["disk_gb"]), (&o["cpus"], &o["memory_mb"], &o["local_gb"]));
            assert_eq!((&n["interfaces"], &n["host"]), (&json!([]), &json!("IRONIC MANAGED")), "{name}");
        }
        assert_eq!(keys(&nodes[0]), NEW_LIST_KEYS, "{name}'s list");
    }
}

/// nova baremetal's node keys (with `os-baremetal-ext-status`, loaded by default).
const OLD_KEYS: &[&str] = &[
    "cpus",
    "id",
    "instance_uuid",
    "interfaces",
    "local_gb",
    "memory_mb",
    "pm_address",
    "pm_user",
    "pxe_config_path",
    "service_host",
    "task_state",
    "terminal_port",
    "updated_at",
    "uuid",
];
/// The Ironic-backed list's node keys (Juno's own, the proxy's).
const NEW_LIST_KEYS: &[&str] = &["cpus", "disk_gb", "host", "id", "interfaces", "memory_mb", "task_state"];

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort();
    k
}

/// The shows: by nova_bm's integer id the proxy answers node 1 with `"id": 1` and its uuid, the
/// MACs nova baremetal listed; Juno's own Ironic-backed API answers 500 (it hands `1` to Ironic as a
/// node id); by uuid both answer the node and its MACs.
async fn the_shows(oracle: &Oracle, uuids: &[String], voices: &[Voice<'_>]) {
    let old = &oracle.show1["node"];
    let macs: Vec<Value> =
        old["interfaces"].as_array().unwrap().iter().map(|i| json!({"address": i["address"]})).collect();
    assert_eq!(macs.len(), 2, "{old}");
    for (name, base, ks) in voices {
        let (status, by_int) = raw(base, ks, Method::GET, "/1", None).await;
        if *name == "proxy" {
            assert_eq!(status, 200, "{by_int}");
            let n = &by_int["node"];
            assert_eq!((&n["id"], &n["uuid"], &n["interfaces"]), (&json!(1), &old["uuid"], &json!(macs)), "{by_int}");
            assert_eq!(
                (&n["cpus"], &n["memory_mb"], &n["disk_gb"]),
                (&old["cpus"], &old["memory_mb"], &old["local_gb"])
            );
            assert_eq!(n["instance_uuid"], old["instance_uuid"]);
        } else {
            assert_eq!(status, 500, "Juno's Ironic-backed API by integer id: {by_int}");
        }
        let (status, by_uuid) = raw(base, ks, Method::GET, &format!("/{}", uuids[0]), None).await;
        assert_eq!((status, &by_uuid["node"]["interfaces"]), (200, &json!(macs)), "{name}: {by_uuid}");
    }
}

/// Juno's `nova` against each: `baremetal-node-list` lists the same nodes (by uuid now), with the
/// same CPUs, memory and disk, and no MACs; `baremetal-node-show 1` and `baremetal-interface-list 1`
/// answer from the proxy (the same MACs; no interface ids, OpenFlow fields) and fail on Juno's own.
fn the_clients(oracle: &Oracle, uuids: &[String], voices: &[Voice<'_>]) {
    let [old_list, old_show, old_ifs] = &oracle.cli;
    assert!(
        old_list.contains("| 1  | bm-compute-1 |") && old_list.contains("52:55:00:00:00:01, 52:55:01:00:00:01"),
        "{old_list}"
    );
    assert!(
        old_show.contains(&uuids[0]) && old_ifs.contains("| 2  | 0           | 0       | 52:55:01:00:00:01 |"),
        "{old_ifs}"
    );
    for (name, _, ks) in voices {
        let list = juno_nova(ks, &["baremetal-node-list"]);
        assert!(list.success(), "{name}: {}", list.text());
        for u in uuids {
            let row = format!("| {u} | IRONIC MANAGED | -          | 8    | 16384     | 500     |             |");
            assert!(list.stdout.contains(&row), "{name}: {}", list.stdout);
        }
        let (show, ifs) =
            (juno_nova(ks, &["baremetal-node-show", "1"]), juno_nova(ks, &["baremetal-interface-list", "1"]));
        if *name == "proxy" {
            assert!(
                show.success() && show.stdout.contains(&uuids[0]) && show.stdout.contains("| id            | 1 "),
                "{}",
                show.text()
            );
            assert!(
                ifs.success() && ifs.stdout.contains("|    |             |         | 52:55:01:00:00:01 |"),
                "{}",
                ifs.text()
            );
        } else {
            assert!(!show.success() && show.text().contains("HTTP 500"), "{}", show.text());
            assert!(!ifs.success() && ifs.text().contains("HTTP 500"), "{}", ifs.text());
        }
    }
}

/// The mutations nova baremetal performed (the test made its nodes and deleted one with them): the
/// proxy answers 404 naming the Ironic command, Juno's own Ironic-backed API 400 naming its own.
async fn the_mutations(node: &str, voices: &[Voice<'_>]) {
    let create = json!({"node": {"service_host": "h", "cpus": 1, "memory_mb": 1, "local_gb": 1}});
    let muts = [
        (Method::POST, String::new(), Some(create), "node create", "node-create"),
        (Method::DELETE, format!("/{node}"), None, "node delete", "node-delete"),
        (
            Method::POST,
            format!("/{node}/action"),
            Some(json!({"add_interface": {"address": "52:55:02:00:00:02"}})),
            "port create",
            "port-create",
        ),
        (
            Method::POST,
            format!("/{node}/action"),
            Some(json!({"remove_interface": {"address": "52:55:01:00:00:02"}})),
            "port delete",
            "port-delete",
        ),
    ];
    for (method, path, body, proxy_cmd, juno_cmd) in muts {
        for (name, base, ks) in voices {
            let (status, b) = raw(base, ks, method.clone(), &path, body.clone()).await;
            let (want, fault, cmd) = if *name == "proxy" {
                (404, "itemNotFound", format!("`openstack baremetal {proxy_cmd}`"))
            } else {
                (400, "badRequest", format!("Please use Ironic command {juno_cmd} "))
            };
            assert_eq!(status, want, "{name} {method} {path}: {b}");
            assert!(b[fault]["message"].as_str().unwrap_or_default().contains(&cmd), "{name} {method} {path}: {b}");
        }
    }
}
