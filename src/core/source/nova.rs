//! The Nova database (optional, read only): the instances nova_bm nodes hold (image_ref and sizes
//! for Ironic's instance_info, kernel_id and ramdisk_id for their next boot; deleted or missing ones
//! are conflicts) and the nova-compute services'
//! heartbeats (a baremetal nova-compute still running during the load is a conflict), and in a
//! Juno/Kilo database its flavors (a free node no flavor can be scheduled onto is a conflict,
//! `no-matching-flavor`: docs/conflicts.md).

use std::collections::HashMap;

use chrono::NaiveDateTime;
use serde::Serialize;

use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Cast, Db, DbError, Dialect};
use crate::core::settings::heartbeat::Heartbeats;

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
    /// when the service first started: Nova's heartbeat until its first report
    pub created_at: Option<NaiveDateTime>,
    pub disabled: bool,
}

/// A live flavor of a Juno/Kilo Nova database (`instance_types`) and its live extra specs: what
/// the scheduler's Exact* filters and `ComputeCapabilitiesFilter` compare a node with. A size that
/// is NULL (or absent from a trimmed copy's table) is None: such a flavor fits no node.
#[derive(Debug, Clone, Serialize)]
pub struct NovaFlavor {
    pub id: i64,
    pub name: String,
    pub vcpus: Option<i64>,
    pub memory_mb: Option<i64>,
    pub root_gb: Option<i64>,
    pub ephemeral_gb: Option<i64>,
    /// MB
    pub swap: Option<i64>,
    pub disabled: bool,
    pub extra_specs: Vec<(String, String)>,
}

/// What the plan needs from Nova.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NovaFacts {
    pub instances: HashMap<String, NovaInstance>,
    pub services: Vec<NovaService>,
    /// The flavors, when this is a Juno/Kilo database (it has `instance_types` and
    /// `instance_type_extra_specs`); None for a modern cell database, whose flavors live in
    /// nova_api.
    pub flavors: Option<Vec<NovaFlavor>>,
    /// The database server's clock (UTC), against which heartbeats are judged.
    pub now: Option<NaiveDateTime>,
    /// When Nova counts a service down: Nova's defaults, or the compute host's nova.conf
    /// (`--nova-conf`).
    pub heartbeats: Heartbeats,
}

impl NovaFacts {
    /// A nova-compute service on `host` that Nova counts up (its heartbeat at most
    /// `service_down_time` old; one from the future, a skewed clock, counts too), or whose state
    /// the heartbeats cannot show; with what says so, for a message.
    pub fn running_compute(&self, host: &str) -> Option<(&NovaService, String)> {
        let now = self.now?;
        let h = &self.heartbeats;
        self.services.iter().filter(|s| s.binary == "nova-compute" && s.host == host).find_map(|s| {
            // as Nova: `updated_at or created_at` (a service that has not reported yet)
            let at = s.updated_at.or(s.created_at);
            let beat = match (s.updated_at, at) {
                (Some(t), _) => format!("sent a heartbeat at {t}"),
                (None, Some(t)) => format!("has sent no heartbeat since it started at {t}"),
                (None, None) => "has sent no heartbeat".into(),
            };
            if let Some(why) = &h.unknowable {
                return Some((s, format!("may be running ({beat}; {why})")));
            }
            let age = now - at?;
            (age.num_milliseconds() <= h.down_after * 1000).then(|| {
                let ago = age.num_seconds();
                let ago = if ago < 0 { format!("{}s in the future", -ago) } else { format!("{ago}s ago") };
                (s, format!("{beat}, {ago} (Nova counts it down after {}s: {})", h.down_after, h.from))
            })
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

/// The live services: host, binary, heartbeat, disabled (0/1), and `created_at` when the table
/// has it (Nova's has; a trimmed copy may not).
fn services_sql(d: Dialect, created: bool) -> String {
    let created = if created { format!(", {}", d.column("created_at", Cast::Time)) } else { String::new() };
    format!(
        "SELECT {}, {} AS bin, {}, {}{created} FROM services WHERE deleted = 0",
        d.cast(Cast::Text, "host"),
        d.cast(Cast::Text, &d.quote("binary")),
        d.column("updated_at", Cast::Time),
        d.flag_or_false("disabled"),
    )
}

/// The live flavors and their live extra specs (Juno/Kilo tables).
async fn read_flavors(db: &Db) -> Result<Vec<NovaFlavor>, DbError> {
    let d = db.dialect();
    let have: Vec<String> =
        db.column_names("instance_types").await?.into_iter().map(|c| c.to_ascii_lowercase()).collect();
    // an absent column: NULL (the flavor fits nothing), or Nova's own default for the two that
    // Nova added later and defaults to 0
    let int = |c: &str| {
        if have.iter().any(|x| x == c) {
            d.column(c, Cast::Int)
        } else {
            let absent = if c == "ephemeral_gb" || c == "swap" { "0" } else { "NULL" };
            format!("{} AS {c}", d.cast(Cast::Int, absent))
        }
    };
    let disabled = if have.iter().any(|x| x == "disabled") {
        d.flag_or_false("disabled")
    } else {
        format!("{} AS disabled", d.cast(Cast::Flag, "0"))
    };
    let sql = format!(
        "SELECT {}, {} AS name, {}, {}, {}, {}, {}, {disabled} FROM instance_types WHERE deleted = 0 ORDER BY id",
        d.column("id", Cast::Int),
        d.cast(Cast::Text, "name"),
        int("vcpus"),
        int("memory_mb"),
        int("root_gb"),
        int("ephemeral_gb"),
        int("swap"),
    );
    let mut flavors = db
        .fetch_map(&sql, vec![], |r| {
            Ok(NovaFlavor {
                id: r.get("id")?,
                name: r.opt_string("name")?.unwrap_or_default(),
                vcpus: r.opt_i64("vcpus")?,
                memory_mb: r.opt_i64("memory_mb")?,
                root_gb: r.opt_i64("root_gb")?,
                ephemeral_gb: r.opt_i64("ephemeral_gb")?,
                swap: r.opt_i64("swap")?,
                disabled: r.get::<i64, _>("disabled")? != 0,
                extra_specs: Vec::new(),
            })
        })
        .await?;
    let key = d.quote("key");
    let sql = format!(
        "SELECT {} AS fid, {} AS k, {} AS v FROM instance_type_extra_specs WHERE deleted = 0 ORDER BY id",
        d.cast(Cast::Int, "instance_type_id"),
        d.cast(Cast::Text, &key),
        d.cast(Cast::Text, "value"),
    );
    let specs = db
        .fetch_map(&sql, vec![], |r| {
            Ok((r.opt_i64("fid")?, r.opt_string("k")?.unwrap_or_default(), r.opt_string("v")?.unwrap_or_default()))
        })
        .await?;
    let at: HashMap<i64, usize> = flavors.iter().enumerate().map(|(i, f)| (f.id, i)).collect();
    for (fid, k, v) in specs {
        if let Some(&i) = fid.and_then(|id| at.get(&id)) {
            flavors[i].extra_specs.push((k, v));
        }
    }
    Ok(flavors)
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
    let created = db.column_names("services").await?.iter().any(|c| c.eq_ignore_ascii_case("created_at"));
    let (svc_sql, now_sql) = (services_sql(d, created), format!("SELECT {}", d.utc_now()));
    let services = db
        .fetch_map(&svc_sql, vec![], |r| {
            Ok(NovaService {
                host: r.opt_string("host")?.unwrap_or_default(),
                binary: r.opt_string("bin")?.unwrap_or_default(),
                updated_at: r.opt_time("updated_at")?,
                created_at: if created { r.opt_time("created_at")? } else { None },
                disabled: r.get::<i64, _>("disabled")? != 0,
            })
        })
        .await?;
    let now: NaiveDateTime = db.fetch_scalar(&now_sql, vec![]).await?;
    facts.services = services;
    facts.now = Some(now);
    if ["instance_types", "instance_type_extra_specs"].iter().all(|t| tables.iter().any(|x| x == t)) {
        facts.flavors = Some(read_flavors(db).await?);
    }
    tracing::info!(url = %db.url.redacted(), instances = facts.instances.len(), services = facts.services.len(),
        flavors = facts.flavors.as_ref().map_or(0, Vec::len), "read nova facts");
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn facts(age_ms: i64, heartbeats: Heartbeats) -> NovaFacts {
        let now = chrono::NaiveDate::from_ymd_opt(2014, 10, 16).and_then(|d| d.and_hms_opt(12, 0, 0)).unwrap();
        let svc = |host: &str, binary: &str| NovaService {
            host: host.into(),
            binary: binary.into(),
            updated_at: Some(now - chrono::Duration::milliseconds(age_ms)),
            created_at: None,
            disabled: false,
        };
        NovaFacts {
            services: vec![svc("bm-compute-1", "nova-conductor"), svc("bm-compute-1", "nova-compute")],
            now: Some(now),
            heartbeats,
            ..Default::default()
        }
    }

    #[test]
    fn a_heartbeat_is_judged_as_nova_judges_it() {
        // nova/servicegroup/drivers/db.py: up while abs(elapsed) <= service_down_time
        let up = |age_ms: i64, h: Heartbeats| facts(age_ms, h).running_compute("bm-compute-1").map(|(_, w)| w);
        let why = up(60_000, Heartbeats::default()).expect("60 s old: up");
        assert!(why.contains("60s ago") && why.contains("down after 60s"), "{why}");
        assert_eq!(up(60_001, Heartbeats::default()), None);
        // one from the future (a skewed clock) counts as running: the safe side
        assert!(up(-300_000, Heartbeats::default()).unwrap().contains("300s in the future"));
        assert_eq!(facts(5_000, Heartbeats::default()).running_compute("bm-compute-2").map(|_| ()), None);
        // the compute host's nova.conf: longer and shorter than Nova's default
        let conf = |sdt| Heartbeats::from_conf(Path::new("nova.conf"), Some(sdt), None, None);
        assert!(up(170_000, conf(180)).unwrap().contains("service_down_time = 180 in nova.conf"));
        assert_eq!(up(25_000, conf(20)), None);
        assert!(up(19_000, conf(20)).is_some());
    }

    #[test]
    fn heartbeats_that_cannot_tell_name_every_nova_compute() {
        let mc = Heartbeats::from_conf(Path::new("nova.conf"), None, None, Some("mc"));
        let (s, why) = facts(3_600_000, mc).running_compute("bm-compute-1").map(|(s, w)| (s.clone(), w)).unwrap();
        assert_eq!(s.binary, "nova-compute");
        assert!(why.starts_with("may be running") && why.contains("servicegroup_driver = mc"), "{why}");
    }

    #[test]
    fn a_service_that_has_not_reported_yet_is_judged_by_its_start() {
        let mut f = facts(0, Heartbeats::default());
        let now = f.now.unwrap();
        f.services[1].updated_at = None;
        f.services[1].created_at = Some(now - chrono::Duration::seconds(5));
        let why = f.running_compute("bm-compute-1").map(|(_, w)| w).expect("5 s since its start: up");
        assert!(why.starts_with("has sent no heartbeat since it started at") && why.contains(", 5s ago"), "{why}");
        f.services[1].created_at = Some(now - chrono::Duration::seconds(61));
        assert_eq!(f.running_compute("bm-compute-1").map(|_| ()), None);
        f.services[1].created_at = None;
        assert_eq!(f.running_compute("bm-compute-1").map(|_| ()), None);
    }
}
