//! The Ironic database as it is: which schema (modern or Juno, from the alembic head and the columns
//! present, never a guess), which object versions to write, and what nodes and ports already exist.

use std::collections::BTreeSet;

use chrono::NaiveDateTime;
use serde::Serialize;

use super::marker;
use crate::core::db::sql::Val;
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Cast, Db, DbError, Dialect};

/// Alembic head of Ironic Juno (2014.2).
pub const JUNO_HEAD: &str = "487deb87cc9d";

/// Object versions a modern release accepts, by alembic head (used when the target has no rows yet).
pub const KNOWN_MODERN_HEADS: &[(&str, &str, &str, &str)] = &[
    // (alembic head, release, Node version, Port version)
    ("9fb44677ef15", "39.0.0", "1.44", "1.16"),
];

const JUNO_NODE_COLUMNS: &[&str] = &[
    "id",
    "uuid",
    "instance_uuid",
    "chassis_id",
    "power_state",
    "target_power_state",
    "provision_state",
    "target_provision_state",
    "provision_updated_at",
    "last_error",
    "instance_info",
    "properties",
    "driver",
    "driver_info",
    "reservation",
    "conductor_affinity",
    "maintenance",
    "console_enabled",
    "extra",
    "created_at",
    "updated_at",
];
const MODERN_NODE_MARKERS: &[&str] =
    &["version", "conductor_group", "resource_class", "maintenance_reason", "protected"];
const MODERN_PORT_MARKERS: &[&str] = &["internal_info", "pxe_enabled", "version"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Modern,
    Juno,
}

#[derive(Debug, Clone, Serialize)]
pub struct TargetSchema {
    pub kind: TargetKind,
    /// alembic head
    pub schema: String,
    #[serde(skip)]
    pub node_columns: BTreeSet<String>,
    #[serde(skip)]
    pub port_columns: BTreeSet<String>,
    /// Object versions to write (modern only).
    pub node_version: Option<String>,
    pub port_version: Option<String>,
    /// Where the versions came from: "existing rows", "known head", "--object-version".
    pub versions_from: Option<String>,
}

impl TargetSchema {
    /// A schema description without a database (pure planning in tests and previews): Ironic 39.0.0
    /// for `Modern`, head 487deb87cc9d for `Juno`.
    pub fn known(kind: TargetKind) -> TargetSchema {
        let (schema, nodes, ports, nv, pv): (&str, Vec<&str>, Vec<&str>, Option<&str>, Option<&str>) = match kind {
            TargetKind::Juno => (
                JUNO_HEAD,
                JUNO_NODE_COLUMNS.to_vec(),
                vec!["id", "uuid", "address", "node_id", "extra", "created_at", "updated_at"],
                None,
                None,
            ),
            TargetKind::Modern => {
                let mut n = JUNO_NODE_COLUMNS.to_vec();
                n.extend(MODERN_NODE_MARKERS);
                n.extend([
                    "instance_name",
                    "deploy_interface",
                    "boot_interface",
                    "driver_internal_info",
                    "clean_step",
                    "deploy_step",
                    "raid_config",
                    "target_raid_config",
                    "network_data",
                    "service_step",
                ]);
                let mut p = vec![
                    "id",
                    "uuid",
                    "address",
                    "node_id",
                    "extra",
                    "created_at",
                    "updated_at",
                    "local_link_connection",
                ];
                p.extend(MODERN_PORT_MARKERS);
                ("9fb44677ef15", n, p, Some("1.44"), Some("1.16"))
            }
        };
        TargetSchema {
            kind,
            schema: schema.into(),
            node_columns: nodes.into_iter().map(String::from).collect(),
            port_columns: ports.into_iter().map(String::from).collect(),
            node_version: nv.map(String::from),
            port_version: pv.map(String::from),
            versions_from: Some("known head".into()),
        }
    }

    pub fn has_node_column(&self, c: &str) -> bool {
        self.node_columns.contains(c)
    }
    pub fn has_port_column(&self, c: &str) -> bool {
        self.port_columns.contains(c)
    }
}

/// A node already in Ironic.
#[derive(Debug, Clone, Serialize)]
pub struct ExistingNode {
    pub id: i64,
    pub uuid: Option<String>,
    pub instance_uuid: Option<String>,
    pub provision_state: Option<String>,
    pub maintenance: bool,
    pub reservation: Option<String>,
    pub extra: serde_json::Value,
    pub updated_at: Option<NaiveDateTime>,
    /// whether the run its marker names is recorded, finished, where runs are kept for this target
    /// (None: not looked up, as in the read-only browse)
    pub run_finished: Option<bool>,
}

impl TargetState {
    /// Marks each node written by bm2ironic with whether its run is recorded as finished here
    /// (`finished`: the ids of the runs the run store holds as committed).
    pub fn mark_runs(&mut self, finished: &std::collections::HashSet<String>) {
        for n in &mut self.nodes {
            n.run_finished = n.migrated_by_run().map(|r| finished.contains(r));
        }
    }
}

impl ExistingNode {
    /// The nova_bm id of our marker, when this node came from bm2ironic.
    pub fn migrated_from(&self) -> Option<i64> {
        marker::nova_bm_id(&self.extra)
    }
    /// The run that wrote it (the marker in either form, modern or Juno's flat one).
    pub fn migrated_by_run(&self) -> Option<&str> {
        marker::run(&self.extra)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ExistingPort {
    pub id: i64,
    pub uuid: Option<String>,
    pub address: Option<String>,
    pub node_id: Option<i64>,
}

/// What the plan needs to know of the target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetState {
    pub schema: TargetSchema,
    pub nodes: Vec<ExistingNode>,
    pub ports: Vec<ExistingPort>,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(
        "{what} is not an Ironic database: it has no {missing} table (create it with `ironic-dbsync upgrade` first)"
    )]
    NotIronic { what: String, missing: String },
    #[error("{what}: the Ironic schema is empty (no alembic head): run `ironic-dbsync upgrade` first")]
    NoSchema { what: String },
    #[error("{what}: unknown Ironic schema (alembic head {head}; {reason}): bm2ironic writes only to a Juno (head 487deb87cc9d) or a modern Ironic schema")]
    Unknown { what: String, head: String, reason: String },
    #[error("{what}: cannot tell which object versions this Ironic accepts (alembic head {head} is not one bm2ironic knows and the database holds no nodes yet): give --object-version NODE,PORT (e.g. 1.44,1.16 for Ironic 39.0.0)")]
    NoObjectVersion { what: String, head: String },
    #[error("--object-version {0}: expected NODE,PORT such as 1.44,1.16")]
    BadObjectVersion(String),
}

/// Opens the Ironic database for writing (and reading its state).
pub async fn connect(url: &DbUrl) -> Result<Db, TargetError> {
    Ok(Db::connect(url, Access::ReadWrite).await?)
}

async fn strings(db: &Db, sql: &str, bind: Option<&str>) -> Result<Vec<String>, DbError> {
    db.fetch_column(sql, bind.map(Val::from).into_iter().collect()).await
}

async fn columns(db: &Db, table: &str) -> Result<BTreeSet<String>, DbError> {
    Ok(db.column_names(table).await?.into_iter().map(|c| c.to_ascii_lowercase()).collect())
}

/// Parses `--object-version NODE,PORT`.
pub fn parse_object_version(s: &str) -> Result<(String, String), TargetError> {
    let ok = |v: &str| {
        v.split('.').count() == 2 && v.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    };
    match s.split_once(',') {
        Some((n, p)) if ok(n.trim()) && ok(p.trim()) => Ok((n.trim().to_string(), p.trim().to_string())),
        _ => Err(TargetError::BadObjectVersion(s.to_string())),
    }
}

/// Detects the schema from the database itself.
pub async fn detect(db: &Db, object_version: Option<&(String, String)>) -> Result<TargetSchema, TargetError> {
    let what = db.url.describe() + &db.url.database.as_ref().map(|d| format!(", database {d}")).unwrap_or_default();
    let tables: BTreeSet<String> = db.table_names().await?.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    for t in ["alembic_version", "nodes", "ports"] {
        if !tables.contains(t) {
            return Err(TargetError::NotIronic { what, missing: t.into() });
        }
    }
    let heads = strings(db, "SELECT version_num FROM alembic_version", None).await?;
    let Some(head) = heads.first().cloned() else { return Err(TargetError::NoSchema { what }) };
    let node_columns = columns(db, "nodes").await?;
    let port_columns = columns(db, "ports").await?;

    let missing_juno: Vec<&str> = JUNO_NODE_COLUMNS.iter().copied().filter(|c| !node_columns.contains(*c)).collect();
    if !missing_juno.is_empty() {
        return Err(TargetError::Unknown { what, head, reason: format!("nodes lacks {}", missing_juno.join(", ")) });
    }
    let is_modern = MODERN_NODE_MARKERS.iter().all(|c| node_columns.contains(*c))
        && MODERN_PORT_MARKERS.iter().all(|c| port_columns.contains(*c));
    let kind = if head == JUNO_HEAD && !node_columns.contains("version") {
        TargetKind::Juno
    } else if is_modern {
        TargetKind::Modern
    } else {
        return Err(TargetError::Unknown { what, head, reason: "neither the Juno columns nor a modern schema".into() });
    };

    let (mut node_version, mut port_version, mut versions_from) = (None, None, None);
    if kind == TargetKind::Modern {
        if let Some((n, p)) = object_version {
            (node_version, port_version, versions_from) =
                (Some(n.clone()), Some(p.clone()), Some("--object-version".to_string()));
        } else {
            let nv =
                max_version(strings(db, "SELECT DISTINCT version FROM nodes WHERE version IS NOT NULL", None).await?);
            let pv =
                max_version(strings(db, "SELECT DISTINCT version FROM ports WHERE version IS NOT NULL", None).await?);
            let known = KNOWN_MODERN_HEADS.iter().find(|(h, ..)| *h == head);
            match (nv, pv, known) {
                (Some(n), Some(p), _) => {
                    (node_version, port_version, versions_from) = (Some(n), Some(p), Some("existing rows".into()))
                }
                (n, p, Some((_, release, kn, kp))) => {
                    node_version = Some(n.unwrap_or_else(|| kn.to_string()));
                    port_version = Some(p.unwrap_or_else(|| kp.to_string()));
                    versions_from = Some(format!("known head (Ironic {release})"));
                }
                _ => return Err(TargetError::NoObjectVersion { what, head }),
            }
        }
    }
    tracing::info!(url = %db.url.redacted(), ?kind, head = %head, node_version = ?node_version, port_version = ?port_version, "target detected");
    Ok(TargetSchema { kind, schema: head, node_columns, port_columns, node_version, port_version, versions_from })
}

fn max_version(vs: Vec<String>) -> Option<String> {
    let key = |v: &String| -> (u32, u32) {
        let (a, b) = v.split_once('.').unwrap_or((v, "0"));
        (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
    };
    vs.into_iter().max_by_key(key)
}

/// The SELECTs of the target's nodes and of its ports, typed alike on every backend.
fn state_sql(d: Dialect) -> (String, String) {
    let nodes = format!(
        "SELECT {}, {}, {}, {}, {}, {}, {}, {} FROM nodes ORDER BY nodes.id",
        d.column("id", Cast::Int),
        d.cast(Cast::Text, "uuid"),
        d.cast(Cast::Text, "instance_uuid"),
        d.cast(Cast::Text, "provision_state"),
        d.flag_or_false("maintenance"),
        d.cast(Cast::Text, "reservation"),
        d.cast(Cast::Text, "extra"),
        d.column("updated_at", Cast::Time),
    );
    let ports = format!(
        "SELECT {}, {}, {}, {} FROM ports ORDER BY ports.id",
        d.column("id", Cast::Int),
        d.cast(Cast::Text, "uuid"),
        d.cast(Cast::Text, "address"),
        d.column("node_id", Cast::Int),
    );
    (nodes, ports)
}

/// Reads the target's nodes and ports (what the plan checks uuids, instances and MACs against).
pub async fn read_state(db: &Db, schema: TargetSchema) -> Result<TargetState, TargetError> {
    let (node_sql, port_sql) = state_sql(db.dialect());
    let nodes = db
        .fetch_map(&node_sql, vec![], |r| {
            let extra: Option<String> = r.opt_string("extra")?;
            Ok(ExistingNode {
                id: r.get("id")?,
                uuid: r.opt_string("uuid")?,
                instance_uuid: r.opt_string("instance_uuid")?,
                provision_state: r.opt_string("provision_state")?,
                maintenance: r.get::<i64, _>("maintenance")? != 0,
                reservation: r.opt_string("reservation")?,
                extra: extra.and_then(|e| serde_json::from_str(&e).ok()).unwrap_or(serde_json::Value::Null),
                updated_at: r.opt_time("updated_at")?,
                run_finished: None,
            })
        })
        .await?;
    let ports = db
        .fetch_map(&port_sql, vec![], |r| {
            Ok(ExistingPort {
                id: r.get("id")?,
                uuid: r.opt_string("uuid")?,
                address: r.opt_string("address")?,
                node_id: r.get("node_id")?,
            })
        })
        .await?;
    tracing::info!(nodes = nodes.len(), ports = ports.len(), "read target state");
    Ok(TargetState { schema, nodes, ports })
}

impl crate::core::kind::HasKind for TargetError {
    /// A bad `--object-version` is the operator's; the rest (not Ironic, an unknown schema, the
    /// database) is the target's.
    fn kind(&self) -> crate::core::kind::Kind {
        match self {
            TargetError::BadObjectVersion(_) => crate::core::kind::Kind::Usage,
            _ => crate::core::kind::Kind::Runtime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_version_flag() {
        assert_eq!(parse_object_version("1.44,1.16").unwrap(), ("1.44".into(), "1.16".into()));
        assert!(parse_object_version("1.44").is_err());
        assert!(parse_object_version("a.b,1.2").is_err());
    }

    #[test]
    fn highest_version_wins_numerically() {
        assert_eq!(max_version(vec!["1.9".into(), "1.44".into(), "1.41".into()]).as_deref(), Some("1.44"));
    }
}
