//! The Nova database (optional, read only): the instances nova_bm nodes hold (image_ref and sizes
//! for Ironic's instance_info, kernel_id and ramdisk_id for their next boot; deleted or missing ones
//! are conflicts) and the nova-compute services'
//! heartbeats (a baremetal nova-compute still running during the load is a conflict).

use std::collections::HashMap;

use chrono::NaiveDateTime;
use serde::Serialize;

use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Cast, Db, DbError, Dialect};

/// nova's default `service_down_time`: a service whose heartbeat is older is down.
pub const SERVICE_DOWN_SECONDS: i64 = 60;

#[derive(Debug, Clone, Serialize)]
pub struct NovaInstance {
    pub uuid: String,
    pub image_ref: Option<String>,
    pub root_gb: Option<i64>,
    pub ephemeral_gb: Option<i64>,
    pub node: Option<String>,
    pub host: Option<String>,
    pub vm_state: Option<String>,
    /// nova soft-deletes with `deleted = id`
    pub deleted: bool,
    /// the instance's own kernel and ramdisk (Glance ids) that nova baremetal's PXE config boots
    pub kernel_id: Option<String>,
    pub ramdisk_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NovaService {
    pub host: String,
    pub binary: String,
    pub updated_at: Option<NaiveDateTime>,
    pub disabled: bool,
}

/// What the plan needs from Nova.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NovaFacts {
    pub instances: HashMap<String, NovaInstance>,
    pub services: Vec<NovaService>,
    /// The database server's clock (UTC), against which heartbeats are judged.
    pub now: Option<NaiveDateTime>,
}

impl NovaFacts {
    /// nova-compute services on `host` whose heartbeat is recent.
    pub fn running_compute(&self, host: &str) -> Option<&NovaService> {
        let now = self.now?;
        self.services.iter().find(|s| {
            s.binary == "nova-compute"
                && s.host == host
                && s.updated_at.is_some_and(|t| (now - t).num_seconds() < SERVICE_DOWN_SECONDS)
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NovaError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{what} does not look like Nova's database: it has no {missing} table (point --nova-db at nova.conf [database] connection)")]
    NotNova { what: String, missing: String },
}

/// Opens the Nova DB read-only and reads the given instances and every service.
pub async fn read_facts(url: &DbUrl, instance_uuids: &[String]) -> Result<NovaFacts, NovaError> {
    let db = Db::connect(url, Access::ReadOnly).await?;
    let r = read_from(&db, instance_uuids).await;
    db.close().await;
    r
}

/// The instances of `marks` (an IN list), sizes and `deleted` as BIGINT; `kernel_id` and
/// `ramdisk_id` when the table has them (Nova's has; a trimmed copy may not: NULL then).
fn instances_sql(d: Dialect, marks: &str, boot_ids: bool) -> String {
    let ids = if boot_ids {
        format!("{} AS kernel_id, {} AS ramdisk_id", d.cast(Cast::Text, "kernel_id"), d.cast(Cast::Text, "ramdisk_id"))
    } else {
        format!("{} AS kernel_id, {} AS ramdisk_id", d.cast(Cast::Text, "NULL"), d.cast(Cast::Text, "NULL"))
    };
    format!(
        "SELECT uuid, image_ref, {}, {}, node, host, vm_state, {}, {ids} FROM instances WHERE uuid IN {marks}",
        d.column("root_gb", Cast::Int),
        d.column("ephemeral_gb", Cast::Int),
        d.column("deleted", Cast::Int),
    )
}

/// The live services: host, binary, heartbeat, disabled (0/1).
fn services_sql(d: Dialect) -> String {
    format!(
        "SELECT {}, {} AS bin, {}, {} FROM services WHERE deleted = 0",
        d.cast(Cast::Text, "host"),
        d.cast(Cast::Text, &d.quote("binary")),
        d.column("updated_at", Cast::Time),
        d.flag_or_false("disabled"),
    )
}

pub async fn read_from(db: &Db, instance_uuids: &[String]) -> Result<NovaFacts, NovaError> {
    let what = db.url.describe();
    let tables: Vec<String> = db.table_names().await?.into_iter().map(|t| t.to_ascii_lowercase()).collect();
    for t in ["instances", "services"] {
        if !tables.iter().any(|x| x == t) {
            return Err(NovaError::NotNova { what, missing: t.into() });
        }
    }
    let d = db.dialect();
    let columns: Vec<String> =
        db.column_names("instances").await?.into_iter().map(|c| c.to_ascii_lowercase()).collect();
    let boot_ids = ["kernel_id", "ramdisk_id"].iter().all(|c| columns.iter().any(|x| x == c));
    let mut facts = NovaFacts::default();
    let rows = db
        .fetch_map_in(
            instance_uuids,
            |m| instances_sql(d, m, boot_ids),
            |r| {
                Ok(NovaInstance {
                    uuid: r.string("uuid")?,
                    image_ref: r.opt_string("image_ref")?,
                    root_gb: r.get("root_gb")?,
                    ephemeral_gb: r.get("ephemeral_gb")?,
                    node: r.opt_string("node")?,
                    host: r.opt_string("host")?,
                    vm_state: r.opt_string("vm_state")?,
                    deleted: r.get::<Option<i64>, _>("deleted")?.unwrap_or(0) != 0,
                    kernel_id: r.opt_string("kernel_id")?.filter(|s| !s.trim().is_empty()),
                    ramdisk_id: r.opt_string("ramdisk_id")?.filter(|s| !s.trim().is_empty()),
                })
            },
        )
        .await?;
    for i in rows {
        // a live row wins over soft-deleted duplicates of the same uuid
        match facts.instances.get(&i.uuid) {
            Some(existing) if !existing.deleted => {}
            _ => {
                facts.instances.insert(i.uuid.clone(), i);
            }
        }
    }
    let (svc_sql, now_sql) = (services_sql(d), format!("SELECT {}", d.utc_now()));
    let services = db
        .fetch_map(&svc_sql, vec![], |r| {
            Ok(NovaService {
                host: r.opt_string("host")?.unwrap_or_default(),
                binary: r.opt_string("bin")?.unwrap_or_default(),
                updated_at: r.opt_time("updated_at")?,
                disabled: r.get::<i64, _>("disabled")? != 0,
            })
        })
        .await?;
    let now: NaiveDateTime = db.fetch_scalar(&now_sql, vec![]).await?;
    facts.services = services;
    facts.now = Some(now);
    tracing::info!(url = %db.url.redacted(), instances = facts.instances.len(), services = facts.services.len(), "read nova facts");
    Ok(facts)
}
