//! `verify`: after a load, compares what a run wrote with the Ironic database (every field we set,
//! every port) and with the nova_bm source, and, given the API, asks Ironic itself for every node
//! and port (this is what catches rows the database accepts but the API cannot read).

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::core::db::{Cast, Db, DbError, Dialect};
use crate::core::ironic::api::IronicApi;
use crate::core::migrate::plan::size_is_possible;
use crate::core::migrate::run::record::{RunRecord, WrittenNode};
use crate::core::source::model::{Inventory, InventoryNode};

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub uuid: String,
    pub nova_bm_id: i64,
    /// "database", "source" or "api"
    pub against: &'static str,
    pub field: String,
    pub expected: String,
    pub found: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub run_id: String,
    pub nodes_checked: usize,
    pub ports_checked: usize,
    pub api_checked: bool,
    /// the Ironic database was read (a SQL run); an API run is checked through the API only
    pub database_checked: bool,
    /// nova_bm was read and compared
    pub source_checked: bool,
    pub differences: Vec<Difference>,
}

impl VerifyReport {
    /// What the run was compared with, in words: "the database, nova_bm and the Ironic API".
    pub fn against(&self) -> String {
        let parts: Vec<&str> = [
            (self.database_checked, "the database"),
            (self.source_checked, "nova_bm"),
            (self.api_checked, "the Ironic API"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        match parts.as_slice() {
            [] => "nothing".into(),
            [one] => one.to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        }
    }
}

struct TargetNode {
    instance_uuid: Option<String>,
    provision_state: Option<String>,
    driver: Option<String>,
    driver_info: Value,
    properties: Value,
    instance_info: Value,
    maintenance: bool,
    /// read only when the run wrote one (Juno has no such column)
    deploy_interface: Option<String>,
}

fn parse(s: Option<String>) -> Value {
    s.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null)
}

/// The target's nodes of `marks` (an IN list of uuids): what a run sets (`deploy_interface` when
/// `interfaces`: the run wrote one, so the column exists).
fn nodes_sql(d: Dialect, marks: &str, interfaces: bool) -> String {
    let text = |c| d.cast(Cast::Text, c);
    let deploy = if interfaces {
        format!("{} AS deploy_interface", text("deploy_interface"))
    } else {
        format!("{} AS deploy_interface", text("NULL"))
    };
    format!(
        "SELECT {}, {}, {}, {}, {}, {}, {}, {}, {deploy} FROM nodes WHERE uuid IN {marks}",
        text("uuid"),
        text("instance_uuid"),
        text("provision_state"),
        text("driver"),
        text("driver_info"),
        text("properties"),
        text("instance_info"),
        d.flag_or_false("maintenance"),
    )
}

/// The MACs of the ports of the nodes of `marks` (an IN list of uuids).
fn ports_sql(d: Dialect, marks: &str) -> String {
    format!(
        "SELECT {} AS address, {} AS node_uuid FROM ports p JOIN nodes n ON p.node_id = n.id WHERE n.uuid IN {marks}",
        d.cast(Cast::Text, "p.address"),
        d.cast(Cast::Text, "n.uuid"),
    )
}

/// The target's rows of these nodes (by uuid) and the MACs of their ports.
async fn read_nodes(
    db: &Db,
    uuids: &[String],
    interfaces: bool,
) -> Result<(HashMap<String, TargetNode>, HashMap<String, BTreeSet<String>>), DbError> {
    let d = db.dialect();
    let nodes = db
        .fetch_map_in(
            uuids,
            |m| nodes_sql(d, m, interfaces),
            |r| {
                Ok((
                    r.string("uuid")?,
                    TargetNode {
                        instance_uuid: r.opt_string("instance_uuid")?,
                        provision_state: r.opt_string("provision_state")?,
                        driver: r.opt_string("driver")?,
                        driver_info: parse(r.opt_string("driver_info")?),
                        properties: parse(r.opt_string("properties")?),
                        instance_info: parse(r.opt_string("instance_info")?),
                        maintenance: r.get::<i64, _>("maintenance")? != 0,
                        deploy_interface: r.opt_string("deploy_interface")?,
                    },
                ))
            },
        )
        .await?
        .into_iter()
        .collect();
    let mut ports: HashMap<String, BTreeSet<String>> = HashMap::new();
    let rows =
        db.fetch_map_in(uuids, |m| ports_sql(d, m), |r| Ok((r.string("node_uuid")?, r.opt_string("address")?))).await?;
    for (n, a) in rows {
        ports.entry(n).or_default().insert(a.unwrap_or_default());
    }
    Ok((nodes, ports))
}

fn show(v: &impl Serialize) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

pub(crate) struct Diffs<'a> {
    pub(crate) out: &'a mut Vec<Difference>,
    pub(crate) w: &'a WrittenNode,
    pub(crate) against: &'static str,
}

impl Diffs<'_> {
    pub(crate) fn check<T: PartialEq + Serialize>(&mut self, field: &str, expected: &T, found: &T) {
        if expected != found {
            self.out.push(Difference {
                uuid: self.w.uuid.clone(),
                nova_bm_id: self.w.nova_bm_id,
                against: self.against,
                field: field.into(),
                expected: show(expected),
                found: show(found),
            });
        }
    }
    pub(crate) fn missing(&mut self, field: &str, found: String) {
        self.out.push(Difference {
            uuid: self.w.uuid.clone(),
            nova_bm_id: self.w.nova_bm_id,
            against: self.against,
            field: field.into(),
            expected: "present".into(),
            found,
        });
    }
}

/// The keys of the JSON object we wrote whose value is gone or changed in `found`. Keys Ironic adds
/// itself (`properties.vendor` after its first power sync, capabilities after inspection) are not
/// differences: what we wrote must still be there, not only what we wrote.
fn written_keys_changed(written: &Value, found: &Value) -> Vec<String> {
    match written.as_object() {
        Some(m) => m.iter().filter(|(k, v)| found.get(k.as_str()) != Some(*v)).map(|(k, _)| k.clone()).collect(),
        None => {
            if written == found {
                vec![]
            } else {
                vec![String::new()]
            }
        }
    }
}

impl Diffs<'_> {
    /// `field` (a JSON object) key by key: only what we wrote is compared.
    fn check_object(&mut self, field: &str, written: &Value, found: &Value) {
        for k in written_keys_changed(written, found) {
            let name = if k.is_empty() { field.to_string() } else { format!("{field}.{k}") };
            let (e, f) =
                if k.is_empty() { (written.clone(), found.clone()) } else { (written[&k].clone(), found[&k].clone()) };
            self.check(&name, &e, &f);
        }
    }
}

/// driver_info as recorded ("***" for secrets) against the target's (a secret must be non-empty).
pub(crate) fn driver_info_matches(recorded: &Value, found: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    if let Some(m) = recorded.as_object() {
        for (k, v) in m {
            let f = found.get(k);
            let ok = if v == "***" {
                f.and_then(|x| x.as_str()).is_some_and(|s| !s.is_empty() && s != "***")
                    || f.is_some_and(|x| x == "******")
            } else {
                f == Some(v)
            };
            if !ok {
                bad.push(k.clone());
            }
        }
    }
    bad
}

/// The recorded node `w` against its nova_bm row `src` (None: the row is gone).
pub(crate) fn check_source(out: &mut Vec<Difference>, w: &WrittenNode, src: Option<&InventoryNode>) {
    let mut d = Diffs { out, w, against: "source" };
    match src {
        None => d.missing("nova_bm node", "no longer in nova_bm".into()),
        Some(src) => {
            let n = &src.node;
            d.check("uuid", &Some(w.uuid.clone()), &n.uuid.clone().or(Some(w.uuid.clone())));
            for (k, v) in [("cpus", n.cpus), ("memory_mb", n.memory_mb), ("local_gb", n.local_gb)] {
                let Some(v) = v else { continue };
                let found = w.properties.get(k).cloned();
                if size_is_possible(v) {
                    d.check(&format!("properties.{k}"), &Some(serde_json::json!(v)), &found);
                } else if let Some(found) = found {
                    // `invalid-size` leaves an impossible value out on purpose (the node goes to
                    // maintenance without it): what is a difference is finding one there
                    d.out.push(Difference {
                        uuid: w.uuid.clone(),
                        nova_bm_id: w.nova_bm_id,
                        against: "source",
                        field: format!("properties.{k}"),
                        expected: format!("left out (nova_bm holds the impossible value {v}: invalid-size)"),
                        found: show(&found),
                    });
                }
            }
            if w.instance_uuid.is_some() {
                d.check("instance_uuid", &n.instance_uuid, &w.instance_uuid);
            }
            let src_macs: BTreeSet<String> = src
                .interfaces
                .iter()
                .filter(|i| !i.deleted)
                .filter_map(|i| i.address_normalized.map(|m| m.to_string()))
                .collect();
            for p in &w.ports {
                if !src_macs.contains(&p.address) {
                    d.check("port", &"a MAC of this nova_bm node".to_string(), &p.address);
                }
            }
        }
    }
}

/// The record against Ironic's markers: a row of the record that does not read, a node whose marker
/// names this run but which the record lacks, and a recorded node Ironic holds whose marker does
/// not name this run (another run's, or changed by hand). `marked`: the uuids whose marker names
/// the run; `present`: whether Ironic holds a recorded uuid.
pub(crate) fn record_differences(
    run: &RunRecord,
    marked: &BTreeSet<String>,
    present: impl Fn(&str) -> bool,
    against: &'static str,
) -> Vec<Difference> {
    let mut out: Vec<Difference> = run
        .unreadable
        .iter()
        .map(|u| Difference {
            uuid: "-".into(),
            nova_bm_id: 0,
            against: "record",
            field: "record row".into(),
            expected: "readable".into(),
            found: u.to_string(),
        })
        .collect();
    let recorded: BTreeSet<&str> = run.written.iter().map(|w| w.uuid.as_str()).collect();
    for m in marked.iter().filter(|m| !recorded.contains(m.as_str())) {
        out.push(Difference {
            uuid: m.clone(),
            nova_bm_id: 0,
            against,
            field: "run marker".into(),
            expected: "not marked as this run's, or listed in its record".into(),
            found: format!("marked as run {}'s, missing from its record", run.id),
        });
    }
    for w in run.written.iter().filter(|w| present(&w.uuid) && !marked.contains(&w.uuid)) {
        out.push(Difference {
            uuid: w.uuid.clone(),
            nova_bm_id: w.nova_bm_id,
            against,
            field: "run marker".into(),
            expected: format!("run {}", run.id),
            found: "another run's marker, or none".into(),
        });
    }
    out
}

pub async fn verify(
    db: &Db,
    run: &RunRecord,
    source: &Inventory,
    api: Option<&IronicApi>,
) -> Result<VerifyReport, DbError> {
    let marked: BTreeSet<String> = {
        let mut tx = db.begin().await?;
        let m = crate::core::migrate::rollback::marked_nodes(&mut tx, &run.id, false).await;
        let _ = tx.rollback().await;
        m?.into_iter().map(|m| m.uuid).collect()
    };
    let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
    let interfaces = run.written.iter().any(|w| w.deploy_interface.is_some());
    let (nodes, ports) = read_nodes(db, &uuids, interfaces).await?;
    let by_id: HashMap<i64, &InventoryNode> = source.nodes.iter().map(|n| (n.node.id, n)).collect();
    let mut out = Vec::new();
    let mut ports_checked = 0;
    for w in &run.written {
        let expected_ports: BTreeSet<String> = w.ports.iter().map(|p| p.address.clone()).collect();
        ports_checked += expected_ports.len();
        let mut d = Diffs { out: &mut out, w, against: "database" };
        match nodes.get(&w.uuid) {
            None => d.missing("node", "missing in the Ironic database".into()),
            Some(t) => {
                d.check("provision_state", &w.provision_state, &t.provision_state);
                d.check("instance_uuid", &w.instance_uuid, &t.instance_uuid);
                d.check("driver", &Some(w.driver.clone()), &t.driver);
                d.check("maintenance", &w.maintenance, &t.maintenance);
                d.check_object("properties", &w.properties, &t.properties);
                // with the next boot's kernel, ramdisk and ramdisk_kernel_arguments
                d.check_object("instance_info", &w.instance_info, &t.instance_info);
                if w.deploy_interface.is_some() {
                    d.check("deploy_interface", &w.deploy_interface, &t.deploy_interface);
                }
                for k in driver_info_matches(&w.driver_info, &t.driver_info) {
                    d.check(
                        &format!("driver_info.{k}"),
                        &w.driver_info.get(&k).cloned(),
                        &t.driver_info.get(&k).map(|_| Value::String("(differs)".into())),
                    );
                }
                let found = ports.get(&w.uuid).cloned().unwrap_or_default();
                d.check("ports", &expected_ports, &found);
            }
        }
        check_source(&mut out, w, by_id.get(&w.nova_bm_id).copied());
        if let Some(api) = api {
            let mut d = Diffs { out: &mut out, w, against: "api" };
            match api.node(&w.uuid).await {
                Err(e) => d.missing("node", e.to_string()),
                Ok(v) => {
                    d.check("provision_state", &w.provision_state, &v["provision_state"].as_str().map(String::from));
                    d.check("driver", &Some(w.driver.clone()), &v["driver"].as_str().map(String::from));
                    d.check("instance_uuid", &w.instance_uuid, &v["instance_uuid"].as_str().map(String::from));
                    d.check("maintenance", &w.maintenance, &v["maintenance"].as_bool().unwrap_or(false));
                    d.check_object("properties", &w.properties, &v["properties"]);
                    d.check_object("instance_info", &w.instance_info, &v["instance_info"]);
                    if w.deploy_interface.is_some() {
                        let found = v["deploy_interface"].as_str().map(String::from);
                        d.check("deploy_interface", &w.deploy_interface, &found);
                    }
                }
            }
            match api.node_port_addresses(&w.uuid).await {
                Err(e) => d.missing("ports", e.to_string()),
                Ok(a) => d.check("ports", &expected_ports, &a.into_iter().collect::<BTreeSet<_>>()),
            }
        }
    }
    out.extend(record_differences(run, &marked, |u| nodes.contains_key(u), "database"));
    tracing::info!(run = %run.id, nodes = run.written.len(), ports = ports_checked, differences = out.len(), api = api.is_some(), "verify finished");
    Ok(VerifyReport {
        run_id: run.id.to_string(),
        nodes_checked: run.written.len(),
        ports_checked,
        api_checked: api.is_some(),
        database_checked: true,
        source_checked: true,
        differences: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_ironic_adds_are_not_differences_but_changed_ones_are() {
        let wrote = json!({"cpus": 8, "cpu_arch": "x86_64"});
        assert!(written_keys_changed(&wrote, &json!({"cpus": 8, "cpu_arch": "x86_64", "vendor": "unknown"})).is_empty());
        assert_eq!(written_keys_changed(&wrote, &json!({"cpus": 4, "cpu_arch": "x86_64"})), vec!["cpus".to_string()]);
        assert_eq!(written_keys_changed(&wrote, &json!({"cpus": 8})), vec!["cpu_arch".to_string()]);
    }
}
