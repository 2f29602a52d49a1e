//! A real Ironic (PyPI ironic==39.0.0, all-in-one, noauth, loopback) reads what `migrate --via db`
//! wrote: every node and port through GET /v1/nodes/detail and /v1/ports/detail, `verify
//! --ironic-url` passes, and Ironic can still create a node afterwards (ids and sequences sane).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use crate::common::ironic::{self, start_ironic, IronicOptions};
use crate::common::{bm, server_env, Backend, TestDb, IRONIC_VENV, STANDARD_RESOLUTIONS};
use bm2ironic::core::demo::fixture::Fixture;
use serde_json::Value;

async fn real_ironic_reads_every_migrated_node_and_port(backend: Backend) {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(src) = TestDb::with_fixture(backend, "src", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "api").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let run = |a: Vec<&str>| bm(a).logs(logs.path()).source(&src).target(&tgt).run();
    let mut a = vec!["plan", "--json"];
    a.extend(STANDARD_RESOLUTIONS);
    let out = run(a);
    assert!(out.success(), "{}", out.stderr);
    let plan: Value = serde_json::from_str(&out.stdout).unwrap();
    let expected: HashMap<String, &Value> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["action"] == "create")
        .map(|n| (n["uuid"].as_str().unwrap().to_string(), n))
        .collect();
    assert_eq!(expected.len(), 11);

    let mut a = vec!["migrate", "--yes"];
    a.extend(STANDARD_RESOLUTIONS);
    let out = run(a);
    assert!(out.success(), "{}", out.stderr);

    let ironic = start_ironic(IronicOptions::new(Path::new(&venv), &tgt.admin_url)).await;
    let nodes = ironic::get_ok(&ironic.base, "/v1/nodes/detail").await;
    let nodes = nodes["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), expected.len(), "every migrated node is listed by the API");
    for n in nodes {
        let uuid = n["uuid"].as_str().unwrap();
        let want = expected.get(uuid).unwrap_or_else(|| panic!("unexpected node {uuid}"));
        assert_eq!(n["provision_state"], want["provision_state"], "{uuid}");
        assert_eq!(n["driver"], "ipmi", "{uuid}");
        assert_eq!(n["maintenance"], want["maintenance"], "{uuid}");
        assert_eq!(n["properties"]["cpu_arch"], "x86_64", "{uuid}");
        assert_eq!(n["driver_info"]["deploy_kernel"], "file:///var/lib/ironic/deploy.kernel");
        if n["uuid"] != "bbbbbbbb-0000-4000-8000-000000000007" {
            assert_eq!(n["driver_info"]["ipmi_password"], "******", "{uuid}: the API masks it, so it is there");
        } else {
            assert!(n["driver_info"].get("ipmi_address").is_none(), "node 7 has no BMC in nova_bm");
        }
    }
    let by_uuid = |u: &str| nodes.iter().find(|n| n["uuid"] == u).unwrap();
    let n1 = by_uuid("bbbbbbbb-0000-4000-8000-000000000001");
    assert_eq!(n1["instance_uuid"], "aaaaaaaa-0000-4000-8000-000000000001");
    assert_eq!(n1["provision_state"], "active");
    assert_eq!(n1["properties"]["cpus"], 8);
    assert_eq!(n1["properties"]["memory_mb"], 16384);
    assert_eq!(n1["instance_info"]["root_gb"], 20);
    assert_eq!(by_uuid("bbbbbbbb-0000-4000-8000-000000000002")["provision_state"], "available");
    let n4 = by_uuid("bbbbbbbb-0000-4000-8000-000000000004");
    assert_eq!((n4["provision_state"].as_str(), n4["maintenance"].as_bool()), (Some("active"), Some(true)));

    let ports = ironic::get_ok(&ironic.base, "/v1/ports/detail").await;
    let ports = ports["ports"].as_array().unwrap();
    let got: BTreeSet<String> = ports.iter().map(|p| p["address"].as_str().unwrap().to_string()).collect();
    let want: BTreeSet<String> = expected
        .values()
        .flat_map(|n| n["ports"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got, want, "every port, MACs normalised");
    assert!(got.contains("52:54:00:aa:bb:11"));
    let vif_port = ports.iter().find(|p| p["address"] == "52:54:00:00:00:01").unwrap();
    assert_eq!(vif_port["internal_info"]["tenant_vif_port_id"], "cccccccc-0000-4000-8000-000000000001");

    // verify through the API too
    let out = run(vec!["verify", "--ironic-url", &ironic.base]);
    assert!(out.success(), "{}", out.text());
    assert!(out.stdout.contains("and the Ironic API: 0 difference(s)"));

    // a row the database accepts but the API cannot read is caught by verify through the API only
    tgt.exec("UPDATE nodes SET version = NULL WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'").await;
    let verify = |api: bool| match api {
        true => run(vec!["verify", "--ironic-url", &ironic.base]),
        false => run(vec!["verify"]),
    };
    assert_eq!(verify(false).code, 0, "the database alone sees nothing wrong");
    let out = verify(true);
    assert_eq!(out.code, 4, "{}", out.stdout);
    assert!(out.stdout.contains("HTTP 500"), "{}", out.stdout);
    tgt.exec("UPDATE nodes SET version = '1.44' WHERE uuid = 'bbbbbbbb-0000-4000-8000-000000000002'").await;

    // Ironic can still enroll a node: ids and sequences were left to the database
    let r = reqwest::Client::new()
        .post(format!("{}/v1/nodes", ironic.base))
        .header("X-OpenStack-Ironic-API-Version", "latest")
        .json(&serde_json::json!({"driver": "fake-hardware", "name": "enrolled-after-migration"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap_or_default());
}

#[tokio::test(flavor = "multi_thread")]
async fn mysql_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::MySql).await
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::Postgres).await
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_real_ironic_reads_every_migrated_node_and_port() {
    real_ironic_reads_every_migrated_node_and_port(Backend::Sqlite).await
}
