//! `verify` of an API run: Ironic's own view of every node the run set out to create, against the
//! plan it recorded (provision state, instance, driver and its settings, maintenance, properties,
//! instance_info, ports and their VIFs), and against nova_bm when it is given.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::core::ironic::api::{nodes, ApiError, IronicApi};
use crate::core::migrate::run::record::RunRecord;
use crate::core::migrate::verify::{check_source, driver_info_matches, record_differences, Diffs, VerifyReport};
use crate::core::source::model::{Inventory, InventoryNode};

fn s_of(v: &Value) -> Option<String> {
    v.as_str().map(String::from)
}

/// The keys of `want` as `found` has them (Ironic adds keys of its own).
fn subset(want: &Value, found: &Value) -> Value {
    match want.as_object() {
        Some(m) => Value::Object(m.keys().map(|k| (k.clone(), found[k].clone())).collect()),
        None => found.clone(),
    }
}

pub async fn verify_api(
    api: &IronicApi,
    run: &RunRecord,
    source: Option<&Inventory>,
) -> Result<VerifyReport, ApiError> {
    let by_id: HashMap<i64, &InventoryNode> =
        source.map(|s| s.nodes.iter().map(|n| (n.node.id, n)).collect()).unwrap_or_default();
    let mut out = Vec::new();
    let mut ports_checked = 0;
    let mut present: BTreeSet<String> = BTreeSet::new();
    for w in &run.written {
        let mut d = Diffs { out: &mut out, w, against: "api" };
        let s = |v: &Value| v.as_str().map(String::from);
        match nodes::find(api, &w.uuid).await? {
            None => d.missing("node", "Ironic has no such node (404)".into()),
            Some(v) => {
                present.insert(w.uuid.clone());
                d.check("provision_state", &w.provision_state, &s(&v["provision_state"]));
                d.check("instance_uuid", &w.instance_uuid, &s(&v["instance_uuid"]));
                d.check("driver", &Some(w.driver.clone()), &s(&v["driver"]));
                d.check("maintenance", &w.maintenance, &v["maintenance"].as_bool().unwrap_or(false));
                d.check("properties", &w.properties, &subset(&w.properties, &v["properties"]));
                d.check("instance_info", &w.instance_info, &subset(&w.instance_info, &v["instance_info"]));
                for k in driver_info_matches(&w.driver_info, &v["driver_info"]) {
                    d.check(
                        &format!("driver_info.{k}"),
                        &w.driver_info.get(&k).cloned(),
                        &v["driver_info"].get(&k).cloned(),
                    );
                }
                let found = nodes::ports(api, &w.uuid).await?;
                let addrs: BTreeSet<String> = found.iter().filter_map(|p| s(&p["address"])).collect();
                let want: BTreeSet<String> = w.ports.iter().map(|p| p.address.clone()).collect();
                ports_checked += want.len();
                d.check("ports", &want, &addrs);
                for p in w.ports.iter().filter(|p| p.vif.is_some()) {
                    // attached (internal_info, by a network interface) or as recorded by the load (extra)
                    let vif = found.iter().find(|f| f["address"].as_str() == Some(p.address.as_str())).and_then(|f| {
                        s(&f["internal_info"]["tenant_vif_port_id"]).or_else(|| s(&f["extra"]["vif_port_id"]))
                    });
                    d.check(&format!("port {} vif", p.address), &p.vif, &vif);
                }
            }
        }
        if source.is_some() {
            check_source(&mut out, w, by_id.get(&w.nova_bm_id).copied());
        }
    }
    let marked: BTreeSet<String> =
        nodes::marked_by(api, &run.id).await?.iter().filter_map(|v| s_of(&v["uuid"])).collect();
    out.extend(record_differences(run, &marked, |u| present.contains(u), "api"));
    tracing::info!(run = %run.id, nodes = run.written.len(), ports = ports_checked, differences = out.len(), "API run verified");
    Ok(VerifyReport {
        run_id: run.id.to_string(),
        nodes_checked: run.written.len(),
        ports_checked,
        api_checked: true,
        database_checked: false,
        source_checked: source.is_some(),
        differences: out,
    })
}
