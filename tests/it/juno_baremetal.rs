//! nova baremetal itself (Juno Nova 2014.2, scripts/juno.sh nova-env; skipped loudly without
//! `BM2IRONIC_TEST_JUNO_NOVA_VENV`) against the nova_bm world the other tests build by hand (#45;
//! docs/juno.md, "nova baremetal itself"):
//! - the schema Juno's own `nova-baremetal-manage db sync` makes, on SQLite and MariaDB, is the one in
//!   assets/nova_bm/schema.{sqlite,mysql}.sql (what `Fixture` loads), column by column, index by
//!   index, CHECK by CHECK, with the same migrate version (`nova_bm` 10);
//! - nodes and interfaces made through nova baremetal's own `os-baremetal-nodes` API (Juno's control
//!   plane as a baremetal compute host, Juno's `nova`) are the rows our fixture writes for the same
//!   shapes, but for the deliberate difference listed; then the proxy is held to that API's answers
//!   (the second half, `proxy.rs` beside this file);
//! - the PXE config nova baremetal's own functions write is byte for byte the one our builder writes;
//! - instances deployed by nova baremetal itself onto QEMU machines (`deployed.rs` beside this file):
//!   the rows, Nova's instances and the TFTP tree it left against our fixtures, then the window on
//!   that cloud (plan, migrate, Juno's takeover, juno-boot, Juno's Nova rebooting the machines) and
//!   the proxy against its API for every node.

use std::time::{Duration, Instant};

mod deployed;
mod proxy;
use proxy::Oracle;
use serde_json::Value;

use reqwest::Method;

use crate::common::baremetal::{nova, raw, BaremetalHost};
use crate::common::juno::{baremetal_dbsync, juno_nova_venv, juno_venv, keystone_v2};
use crate::common::nova::HOST;
use crate::common::schema::{schema_diff, shape, MIGRATE_VERSION};
use crate::common::Outcome;
use crate::common::{server_env, Backend, TestDb, MYSQL_ADMIN};
use bm2ironic::core::demo::fixture::{root_uuid_of, Fixture};
use bm2ironic::core::source::pxe::{self, nova_baremetal_config};

/// An empty nova_bm as the fixture builds it (assets/nova_bm), version 10.
fn empty() -> Fixture {
    Fixture { schema_version: 10, nodes: vec![], interfaces: vec![] }
}

async fn dbsync_schema_is_the_asset(backend: Backend) {
    if juno_nova_venv().is_none() || (backend == Backend::MySql && server_env(MYSQL_ADMIN).is_none()) {
        return;
    }
    let juno = baremetal_dbsync(backend, "bmdbsync").await;
    let asset = TestDb::with_fixture(backend, "bmasset", &empty()).await.unwrap();
    let (j, a) = (shape(&juno, MIGRATE_VERSION).await, shape(&asset, MIGRATE_VERSION).await);
    assert!(j.len() > 40 && j.contains("version nova_bm 10"), "the schema was read: {j:#?}");
    let file = if backend == Backend::Sqlite { "sqlite" } else { "mysql" };
    let diff = schema_diff(&a, &j);
    assert!(
        diff.is_empty(),
        "assets/nova_bm/schema.{file}.sql is not what Juno's nova-baremetal-manage db sync makes:\n{diff}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_nova_bm_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_nova_bm_dbsync_schema_is_the_asset() {
    dbsync_schema_is_the_asset(Backend::MySql).await
}

/// The rows of nova_bm's two tables, every column as text, by id; timestamps as `set` or NULL (the
/// API writes its own clock), the node uuid and the deploy key as `set` or NULL (random ones).
async fn nova_bm_rows(db: &TestDb) -> Vec<String> {
    let t = |c: &str| format!("CASE WHEN {c} IS NULL THEN 'NULL' ELSE 'set' END");
    let s = |c: &str| format!("COALESCE(CAST({c} AS CHAR), 'NULL')");
    let node_cols = [
        "deleted",
        "cpus",
        "memory_mb",
        "local_gb",
        "pm_address",
        "pm_user",
        "pm_password",
        "service_host",
        "instance_uuid",
        "task_state",
        "terminal_port",
        "image_path",
        "pxe_config_path",
        "root_mb",
        "swap_mb",
        "instance_name",
        "ephemeral_mb",
        "preserve_ephemeral",
    ];
    // the deploy key is random: set or NULL
    let mut sel: Vec<String> =
        vec![s("id"), t("created_at"), t("updated_at"), t("deleted_at"), t("uuid"), t("deploy_key")];
    sel.extend(node_cols.iter().map(|c| s(c)));
    let mut names: Vec<&str> = vec!["id", "created_at", "updated_at", "deleted_at", "uuid", "deploy_key"];
    names.extend(node_cols);
    let mut out = Vec::new();
    for r in db.rows(&format!("SELECT {} FROM bm_nodes ORDER BY id", sel.join(", "))).await {
        for (n, v) in names.iter().zip(&r).skip(1) {
            out.push(format!("node {} {n}={v}", r[0]));
        }
    }
    let if_cols = ["bm_node_id", "address", "datapath_id", "port_no", "vif_uuid", "deleted"];
    let mut sel: Vec<String> = vec![s("id"), t("created_at"), t("updated_at"), t("deleted_at")];
    sel.extend(if_cols.iter().map(|c| s(c)));
    let mut names: Vec<&str> = vec!["id", "created_at", "updated_at", "deleted_at"];
    names.extend(if_cols);
    for r in db.rows(&format!("SELECT {} FROM bm_interfaces ORDER BY id", sel.join(", "))).await {
        for (n, v) in names.iter().zip(&r).skip(1) {
            out.push(format!("interface {} {n}={v}", r[0]));
        }
    }
    out
}

/// The node shapes the API test makes, as our fixture writes them: nodes 1 and 2 of
/// `Fixture::generated` (free, IPMI, two NICs each), and node 3 like them, deleted through the API
/// (soft-deleted, its interfaces gone).
fn fixture_shapes() -> Fixture {
    let mut f = Fixture::generated(2, 1);
    let mut n3 = f.nodes[1].clone();
    n3.id = 3;
    n3.uuid = Some("bbbbbbbb-0000-4000-8000-000000000003".into());
    n3.pm_password = Some(bm2ironic::core::db::secret::Secret::new("bmc-Secret-3"));
    n3.deleted_raw = Some(1);
    n3.deleted = true;
    n3.deleted_at = n3.updated_at;
    f.nodes.push(n3);
    f
}

/// The differences between our fixture's rows and nova baremetal's: (what, fixture, Juno).
fn differences(ours: &[String], juno: &[String]) -> Vec<String> {
    let a: std::collections::BTreeSet<&String> = ours.iter().collect();
    let b: std::collections::BTreeSet<&String> = juno.iter().collect();
    let mut d: Vec<String> = a.difference(&b).map(|l| format!("fixture: {l}")).collect();
    d.extend(b.difference(&a).map(|l| format!("juno:    {l}")));
    d
}

/// The fixture's deliberate differences from what nova baremetal's API writes (docs/mapping.md,
/// "The fixture against nova baremetal"): its nodes have been updated since they were created (as a
/// node a deploy touched has been), so that a swap of `created_at` and `updated_at` shows; a node only
/// ever created through the API has `updated_at` NULL (the real rows below carry that through the
/// migration).
const DELIBERATE: &[&str] = &[
    "fixture: node 1 updated_at=set",
    "fixture: node 2 updated_at=set",
    "fixture: node 3 updated_at=set",
    "juno:    node 1 updated_at=NULL",
    "juno:    node 2 updated_at=NULL",
    "juno:    node 3 updated_at=NULL",
];

/// Makes the node shapes through nova baremetal's API with Juno's `nova` (two NICs each: one with
/// `baremetal-node-create`, one with `baremetal-interface-add`), node 3 deleted by HTTP as the client
/// sends it; then records its answers.
async fn make_nodes_and_ask(host: &BaremetalHost) -> Oracle {
    let p = &host.plane;
    for id in 1..=3 {
        let pw = format!("bmc-Secret-{id}");
        let (mac0, mac1) = (format!("52:55:00:00:00:{id:02x}"), format!("52:55:01:00:00:{id:02x}"));
        let pm = ["--pm_address", "127.0.0.1", "--pm_user", "admin", "--pm_password", &pw];
        nova(p, &[&["baremetal-node-create"], &pm[..], &[HOST, "8", "16384", "500", &mac0]].concat());
        nova(p, &["baremetal-interface-add", &id.to_string(), &mac1]);
    }
    let base = format!("http://127.0.0.1:{}", p.port);
    let (status, body) = raw(&base, &p.keystone, Method::DELETE, "/3", None).await;
    assert_eq!(status, 202, "nova baremetal deletes node 3: {body}");
    let (status, list) = raw(&base, &p.keystone, Method::GET, "", None).await;
    assert_eq!(status, 200, "{list}");
    let (status, show1) = raw(&base, &p.keystone, Method::GET, "/1", None).await;
    assert_eq!(status, 200, "{show1}");
    // by its uuid: nova baremetal knows its nodes by integer only, and fails on anything else
    // ("invalid literal for int() with base 10" in its log)
    let uuid = show1["node"]["uuid"].as_str().unwrap();
    let (status, by_uuid) = raw(&base, &p.keystone, Method::GET, &format!("/{uuid}"), None).await;
    assert_eq!((status, by_uuid["computeFault"]["code"].as_i64()), (500, Some(500)), "{by_uuid}");
    let cli = [
        nova(p, &["baremetal-node-list"]),
        nova(p, &["baremetal-node-show", "1"]),
        nova(p, &["baremetal-interface-list", "1"]),
    ];
    Oracle { list, show1, cli }
}

/// Before the upgrade (#45): nodes and interfaces made by nova baremetal itself, through its own
/// `os-baremetal-nodes` API (Juno's control plane as a baremetal compute host was, Juno's `nova`),
/// are the rows our fixture writes for the same shapes, column by column, but for [`DELIBERATE`].
/// Then they are the stage of the proxy's three-way comparison (`proxy_answers_as_nova_baremetal`).
/// Mutations that fail it: a fixture column changed (e.g. `preserve_ephemeral` of a free node back to
/// false, the second NIC's `port_no` NULL), the CLI's defaults or the API's delete behaving otherwise.
#[tokio::test(flavor = "multi_thread")]
async fn nova_baremetal_api_writes_what_the_fixture_writes() {
    let Some(venv) = juno_venv() else { return };
    let Some(_) = juno_nova_venv() else { return };
    let Some(ks) = keystone_v2() else { return };
    let t0 = Instant::now();
    let host = BaremetalHost::start(ks).await;
    eprintln!("nova baremetal's control plane up after {:?}", t0.elapsed());
    let oracle = make_nodes_and_ask(&host).await;
    let ours = TestDb::with_fixture(Backend::Sqlite, "bmours", &fixture_shapes()).await.unwrap();
    let d = differences(&nova_bm_rows(&ours).await, &nova_bm_rows(&host.nova_bm).await);
    assert_eq!(d, DELIBERATE, "our fixture against the rows nova baremetal's API wrote");
    // its driver's compute_nodes rows: one per live node, as the Juno tests' Nova database has them
    let cn = "SELECT hypervisor_type, CAST(hypervisor_version AS TEXT), cpu_info, CAST(vcpus AS TEXT), CAST(memory_mb AS TEXT), CAST(local_gb AS TEXT) FROM compute_nodes WHERE deleted = 0";
    let rows = wait_rows(&host.nova, cn, 2, host.plane.log()).await;
    assert!(rows.iter().all(|r| r == &["baremetal", "1", "baremetal cpu", "8", "16384", "500"]), "{rows:?}");
    // and its services row as the Juno tests' Nova database has it (host, binary, topic, flags)
    let sql = "SELECT host, topic, CAST(disabled AS TEXT), CAST(deleted AS TEXT) FROM services WHERE \"binary\" = 'nova-compute'";
    assert_eq!(host.nova.rows(sql).await, [[HOST, "compute", "0", "0"]], "nova baremetal's nova-compute service");
    eprintln!("nova baremetal's rows compared after {:?}", t0.elapsed());
    proxy::proxy_answers_as_nova_baremetal(&venv, host, oracle, ks).await;
    eprintln!("juno_baremetal: {:?} in all", t0.elapsed());
}

/// Waits until `sql` gives `n` rows (90 s at most); the rows.
async fn wait_rows(db: &TestDb, sql: &str, n: usize, log: std::path::PathBuf) -> Vec<Vec<String>> {
    let t0 = Instant::now();
    loop {
        let rows = db.rows(sql).await;
        if rows.len() == n {
            return rows;
        }
        assert!(t0.elapsed() < Duration::from_secs(90), "{rows:?} after 90 s; log {}", log.display());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Juno's own functions write an instance's PXE config as its deploy left it: the PXE driver's
/// `get_tftp_image_info` (the paths) and `build_pxe_config` (the template; `deployment_id` 1, key
/// `KEY`), written by `bm_utils.write_to_file`, then the deploy helper's `switch_pxe_config`.
const JUNO_PXE_CONFIG: &str = r#"
import nova.cmd  # noqa: eventlet set up as every nova-* command has it
import sys
from oslo.config import cfg
from nova.virt.baremetal import pxe
from nova.virt.baremetal import utils as bm_utils
from nova.cmd import baremetal_deploy_helper as helper
root, inst, root_uuid, out = sys.argv[1:5]
cfg.CONF([], project='nova')
cfg.CONF.set_override('tftp_root', root, group='baremetal')
flavor = {'extra_specs': {'baremetal:deploy_kernel_id': 'dk', 'baremetal:deploy_ramdisk_id': 'dr'}}
info = pxe.get_tftp_image_info({'uuid': inst, 'kernel_id': 'k', 'ramdisk_id': 'r'}, flavor)
i = lambda k: info[k][1]
config = pxe.build_pxe_config(1, 'KEY', 'iqn-%s' % inst, i('deploy_kernel'), i('deploy_ramdisk'), i('kernel'),
                              i('ramdisk'), None)
bm_utils.write_to_file(out, config)
helper.switch_pxe_config(out, root_uuid)
# the node's columns the PXE driver writes at that deploy (activate_bootloader), for instance 3 of a
# compute host with state_path /var/lib/nova (the packages' setting) and Juno's default name template
import json
cfg.CONF.set_override('state_path', '/var/lib/nova')
instance = {'uuid': inst, 'name': cfg.CONF.instance_name_template % 3}
print(json.dumps({'pxe_config_path': pxe.get_pxe_config_file_path(instance),
                  'image_path': pxe.get_image_file_path(instance)}))
"#;

/// The PXE config nova baremetal left for a deployed instance (#45, (d) without a machine): what
/// Juno's own `build_pxe_config` and `switch_pxe_config` write, with the default `pxe_append_params`
/// (`nofb nomodeset vga=normal`), is byte for byte what `pxe::nova_baremetal_config` builds for the
/// fixtures' TFTP trees (no final newline, a blank at the end of the boot line), and the tool's parser
/// reads it: the root uuid and the extra arguments; and the fixture's instance nodes carry the
/// `pxe_config_path` and `image_path` Juno's PXE driver computes for their instance. Mutations that
/// fail it: the builder's final `\n` back; the fixture's `pxe_config_path` under the node's uuid
/// (as it was).
#[tokio::test(flavor = "multi_thread")]
async fn pxe_config_is_nova_baremetals() {
    let Some(venv) = juno_nova_venv() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (root, inst, root_uuid) = ("/tftpboot", "aaaaaaaa-0000-4000-8000-000000000003", root_uuid_of("x"));
    let file = dir.path().join("config");
    let out = Outcome::of(
        std::process::Command::new(venv.join("bin/python"))
            .args(["-c", JUNO_PXE_CONFIG, root, inst, &root_uuid])
            .arg(&file)
            .env("PYTHONWARNINGS", "ignore"),
    );
    assert!(out.success(), "{}", out.text());
    let juno = std::fs::read(&file).unwrap();
    let ours = nova_baremetal_config(root, inst, &root_uuid, "nofb nomodeset vga=normal");
    assert_eq!(String::from_utf8_lossy(&juno), ours, "Juno's config, then ours");
    assert!(juno.ends_with(b"ro nofb nomodeset vga=normal "), "no final newline, a blank at the end");
    // the fixture's node 3 (an instance) has the paths Juno's PXE driver gives that instance
    let paths: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or_default()).unwrap();
    let n3 = Fixture::generated(3, 1).nodes.remove(2);
    assert_eq!(n3.instance_uuid.as_deref(), Some(inst));
    assert_eq!(
        (n3.pxe_config_path.as_deref(), n3.image_path.as_deref()),
        (paths["pxe_config_path"].as_str(), paths["image_path"].as_str()),
        "the fixture's instance node against Juno's PXE driver"
    );
    let boot = pxe::parse(&String::from_utf8(juno).unwrap()).unwrap();
    assert_eq!(
        (boot.root_uuid.as_str(), boot.extra_args.join(" ")),
        (root_uuid.as_str(), "nofb nomodeset vga=normal".into())
    );
}
