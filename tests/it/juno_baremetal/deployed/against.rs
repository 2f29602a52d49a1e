//! The before-world nova baremetal deployed, against our picture of it (#45, parts 2 and 3): the
//! fixture's and `OldInstance`'s rows against the rows nova baremetal wrote, our PXE builder against
//! the TFTP tree it left, and `bm2ironic proxy` after the window against its own API before it.

use std::path::Path;

use reqwest::Method;
use serde_json::Value;

use crate::common::baremetal::{raw, BaremetalHost};
use crate::common::juno::{IMAGE, KERNEL_I, RAMDISK_I};
use crate::common::nova::{juno_nova_schema_db, ApiKeystone, OldInstance, HOST, PROJECT};
use crate::common::proxy::start_proxy;
use crate::common::TestDb;
use bm2ironic::core::db::secret::Secret;
use bm2ironic::core::demo::fixture::Fixture;

/// The BMCs of nodes 1-3 (port 623: nova baremetal's and Juno Ironic's ipmitool know no other).
pub const BMCS: [&str; 3] = ["127.0.45.1", "127.0.45.2", "127.0.45.3"];
pub use crate::common::deploys::FLAVOR;
/// Node `id`'s MAC (its one NIC, as `baremetal-node-create` made it).
pub fn mac(id: i64) -> String {
    format!("52:55:00:45:00:{id:02x}")
}

/// The shapes of this test's nodes as our fixture builds them (`Fixture::node_shape`,
/// `instance_shape`: nodes 1 and 2 with an instance, node 3 free, one NIC each, as
/// `baremetal-node-create` makes it; node 4 deleted through the API, its NIC gone), with what this machine decides put in: the BMC addresses and
/// passwords, the disk size, the MACs, the instances' uuids, the TFTP root and instances path, the
/// partition sizes of this flavor (40 GB root, no swap: Juno's PXE driver makes 1 MB of swap then).
pub async fn deployed_shapes(host: &BaremetalHost, tftp: &Path, instances_path: &Path) -> Fixture {
    let real =
        host.nova_bm.rows("SELECT CAST(id AS CHAR), COALESCE(instance_uuid, '') FROM bm_nodes ORDER BY id").await;
    let mut nodes = Vec::new();
    let mut interfaces = Vec::new();
    for (k, r) in real.iter().enumerate() {
        let id = k as i64 + 1;
        let mut n = Fixture::node_shape(id, HOST);
        let bmc = BMCS.get(k).map_or(format!("127.0.45.{id}"), |b| b.to_string());
        (n.pm_address, n.pm_password) = (Some(bmc), Some(Secret::new(format!("bmc-pass-{id}"))));
        n.local_gb = Some(40);
        if id == 4 {
            // deleted through the API: soft-deleted, its NIC hard-deleted
            (n.deleted_raw, n.deleted, n.deleted_at) = (Some(1), true, n.updated_at);
            nodes.push(n);
            continue;
        }
        if id == 3 {
            n = Fixture::torn_down_shape(n);
        }
        if id < 3 {
            n = Fixture::instance_shape(n, "active");
            let inst = r[1].clone();
            n.pxe_config_path = Some(tftp.join(&inst).join("config").display().to_string());
            n.image_path = Some(instances_path.join(format!("instance-{id:08x}")).join("disk").display().to_string());
            (n.root_mb, n.swap_mb) = (Some(40 * 1024), Some(1));
            n.instance_uuid = Some(inst);
        }
        let mut f = Fixture::generated(1, 1).interfaces.remove(0);
        (f.id, f.bm_node_id, f.address) = (id, Some(id), Some(mac(id)));
        interfaces.push(f);
        nodes.push(n);
    }
    Fixture { schema_version: 10, nodes, interfaces }
}

/// The instances of nodes 1 and 2 as `OldInstance` writes them (the Juno tests' picture of nova
/// baremetal's instances), on a Juno Nova schema, with this test's flavor and images.
pub async fn old_instances(host: &BaremetalHost) -> TestDb {
    let t = juno_nova_schema_db().await;
    let real = host
        .nova
        .rows("SELECT uuid, node, CAST(instance_type_id AS TEXT) FROM instances WHERE deleted = 0 ORDER BY id")
        .await;
    for (k, r) in real.iter().enumerate() {
        let name = format!("bm-instance-{}", k + 1);
        let i = OldInstance {
            uuid: &r[0],
            node: &r[1],
            host: HOST,
            active: k == 0,
            name: &name,
            project: PROJECT,
            image: IMAGE,
            kernel: (KERNEL_I, RAMDISK_I),
            flavor: (FLAVOR, "bmjuno"),
            root_gb: 40,
            reservation: "r-00000001",
        };
        for sql in i.rows("'2014-11-20 10:00:00'", '"') {
            t.exec(&sql.replace(", 6, '", &format!(", {}, '", r[2]))).await;
        }
    }
    t
}

/// An instance's columns Nova's API and the tool read, as text, by uuid; ids and times made at
/// the moment (the user, project, reservation, timestamps) as `set` or NULL.
pub async fn instance_rows(db: &TestDb) -> Vec<String> {
    let t = |c: &str| format!("CASE WHEN {c} IS NULL THEN 'NULL' ELSE 'set' END");
    let s = |c: &str| format!("COALESCE(CAST({c} AS TEXT), 'NULL')");
    let set = ["created_at", "updated_at", "launched_at", "scheduled_at", "user_id", "project_id", "reservation_id"];
    let cols = [
        "image_ref",
        "kernel_id",
        "ramdisk_id",
        "launch_index",
        "power_state",
        "vm_state",
        "task_state",
        "memory_mb",
        "vcpus",
        "root_gb",
        "ephemeral_gb",
        "hostname",
        "host",
        "node",
        "launched_on",
        "display_name",
        "instance_type_id",
        "locked",
        "shutdown_terminate",
        "disable_terminate",
        "cleaned",
        "deleted",
        "config_drive",
        "architecture",
        "os_type",
        "progress",
        "root_device_name",
        "default_ephemeral_device",
        "default_swap_device",
        "availability_zone",
    ];
    let mut sel: Vec<String> = vec![s("uuid")];
    sel.extend(set.iter().map(|c| t(c)));
    sel.extend(cols.iter().map(|c| s(c)));
    let names: Vec<&str> = set.iter().chain(cols.iter()).copied().collect();
    let mut out = Vec::new();
    // the live ones (instance 3's, deleted before the window, is not compared)
    for r in db.rows(&format!("SELECT {} FROM instances WHERE deleted = 0 ORDER BY uuid", sel.join(", "))).await {
        for (n, v) in names.iter().zip(&r[1..]) {
            out.push(format!("instance {} {n}={v}", r[0]));
        }
    }
    let meta = "SELECT instance_uuid, \"key\", COALESCE(value, 'NULL') FROM instance_system_metadata WHERE deleted = 0 AND instance_uuid IN (SELECT uuid FROM instances WHERE deleted = 0) ORDER BY 1, 2";
    for r in db.rows(meta).await {
        let v = if r[1] == "instance_type_flavorid" { "set" } else { r[2].as_str() };
        out.push(format!("instance {} meta {}={v}", r[0], r[1]));
    }
    out
}

/// nova baremetal's TFTP tree after its deploys, against what the tool reads and our builder writes:
/// each instance's `config` is byte for byte `pxe::nova_baremetal_config` (with this compute host's
/// root, the instance, the root uuid the deploy helper switched in, its `pxe_append_params`), the
/// tool's parser reads that root back, the instance's kernel and ramdisk are beside it, and each MAC's
/// `pxelinux.cfg/01-...` is a link to it; its `deployment_id` and `deployment_key` are the node's
/// nova_bm id and the key nova_bm keeps (a credential of the deploy helper, which the tool never
/// shows: `BmNode::deploy_key`), where our builder writes 1 and `KEY`. nova baremetal also leaves the deploy kernel and ramdisk
/// there (Juno removes the four images at teardown only); our fixtures' trees leave them out, as the
/// tool reads neither (docs/mapping.md 7).
pub async fn the_tree(tftp: &Path, nova_bm: &TestDb, root_uuid: &str, append: &str) {
    let root = tftp.display().to_string();
    let nodes = nova_bm
        .rows("SELECT CAST(id AS CHAR), instance_uuid, deploy_key FROM bm_nodes WHERE instance_uuid IS NOT NULL ORDER BY id")
        .await;
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    for r in &nodes {
        let (id, inst) = (r[0].parse::<i64>().unwrap(), &r[1]);
        let dir = tftp.join(inst);
        let mut files: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        files.sort();
        assert_eq!(files, ["config", "deploy_kernel", "deploy_ramdisk", "kernel", "ramdisk"], "{}", dir.display());
        // the deployment: nova_bm's node id and the key it keeps (random); our builder writes 1 and
        // `KEY`, which the tool never reads
        let juno = std::fs::read_to_string(dir.join("config")).unwrap();
        let deployment = format!("deployment_id={id} deployment_key={} ", r[2]);
        assert!(r[2].len() == 32 && juno.contains(&deployment), "node {id}: its id and key in its config:\n{juno}");
        let juno = juno.replace(&deployment, "deployment_id=1 deployment_key=KEY ");
        let ours = bm2ironic::core::source::pxe::nova_baremetal_config(&root, inst, root_uuid, append);
        assert_eq!(juno, ours, "node {id}: the config nova baremetal's deploy left, then our builder's");
        let boot = bm2ironic::core::source::pxe::parse(&juno).unwrap();
        assert_eq!(boot.root_uuid, root_uuid, "node {id}: the root the tool reads");
        let link = tftp.join("pxelinux.cfg").join(crate::common::netboot::pxe_mac_name(&mac(id)));
        assert_eq!(std::fs::read_link(&link).unwrap(), dir.join("config"), "node {id}'s MAC link");
    }
    // the torn-down node's instance left nothing: its directory and its MAC's link are gone
    let mut left: Vec<String> = std::fs::read_dir(tftp)
        .unwrap()
        .chain(std::fs::read_dir(tftp.join("pxelinux.cfg")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut want: Vec<String> = nodes.iter().map(|r| r[1].clone()).collect();
    want.extend([1, 2].map(|id| crate::common::netboot::pxe_mac_name(&mac(id))));
    want.push("pxelinux.cfg".into());
    want.sort();
    assert_eq!(left, want, "nova baremetal's TFTP root after the teardown of node 3");
}

/// What a node answers that nova baremetal answered too: its instance, its state, its resources,
/// its MACs (nova baremetal's `local_gb` is the proxy's `disk_gb`, as Juno's Ironic-backed API says).
fn facts(node: &Value) -> Value {
    let macs: Vec<&str> = node["interfaces"]
        .as_array()
        .map(|a| a.iter().filter_map(|i| i["address"].as_str()).collect())
        .unwrap_or_default();
    let disk = if node["disk_gb"].is_null() { &node["local_gb"] } else { &node["disk_gb"] };
    serde_json::json!({
        "instance_uuid": node["instance_uuid"], "task_state": node["task_state"], "cpus": node["cpus"],
        "memory_mb": node["memory_mb"], "disk_gb": disk, "macs": macs,
    })
}

/// After the window, `bm2ironic proxy` over Juno's Ironic answers every node's show by its nova_bm
/// integer id with what nova baremetal's own API answered before it (`old_shows`): the instance, the
/// state (`active`; none on the free node, Juno's NOSTATE as nova baremetal's NULL), the resources,
/// the MACs; its list has each node's state as nova baremetal's list had it (by uuid: the proxy's
/// list ids are Ironic's uuids, docs/proxy.md).
pub async fn the_proxy(ironic: &str, ks: u16, old_list: &(u16, Value), old_shows: &[(u16, Value)]) {
    let proxy = start_proxy(&["--auth", "noauth", "--ironic-url", ironic], &[]).await;
    let pport: u16 = proxy.addr.rsplit(':').next().unwrap().parse().unwrap();
    let pks = ApiKeystone::register(ks, pport).await;
    for (k, (status, old)) in old_shows.iter().enumerate() {
        assert_eq!(*status, 200, "nova baremetal's show of node {}: {old}", k + 1);
        let (status, new) = raw(&proxy.base, &pks, Method::GET, &format!("/{}", k + 1), None).await;
        assert_eq!(status, 200, "the proxy's show of node {}: {new}", k + 1);
        let (mut o, n) = (facts(&old["node"]), facts(&new["node"]));
        if old["node"]["task_state"] == "deleted" {
            // torn down: nova baremetal says `deleted`, Juno's Ironic NOSTATE (no such state there)
            assert!(n["task_state"].is_null(), "node {}: {new}", k + 1);
            o["task_state"] = Value::Null;
        }
        assert_eq!(n, o, "node {}: the proxy after the window, nova baremetal before it", k + 1);
        assert_eq!(new["node"]["id"], k as i64 + 1, "the integer id");
    }
    let (status, list) = raw(&proxy.base, &pks, Method::GET, "", None).await;
    assert_eq!((status, old_list.0), (200, 200), "{list}");
    let old: std::collections::BTreeMap<String, Value> = old_list.1["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["uuid"].as_str().unwrap().to_string(), n["task_state"].clone()))
        .collect();
    let new: std::collections::BTreeMap<String, Value> = list["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap().to_string(), n["task_state"].clone()))
        .collect();
    assert_eq!(old.keys().collect::<Vec<_>>(), new.keys().collect::<Vec<_>>(), "the nodes listed: {list}");
    let old: std::collections::BTreeMap<String, Value> =
        old.into_iter().map(|(u, s)| (u, if s == "deleted" { Value::Null } else { s })).collect();
    assert_eq!(new, old, "each node's state in the list (`deleted` is NOSTATE): {list}");
}

/// The baremetal driver's `compute_nodes` rows of the live nodes (`uuids`, nodes 1-3) as Juno's
/// resource tracker keeps them once the instances are built (the stopped one counts too), against
/// what `juno_nova_db` writes for the Juno tests' old cloud: type, version, cpu_info and sizes, and
/// for a node with an instance its flavor as used (8 vCPUs, 16384 MB, its 40 GB root) and one VM;
/// for the free node nothing used. Polled: the tracker runs every 3 s.
pub async fn the_resources(nova: &TestDb, uuids: &[String], log: &Path) {
    let sql = format!(
        "SELECT hypervisor_hostname, hypervisor_type, CAST(hypervisor_version AS TEXT), cpu_info, CAST(vcpus AS TEXT), CAST(memory_mb AS TEXT), CAST(local_gb AS TEXT), CAST(vcpus_used AS TEXT), CAST(memory_mb_used AS TEXT), CAST(local_gb_used AS TEXT), CAST(running_vms AS TEXT) FROM compute_nodes WHERE deleted = 0 AND hypervisor_hostname IN ('{}') ORDER BY hypervisor_hostname",
        uuids.join("', '")
    );
    let mut want: Vec<Vec<String>> = uuids
        .iter()
        .enumerate()
        .map(|(k, u)| {
            let used = k < 2; // node 3's instance was deleted
            let [v, m, d, n] = if used { ["8", "16384", "40", "1"] } else { ["0", "0", "0", "0"] };
            [u.as_str(), "baremetal", "1", "baremetal cpu", "8", "16384", "40", v, m, d, n].map(String::from).to_vec()
        })
        .collect();
    want.sort();
    let t0 = std::time::Instant::now();
    loop {
        let got = nova.rows(&sql).await;
        if got == want {
            return;
        }
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(60),
            "nova baremetal's compute_nodes, then what juno_nova_db writes:\n{got:?}\n{want:?}\nlog {}",
            log.display()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}
