//! The rows a SQL load writes and how many go in one statement: the columns and values of Ironic's
//! `nodes` and `ports` for the target's schema, the batches of nodes, and the size of the whole
//! write set (for Galera's limits).

use serde_json::Value;

use crate::core::db::galera::row_bytes;
use crate::core::db::sql::{statement_bytes, Val};
use crate::core::ironic::json::to_db_text;
use crate::core::ironic::marker;
use crate::core::ironic::target::{TargetKind, TargetSchema};
use crate::core::migrate::plan::{IronicNode, IronicPort, NodePlan, Plan, Rows};
use crate::core::migrate::run::record::written;

/// Nodes per multi-row INSERT (and per progress step) at most: fewer when their rows would pass
/// `STATEMENT_BYTES` or the server's limit (`Db::max_statement_bytes`).
pub const BATCH: usize = 1000;
/// Bytes per statement at most, whatever the server allows (a MySQL/MariaDB server's
/// `max_allowed_packet` lowers it): larger statements load no faster.
pub(super) const STATEMENT_BYTES: usize = 2 * 1024 * 1024;
/// Values one statement may bind (PostgreSQL's protocol counts them in 16 bits).
pub(super) const BIND_LIMIT: usize = 65_535;

/// JSON for a TEXT column, written the way Ironic writes it (non-ASCII escaped).
fn json_text(v: &Value) -> Val {
    Val::Text(Some(to_db_text(v)))
}

const MODERN_EMPTY_JSON_NODE_COLUMNS: &[&str] = &[
    "driver_internal_info",
    "clean_step",
    "deploy_step",
    "raid_config",
    "target_raid_config",
    "network_data",
    "service_step",
];

/// Columns and values of the node INSERT for this schema.
pub(super) fn node_columns(schema: &TargetSchema) -> Vec<&'static str> {
    let mut cols = vec![
        "uuid",
        "instance_uuid",
        "driver",
        "driver_info",
        "properties",
        "instance_info",
        "provision_state",
        "power_state",
        "maintenance",
        "console_enabled",
        "extra",
        "created_at",
        "updated_at",
    ];
    if schema.kind == TargetKind::Modern {
        cols.extend(["maintenance_reason", "resource_class", "conductor_group", "protected", "version"]);
        if schema.has_node_column("instance_name") {
            cols.push("instance_name");
        }
        // NULL (Ironic's default) unless the instance's next boot was learned: `ramdisk` / `pxe`
        cols.extend(["deploy_interface", "boot_interface"].into_iter().filter(|c| schema.has_node_column(c)));
        cols.extend(MODERN_EMPTY_JSON_NODE_COLUMNS.iter().copied().filter(|c| schema.has_node_column(c)));
    }
    cols
}

pub(super) fn node_values(schema: &TargetSchema, cols: &[&str], n: &IronicNode, run_id: &str) -> Vec<Val> {
    let mut extra = n.extra();
    marker::set_run(&mut extra, n.kind == TargetKind::Juno, run_id);
    cols.iter()
        .map(|c| match *c {
            "uuid" => Val::Text(Some(n.uuid.clone())),
            "instance_uuid" => Val::Text(n.instance_uuid.clone()),
            "instance_name" => Val::Text(n.instance_name.clone()),
            "driver" => Val::Text(Some(n.driver.clone())),
            "driver_info" => json_text(&n.driver_info.expose_json()),
            "properties" => json_text(&n.properties),
            "instance_info" => json_text(&n.instance_info),
            "provision_state" => Val::Text(n.provision_state.clone()),
            "power_state" => Val::Text(n.power_state.clone()),
            "maintenance" => Val::Bool(Some(n.maintenance)),
            "console_enabled" => Val::Bool(Some(false)),
            "extra" => json_text(&extra),
            "created_at" => Val::Time(n.created_at),
            "updated_at" => Val::Time(n.updated_at),
            "maintenance_reason" => Val::Text(n.maintenance_reason.clone()),
            "resource_class" => Val::Text(n.resource_class.clone()),
            "deploy_interface" => Val::Text(n.deploy_interface.clone()),
            "boot_interface" => Val::Text(n.boot_interface.clone()),
            "conductor_group" => Val::Text(Some(String::new())),
            "protected" => Val::Bool(Some(false)),
            "version" => Val::Text(schema.node_version.clone()),
            _ => Val::Text(Some("{}".into())), // the empty JSON columns
        })
        .collect()
}

pub(super) fn port_columns(schema: &TargetSchema) -> Vec<&'static str> {
    let mut cols = vec!["uuid", "address", "node_id", "extra", "created_at", "updated_at"];
    if schema.kind == TargetKind::Modern {
        cols.extend(["internal_info", "pxe_enabled", "version"]);
        if schema.has_port_column("local_link_connection") {
            cols.push("local_link_connection");
        }
    }
    cols
}

pub(super) fn port_values(schema: &TargetSchema, cols: &[&str], p: &IronicPort, node_id: i64) -> Vec<Val> {
    cols.iter()
        .map(|c| match *c {
            "uuid" => Val::Text(Some(p.uuid.clone())),
            "address" => Val::Text(Some(p.address.clone())),
            "node_id" => Val::Int(Some(node_id)),
            "extra" => json_text(&p.extra()),
            "created_at" => Val::Time(p.created_at),
            "updated_at" => Val::Time(p.updated_at),
            "internal_info" => json_text(&p.internal_info()),
            "pxe_enabled" => Val::Bool(Some(p.pxe_enabled)),
            "version" => Val::Text(schema.port_version.clone()),
            _ => Val::Text(Some("{}".into())),
        })
        .collect()
}

/// Rows and (roughly) bytes of the load's one transaction: the nodes, their ports, the run record.
pub(super) fn write_set_size(
    schema: &TargetSchema,
    run_id: &str,
    plan: &Plan,
    to_write: &[&NodePlan],
    ncols: &[&str],
    pcols: &[&str],
) -> (u64, u64) {
    let (mut rows, mut bytes) = (1u64, 1024u64);
    for n in to_write {
        if n.replaces.is_some() {
            rows += 1;
        }
        let Some(r) = plan.rows(n) else { continue };
        rows += 2; // the node and its row in the run record
        bytes += row_bytes(&node_values(schema, ncols, &r.node, run_id));
        bytes += serde_json::to_string(&written(&r.node, &r.ports, n.nova_bm_id, n.replaces)).map_or(0, |t| t.len())
            as u64
            + 64;
        for p in &r.ports {
            rows += 1;
            bytes += row_bytes(&port_values(schema, pcols, p, 0));
        }
    }
    (rows, bytes)
}

/// How many of `rows` (from the first) one INSERT takes: at most `BATCH * 2` rows, `BIND_LIMIT`
/// values and `budget` bytes, and always at least one row.
pub(super) fn rows_within(rows: &[Vec<Val>], ncols: usize, budget: usize) -> usize {
    let max_rows = (BATCH * 2).min(BIND_LIMIT / ncols.max(1));
    let mut bytes = 200;
    for (k, r) in rows.iter().enumerate() {
        bytes += statement_bytes(", ()", r) + 3 * ncols;
        if k >= max_rows || (k > 0 && bytes > budget) {
            return k;
        }
    }
    rows.len()
}

/// The next batch of nodes (see [`node_batch`]).
pub(super) struct NodeBatch<'p> {
    /// how many of the nodes given it takes (at least one)
    pub count: usize,
    /// their rows, built here (a node the plan writes no rows for has none)
    pub built: Vec<(&'p NodePlan, Rows)>,
    /// the INSERT rows of their nodes
    pub rows: Vec<Vec<Val>>,
}

/// The next batch of nodes: at most `BATCH`, their rows within `budget` bytes and `BIND_LIMIT`
/// values, at least one.
pub(super) fn node_batch<'p>(
    plan: &Plan,
    nodes: &[&'p NodePlan],
    schema: &TargetSchema,
    cols: &[&str],
    run_id: &str,
    budget: usize,
) -> NodeBatch<'p> {
    let max_rows = BATCH.min(BIND_LIMIT / cols.len().max(1));
    let (mut built, mut rows, mut bytes) = (Vec::new(), Vec::new(), 200usize);
    for (k, n) in nodes.iter().enumerate() {
        if k >= max_rows {
            return NodeBatch { count: k, built, rows };
        }
        if let Some(r) = plan.rows(n) {
            let row = node_values(schema, cols, &r.node, run_id);
            bytes += statement_bytes(", ()", &row) + 3 * cols.len();
            if k > 0 && bytes > budget {
                return NodeBatch { count: k, built, rows };
            }
            rows.push(row);
            built.push((*n, r));
        }
    }
    NodeBatch { count: nodes.len(), built, rows }
}
